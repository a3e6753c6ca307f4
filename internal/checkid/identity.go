package checkid

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"path"
	"slices"
	"sort"
	"strings"
)

// SchemaVersion versions the way identities are computed. Bump it whenever a
// digest's input changes, so old evidence is never matched by accident.
const SchemaVersion = 1

// Definition is what a check runs.
type Definition struct {
	Argv      []string `json:"argv"`
	Cwd       string   `json:"cwd,omitempty"`
	Effects   []string `json:"effects,omitempty"` // declared effects, e.g. "workspace_write", "network"
	TimeoutMs int      `json:"timeout_ms"`
}

// Digest returns "sha256:<hex>" over the canonical form of d: argv as is, cwd
// cleaned ("" and "." are the same), effects sorted and de-duplicated (their
// order never matters) and the timeout.
func (d Definition) Digest() string {
	h := newDigester("checkid/definition")
	h.strings(d.Argv)
	h.str(canonicalCwd(d.Cwd))
	h.strings(canonicalEffects(d.Effects))
	h.u64(uint64(int64(d.TimeoutMs)))
	return h.sum()
}

// canonicalCwd cleans a relative working directory; "" and "." both mean
// the repository root and become "".
func canonicalCwd(cwd string) string {
	if cwd == "" {
		return ""
	}
	c := path.Clean(cwd)
	if c == "." {
		return ""
	}
	return c
}

// canonicalEffects returns the effects sorted and de-duplicated (never nil).
func canonicalEffects(effects []string) []string {
	out := slices.Clone(effects)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Identity is the semantic identity of a check, with the digests of its
// parts so a stored identity can be compared part by part.
type Identity struct {
	Digest     string `json:"digest"`
	Revision   string `json:"revision"`
	Definition string `json:"definition"`
	Env        string `json:"env"`
	Schema     int    `json:"schema"`
}

// Compute combines the parts into an Identity. rev.Digest and env.Digest are
// used as given (ContentRevision and Fingerprint fill them in); when one is
// empty it is computed from the part's fields.
func Compute(rev Revision, def Definition, env Env) Identity {
	id := Identity{
		Revision:   rev.Digest,
		Definition: def.Digest(),
		Env:        env.Digest,
		Schema:     SchemaVersion,
	}
	if id.Revision == "" {
		id.Revision = rev.ComputeDigest()
	}
	if id.Env == "" {
		id.Env = env.ComputeDigest()
	}
	h := newDigester("checkid/identity")
	h.u64(SchemaVersion)
	h.str(id.Revision)
	h.str(id.Definition)
	h.str(id.Env)
	id.Digest = h.sum()
	return id
}

// ComputeDigest returns the digest of r's Tree and Dirty fields; it is what
// ContentRevision stores in r.Digest.
func (r Revision) ComputeDigest() string {
	h := newDigester("checkid/revision")
	h.str(r.Tree)
	h.sortedMap(r.Dirty)
	return h.sum()
}

// ComputeDigest returns the digest of e's Vars and Tools fields; it is what
// Fingerprint stores in e.Digest.
func (e Env) ComputeDigest() string {
	h := newDigester("checkid/env")
	h.sortedMap(e.Vars)
	h.sortedMap(e.Tools)
	return h.sum()
}

// digester feeds an unambiguous, length-prefixed encoding into sha256, so
// no two different inputs share an encoding (unlike JSON, which rewrites
// invalid UTF-8).
type digester struct {
	h   hash.Hash
	buf [8]byte
}

func newDigester(domain string) *digester {
	d := &digester{h: sha256.New()}
	d.str(domain)
	d.u64(SchemaVersion)
	return d
}

func (d *digester) u64(v uint64) {
	binary.BigEndian.PutUint64(d.buf[:], v)
	d.h.Write(d.buf[:])
}

func (d *digester) str(s string) {
	d.u64(uint64(len(s)))
	d.h.Write([]byte(s))
}

func (d *digester) strings(ss []string) {
	d.u64(uint64(len(ss)))
	for _, s := range ss {
		d.str(s)
	}
}

func (d *digester) sortedMap(m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	d.u64(uint64(len(keys)))
	for _, k := range keys {
		d.str(k)
		d.str(m[k])
	}
}

func (d *digester) sum() string {
	var b [sha256.Size]byte
	return "sha256:" + hex.EncodeToString(d.h.Sum(b[:0]))
}

// isHex reports whether s is a non-empty lower-case hex string.
func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isOID reports whether s looks like a SHA-1 or SHA-256 object id.
func isOID(s string) bool { return (len(s) == 40 || len(s) == 64) && isHex(s) }

// isZeroOID reports whether s is the all-zero object id git uses for "none".
func isZeroOID(s string) bool { return s == "" || strings.Trim(s, "0") == "" }
