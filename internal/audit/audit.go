package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/messages"
)

// Kind names what an entry records. It is an alias of messages.AuditKind, so
// the constants below can be used in messages directly.
type Kind = messages.AuditKind

// The known kinds. Append rejects any other.
const (
	// KindMutation records a write to a work tree or the index (patch,
	// stage, commit, ...) and its outcome.
	KindMutation Kind = "mutation"
	// KindRejection records a request refused by routing or policy
	// (ROUTE_REJECTED, POLICY_DENIED, PATH_OUTSIDE_ROOT, ...).
	KindRejection Kind = "rejection"
	// KindAsk records a request that needs a human approval before it runs.
	KindAsk Kind = "ask"
	// KindApproval records a human approving an asked request.
	KindApproval Kind = "approval"
	// KindDenial records a human denying an asked request.
	KindDenial Kind = "denial"
	// KindPolicyLoad records a policy (re)load, with its digest.
	KindPolicyLoad Kind = "policy_load"
	// KindLeaseLost records a mutation lease that expired or was taken over
	// while its holder still worked.
	KindLeaseLost Kind = "lease_lost"
	// KindJob records a durable job's start, end or cancellation.
	KindJob Kind = "job"
	// KindCheck records a check run (tests, lint) and its result.
	KindCheck Kind = "check"
	// KindEscalation records a run's explicit tier change (run_escalate):
	// details from and to, the reason.
	KindEscalation Kind = "escalation"
	// KindKeyRotation records a rotation of the audit key: details
	// old_key_id and handover (the HMAC of the previous head under the old
	// key). It is sealed with the new key and written by the audit actor
	// only.
	KindKeyRotation Kind = "key_rotation"
	// KindAuthority records a change to what agents may be granted: an
	// allowed area a person added or removed.
	KindAuthority Kind = "authority"
)

// Kinds returns every known kind, in declaration order.
func Kinds() []Kind {
	return []Kind{KindMutation, KindRejection, KindAsk, KindApproval, KindDenial,
		KindPolicyLoad, KindLeaseLost, KindJob, KindCheck, KindEscalation, KindKeyRotation, KindAuthority}
}

// KnownKind reports whether k is one of the Kind constants.
func KnownKind(k Kind) bool {
	switch k {
	case KindMutation, KindRejection, KindAsk, KindApproval, KindDenial,
		KindPolicyLoad, KindLeaseLost, KindJob, KindCheck, KindEscalation, KindKeyRotation, KindAuthority:
		return true
	}
	return false
}

// Genesis is the PrevHash of entry 1: the hash of nothing, spelled like a
// hash so that every entry's PrevHash has the same shape and an empty
// PrevHash is always a break.
const Genesis = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// hashDomain prefixes the hashed bytes so that a change of the canonical
// form can be versioned.
const hashDomain = "harnessd/audit/v1\x00"

// Entry is one audit record. It has exactly the layout of
// messages.AuditEntry (convert with Entry(m) and messages.AuditEntry(e));
// the JSON form is both the stored and the hashed form.
type Entry messages.AuditEntry

// ComputeHash returns "sha256:<hex>" over the canonical form of e: the hash
// domain followed by e's JSON encoding with Hash set to "". The result does
// not depend on e.Hash.
func (e Entry) ComputeHash() string {
	sum := sha256.Sum256(e.canonical())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Redact returns e with Reason and every Details value run through
// redact.Default(). Paths and the identifying fields are left alone: they
// come from harnessd, not free text. The caller's Details map is not
// modified.
func Redact(e Entry) Entry {
	r := redact.Default()
	e.Reason, _ = r.String(e.Reason)
	if len(e.Details) > 0 {
		d := make(map[string]string, len(e.Details))
		for k, v := range e.Details {
			d[k], _ = r.String(v)
		}
		e.Details = d
	}
	return e
}

// Size limits applied by Prepare. Longer values are cut at a UTF-8 boundary
// and end in Truncated; extra Paths and Details are dropped and counted in
// Details["paths_dropped"] and Details["details_dropped"].
const (
	MaxReason     = 4096 // bytes of Reason
	MaxField      = 512  // bytes of every other string field and of a Details value
	MaxDetailKey  = 64   // bytes of a Details key
	MaxDetails    = 32   // Details entries
	MaxPaths      = 64   // Paths entries
	Truncated     = "…[truncated]"
	droppedPaths  = "paths_dropped"
	droppedDetail = "details_dropped"
)

// Prepare turns a caller's entry into one ready for Seal: it rejects an
// unknown Kind, clears the chain fields, stamps Time with now when it is
// zero (always UTC), redacts (see Redact), replaces invalid UTF-8 and
// enforces the size limits, so that a stored entry is bounded and its
// stored form hashes like the in-memory one.
func Prepare(e Entry, now time.Time) (Entry, error) {
	if e.Kind == "" {
		return Entry{}, errs.New(errs.InvalidArgument, "audit: entry has no kind")
	}
	if !KnownKind(e.Kind) {
		return Entry{}, errs.New(errs.InvalidArgument, "audit: unknown entry kind %q", clip(string(e.Kind), 64)).
			With("kind", clip(string(e.Kind), 64))
	}
	if e.Kind == KindKeyRotation {
		return Entry{}, errs.New(errs.InvalidArgument, "audit: key_rotation entries are written by the audit actor only")
	}
	e.Seq, e.PrevHash, e.Hash, e.KeyID = 0, "", "", ""
	if e.Time.IsZero() {
		e.Time = now
	}
	e.Time = e.Time.UTC()
	// Redact first: cutting first could leave half a secret the rules no
	// longer recognise.
	e = Redact(e)
	e.Reason = clip(e.Reason, MaxReason)
	for _, f := range []*string{&e.Operation, &e.RepoID, &e.RequestID, &e.Actor, &e.Outcome,
		&e.Code, &e.RuleID, &e.InputHash, &e.PolicyDigest} {
		*f = clip(*f, MaxField)
	}
	var dropped map[string]string
	if len(e.Paths) > 0 {
		n := min(len(e.Paths), MaxPaths)
		paths := make([]string, n)
		for i := range n {
			paths[i] = clip(e.Paths[i], MaxField)
		}
		if len(e.Paths) > n {
			dropped = map[string]string{droppedPaths: strconv.Itoa(len(e.Paths) - n)}
		}
		e.Paths = paths
	}
	if len(e.Details) > 0 || dropped != nil {
		keys := slices.Sorted(maps.Keys(e.Details))
		d := make(map[string]string, min(len(keys), MaxDetails)+2)
		for i, k := range keys {
			if i == MaxDetails {
				d[droppedDetail] = strconv.Itoa(len(keys) - MaxDetails)
				break
			}
			d[clip(k, MaxDetailKey)] = clip(e.Details[k], MaxField)
		}
		maps.Copy(d, dropped)
		e.Details = d
	}
	return e, nil
}

// Seal chains e after prev (the zero Entry for the first entry) without a
// key: it sets Seq = prev.Seq+1, PrevHash = prev.Hash (Genesis when
// prev.Seq is 0), normalises Time to UTC, clears KeyID and sets Hash to the
// plain sha256. e is expected to come from Prepare. Harnessd seals with a
// key (SealWith); Seal is the form of entries written before keys existed.
func Seal(prev Entry, e Entry) Entry {
	e = link(prev, e)
	e.KeyID = ""
	e.Hash = e.ComputeHash()
	return e
}

// link sets e's chain fields after prev, and its Time to UTC.
func link(prev Entry, e Entry) Entry {
	e.Seq = prev.Seq + 1
	e.PrevHash = prev.Hash
	if prev.Seq == 0 {
		e.PrevHash = Genesis
	}
	e.Time = e.Time.UTC()
	return e
}

// clip cuts s to at most n bytes at a UTF-8 boundary, ending in Truncated,
// and replaces invalid UTF-8 with U+FFFD (which encoding/json would do on
// store anyway).
func clip(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	cut := n - len(Truncated)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + Truncated
}
