package gitindex

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrCorrupt is the cause of every Parse error: the bytes are not an index
// git could have written (or one this package does not read).
var ErrCorrupt = errors.New("gitindex: unreadable git index")

// Index is a decoded .git/index.
type Index struct {
	Version    int      // 2, 3 or 4
	HashSize   int      // 20 (sha1) or 32 (sha256)
	Entries    []Entry  // in index order (path bytes, then stage)
	Extensions []string // signatures present, e.g. "TREE", "REUC", "link", "UNTR", "sdir", "FSMN", "EOIE", "IEOT"
	Checksum   []byte
	// Mtime is the index file's modification time, which Parse cannot
	// know: ReadFile sets it. When it is set, Refresh trusts an entry whose
	// stat data matches the file exactly and that is older than the index
	// (git's racy-git rule) without hashing the file; when it is zero,
	// Refresh hashes every file it checks. Both are exact.
	Mtime time.Time
}

// Entry is one index entry. The stat fields are git's 32-bit on-disk
// values. A live view keeps one per tracked file (100,000 of them in a
// big checkout), so the fields are ordered to pack: 88 bytes on 64-bit
// platforms (pinned by TestEntrySize), the path and object id pointing
// into two arenas shared by every entry of the index.
type Entry struct {
	Path string
	OID  []byte
	Mode uint32

	CtimeSec, CtimeNsec, MtimeSec, MtimeNsec, Dev, Ino, UID, GID, Size uint32

	Stage        uint8 // 0 (merged) to 3
	AssumeValid  bool
	SkipWorktree bool
	IntentToAdd  bool
}

// Entry modes (the file type bits git writes).
const (
	ModeRegular    = 0o100644
	ModeExecutable = 0o100755
	ModeSymlink    = 0o120000
	ModeGitlink    = 0o160000
)

// On-disk flags.
const (
	flagAssumeValid  = 0x8000
	flagExtended     = 0x4000
	flagStageShift   = 12
	flagNameMask     = 0xfff
	xflagSkipWork    = 0x4000
	xflagIntentToAdd = 0x2000
	xflagKnown       = xflagSkipWork | xflagIntentToAdd
)

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Parse decodes index file b whose object ids have hashSize bytes (20 for
// SHA-1, 32 for SHA-256). It verifies the trailing checksum (an all-zero
// checksum, written with index.skipHash, is accepted), the entry order and
// every path (relative, slash-separated, no "", ".", ".." or ".git"
// component; for a split or sparse index, whose entries are not all
// paths, these rules are not enforced and Entries is only good for
// Eligible to refuse it), and it never allocates more than a small multiple of len(b),
// whatever the counts in b say. Errors wrap ErrCorrupt.
func Parse(b []byte, hashSize int) (*Index, error) {
	if hashSize != sha1.Size && hashSize != sha256.Size {
		return nil, corrupt("hash size %d", hashSize)
	}
	if len(b) < 12+hashSize || string(b[:4]) != "DIRC" {
		return nil, corrupt("no index header")
	}
	body, sum := b[:len(b)-hashSize], b[len(b)-hashSize:]
	if !allZero(sum) && !bytes.Equal(hashOf(hashSize, body), sum) {
		return nil, corrupt("checksum mismatch")
	}
	ver := binary.BigEndian.Uint32(b[4:8])
	if ver < 2 || ver > 4 {
		return nil, corrupt("version %d", ver)
	}
	n := uint64(binary.BigEndian.Uint32(b[8:12]))
	fixed := 40 + hashSize + 2
	// Every entry takes at least fixed+2 bytes (v4: a varint and a NUL;
	// v2, v3: one name byte and one NUL), which bounds n by len(b).
	if n > uint64(len(body)-12)/uint64(fixed+2) {
		return nil, corrupt("%d entries do not fit in %d bytes", n, len(b))
	}
	ix := &Index{Version: int(ver), HashSize: hashSize, Entries: make([]Entry, n), Checksum: append([]byte(nil), sum...)}
	oids := make([]byte, int(n)*hashSize)
	names := make([]byte, 0, min(len(body), int(n)*32))
	maxNames := 8*len(body) + 1<<20 // v4 prefix compression: bounded expansion
	ends := make([]int, n)
	// A split index (entries named by the shared index) and a sparse index
	// (directory entries) break the entry rules; their errors count only
	// when no such extension explains them, and Eligible refuses both.
	var softErr error
	soft := func(err error) {
		if softErr == nil {
			softErr = err
		}
	}
	off := 12
	var prev []byte // v4: the previous path
	for i := range ix.Entries {
		start := off
		if off+fixed > len(body) {
			return nil, corrupt("entry %d truncated", i)
		}
		e := &ix.Entries[i]
		u := func(k int) uint32 { return binary.BigEndian.Uint32(b[off+4*k : off+4*k+4]) }
		e.CtimeSec, e.CtimeNsec, e.MtimeSec, e.MtimeNsec = u(0), u(1), u(2), u(3)
		e.Dev, e.Ino, e.Mode, e.UID, e.GID, e.Size = u(4), u(5), u(6), u(7), u(8), u(9)
		oid := oids[i*hashSize : (i+1)*hashSize : (i+1)*hashSize]
		copy(oid, b[off+40:off+40+hashSize])
		e.OID = oid
		flags := binary.BigEndian.Uint16(b[off+fixed-2 : off+fixed])
		off += fixed
		e.AssumeValid = flags&flagAssumeValid != 0
		e.Stage = uint8(flags>>flagStageShift) & 3
		if flags&flagExtended != 0 {
			if ver < 3 || off+2 > len(body) {
				return nil, corrupt("entry %d: extended flags in version %d", i, ver)
			}
			x := binary.BigEndian.Uint16(b[off : off+2])
			if x&^xflagKnown != 0 {
				return nil, corrupt("entry %d: unknown extended flags %#x", i, x)
			}
			e.SkipWorktree = x&xflagSkipWork != 0
			e.IntentToAdd = x&xflagIntentToAdd != 0
			off += 2
		}
		if !validMode(e.Mode) {
			soft(corrupt("entry %d: mode %o", i, e.Mode))
		}
		nameLen := int(flags & flagNameMask)
		var name []byte
		if ver == 4 {
			strip, k := varint(body[off:])
			if k <= 0 || strip > uint64(len(prev)) {
				return nil, corrupt("entry %d: bad prefix length", i)
			}
			off += k
			end := bytes.IndexByte(body[off:], 0)
			if end < 0 {
				return nil, corrupt("entry %d: unterminated path", i)
			}
			keep := len(prev) - int(strip)
			if len(names)+keep+end > maxNames || keep+end > maxPath {
				return nil, corrupt("entry %d: path too long", i)
			}
			names = append(names, prev[:keep]...)
			names = append(names, body[off:off+end]...)
			off += end + 1
		} else {
			end := bytes.IndexByte(body[off:], 0)
			if end < 0 {
				return nil, corrupt("entry %d: unterminated path", i)
			}
			if end > maxPath {
				return nil, corrupt("entry %d: path too long", i)
			}
			names = append(names, body[off:off+end]...)
			off = start + (off+end-start+8)&^7 // 1 to 8 NULs pad the entry to 8 bytes
			if off > len(body) {
				return nil, corrupt("entry %d: padding truncated", i)
			}
		}
		s := 0
		if i > 0 {
			s = ends[i-1]
		}
		ends[i] = len(names)
		// name stays valid when a later append moves names: the old array
		// is kept while referenced.
		name = names[s:ends[i]]
		if nameLen != flagNameMask && nameLen != len(name) {
			return nil, corrupt("entry %d: name length %d, flags say %d", i, len(name), nameLen)
		}
		if nameLen == flagNameMask && len(name) < flagNameMask {
			return nil, corrupt("entry %d: name length %d, flags say at least %d", i, len(name), flagNameMask)
		}
		if err := checkPath(name); err != nil {
			soft(corrupt("entry %d: %v", i, err))
		}
		prev = name
	}
	all := string(names)
	for i := range ix.Entries {
		s := 0
		if i > 0 {
			s = ends[i-1]
		}
		ix.Entries[i].Path = all[s:ends[i]]
		if i > 0 {
			p, q := &ix.Entries[i-1], &ix.Entries[i]
			if c := strings.Compare(p.Path, q.Path); c > 0 || (c == 0 && (p.Stage >= q.Stage || p.Stage == 0)) {
				soft(corrupt("entries out of order at %q", q.Path))
			}
		}
	}
	for off < len(body) {
		if off+8 > len(body) {
			return nil, corrupt("extension header truncated")
		}
		sig := string(body[off : off+4])
		size := uint64(binary.BigEndian.Uint32(body[off+4 : off+8]))
		if size > uint64(len(body)-off-8) {
			return nil, corrupt("extension %q truncated", sig)
		}
		if !validSig(sig) {
			return nil, corrupt("extension signature %q", sig)
		}
		ix.Extensions = append(ix.Extensions, sig)
		off += 8 + int(size)
	}
	if softErr != nil && !ix.Has("link") && !ix.Has("sdir") {
		return nil, softErr
	}
	return ix, nil
}

// maxIndexFile bounds the index ReadFile reads.
const maxIndexFile = 1 << 30

// ReadFile reads and parses the index file at path (see Parse; hashSize 0
// tries SHA-1, then SHA-256) and records its modification time in Mtime,
// taken from the open file so both describe the same file.
func ReadFile(path string, hashSize int) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxIndexFile {
		return nil, corrupt("%s is not a regular file of at most %d bytes", path, maxIndexFile)
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var ix *Index
	if hashSize == 0 {
		ix, err = ParseAny(b)
	} else {
		ix, err = Parse(b, hashSize)
	}
	if err != nil {
		return nil, err
	}
	ix.Mtime = fi.ModTime()
	return ix, nil
}

// fresh reports whether git would take e as unchanged without reading
// the file: fi matches its stat data and e is not racily clean (its mtime
// is in a second before the index's).
func (ix *Index) fresh(e *Entry, fi fs.FileInfo) bool {
	if ix.Mtime.IsZero() || !statMatches(e, fi) {
		return false
	}
	if e.Size == 0 && !bytes.Equal(e.OID, HashBlob(ix.HashSize, nil)) {
		return false // a zero size with content: smudged or never stat'ed (git's rule)
	}
	// Whole seconds, as git built without USE_NSEC (the default) decides
	// racy entries: an entry modified in the index's second is read.
	return int64(e.MtimeSec) < ix.Mtime.Unix()
}

// ParseAny decodes b trying SHA-1 and then SHA-256 object ids; the
// checksum tells them apart.
func ParseAny(b []byte) (*Index, error) {
	ix, err := Parse(b, sha1.Size)
	if err == nil {
		return ix, nil
	}
	if ix2, err2 := Parse(b, sha256.Size); err2 == nil {
		return ix2, nil
	}
	return nil, err
}

// maxPath bounds one path (git's own limit is PATH_MAX on most systems).
const maxPath = 4096

func validMode(m uint32) bool {
	switch m {
	case ModeRegular, ModeExecutable, ModeSymlink, ModeGitlink:
		return true
	}
	return false
}

func validSig(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// checkPath rejects a path git would never write into an index and that
// would leave the work tree when joined to its root. It does not allocate
// for a good path.
func checkPath(p []byte) error {
	if len(p) == 0 {
		return errors.New("empty path")
	}
	for rest := p; ; {
		c := rest
		i := bytes.IndexByte(rest, '/')
		if i >= 0 {
			c = rest[:i]
		}
		switch {
		case len(c) == 0, len(c) == 1 && c[0] == '.', len(c) == 2 && c[0] == '.' && c[1] == '.':
			return fmt.Errorf("path %s has an empty, \".\" or \"..\" component", strconv.Quote(string(p)))
		case len(c) == 4 && c[0] == '.' && bytes.EqualFold(c, []byte(".git")):
			return fmt.Errorf("path %s has a .git component", strconv.Quote(string(p)))
		}
		if i < 0 {
			return nil
		}
		rest = rest[i+1:]
	}
}

// varint decodes git's offset varint (index v4 prefix lengths).
func varint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 0x7f)
	i := 1
	for c&0x80 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		c = b[i]
		v = ((v + 1) << 7) | uint64(c&0x7f)
		i++
	}
	return v, i
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func newHash(hashSize int) hash.Hash {
	if hashSize == sha256.Size {
		return sha256.New()
	}
	return sha1.New()
}

func hashOf(hashSize int, b []byte) []byte {
	h := newHash(hashSize)
	h.Write(b)
	return h.Sum(nil)
}

// HashBlob returns git's object id of a blob holding data: the hash of
// "blob <len>\x00" followed by data, SHA-1 when hashSize is 20 and SHA-256
// when it is 32.
func HashBlob(hashSize int, data []byte) []byte {
	h := newHash(hashSize)
	var hdr [32]byte
	h.Write(strconv.AppendInt(append(hdr[:0], "blob "...), int64(len(data)), 10))
	h.Write([]byte{0})
	h.Write(data)
	return h.Sum(nil)
}

// Lookup returns the stage-0 entry of path.
func (ix *Index) Lookup(path string) (Entry, bool) {
	i := ix.search(path)
	for ; i < len(ix.Entries) && ix.Entries[i].Path == path; i++ {
		if ix.Entries[i].Stage == 0 {
			return ix.Entries[i], true
		}
	}
	return Entry{}, false
}

// search returns the index of the first entry whose path is not below s
// in byte order.
func (ix *Index) search(s string) int {
	return sort.Search(len(ix.Entries), func(i int) bool { return ix.Entries[i].Path >= s })
}

// Has reports whether the index holds an extension with signature sig.
func (ix *Index) Has(sig string) bool {
	for _, s := range ix.Extensions {
		if s == sig {
			return true
		}
	}
	return false
}
