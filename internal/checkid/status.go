package checkid

import (
	"bytes"
	"path"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
)

// statusArgs is the one status call ContentRevision makes. --branch gives
// HEAD's oid ("# branch.oid"), --no-ahead-behind skips the upstream walk and
// --no-renames skips rename detection: a rename is its two paths anyway.
var statusArgs = []string{
	"status", "--porcelain=v2", "--branch", "--no-ahead-behind", "--no-renames",
	"-z", "--untracked-files=all",
}

// dirtyEntry is one path named by git status.
type dirtyEntry struct {
	path string
	// sub is the porcelain submodule field: "N..." for a plain path,
	// "S<c><m><u>" for a submodule, "" when unknown (untracked).
	sub string
	// headKnown says headMode and headOID describe the path in HEAD
	// (headOID zero: absent from HEAD). Unknown for untracked and unmerged
	// entries and for the new side of a rename.
	headKnown bool
	headMode  string
	headOID   string
	indexOID  string // gitlink commit in the index, for submodules
	untracked bool
	dir       bool // reported with a trailing slash (an untracked nested repository)
}

func (e *dirtyEntry) submodule() bool { return len(e.sub) == 4 && e.sub[0] == 'S' }

// parsedStatus is the part of the status output ContentRevision needs.
type parsedStatus struct {
	head    string // "" for an unborn branch
	entries []dirtyEntry
}

// parseStatus parses `git status --porcelain=v2 --branch -z` output into
// unique paths. A path reported twice (a staged deletion whose file is also
// untracked) is merged, keeping what is known about it in HEAD. Malformed
// input gives an INVALID_ARGUMENT error, never a panic.
func parseStatus(b []byte) (parsedStatus, error) {
	var st parsedStatus
	index := map[string]int{}
	add := func(e dirtyEntry) {
		if i, ok := index[e.path]; ok {
			merged := &st.entries[i]
			if !merged.headKnown && e.headKnown {
				merged.headKnown, merged.headMode, merged.headOID = true, e.headMode, e.headOID
			}
			if !merged.submodule() && e.submodule() {
				merged.sub, merged.indexOID = e.sub, e.indexOID
			}
			merged.untracked = merged.untracked && e.untracked
			merged.dir = merged.dir || e.dir
			return
		}
		index[e.path] = len(st.entries)
		st.entries = append(st.entries, e)
	}
	for len(b) > 0 {
		var rec []byte
		rec, b = nextRecord(b)
		if len(rec) == 0 {
			continue
		}
		switch rec[0] {
		case '#':
			if oid, ok := bytes.CutPrefix(rec, []byte("# branch.oid ")); ok {
				s := string(oid)
				switch {
				case s == "(initial)":
					st.head = ""
				case isOID(s):
					st.head = s
				default:
					return parsedStatus{}, malformed("branch.oid", rec)
				}
			}
		case '1':
			// 1 XY sub mH mI mW hH hI path
			f, ok := splitFields(rec, 9)
			if !ok || !validXY(f[1]) || !validSub(f[2]) || !isOID(f[6]) || !isOID(f[7]) {
				return parsedStatus{}, malformed("changed", rec)
			}
			p, err := cleanStatusPath(f[8])
			if err != nil {
				return parsedStatus{}, err
			}
			add(dirtyEntry{path: p, sub: f[2], headKnown: true, headMode: f[3], headOID: f[6], indexOID: f[7]})
		case '2':
			// 2 XY sub mH mI mW hH hI Xscore path NUL origPath
			var orig []byte
			orig, b = nextRecord(b)
			f, ok := splitFields(rec, 10)
			if !ok || !validXY(f[1]) || !validSub(f[2]) || !isOID(f[6]) || !isOID(f[7]) || len(orig) == 0 {
				return parsedStatus{}, malformed("renamed", rec)
			}
			p, err := cleanStatusPath(f[9])
			if err != nil {
				return parsedStatus{}, err
			}
			o, err := cleanStatusPath(string(orig))
			if err != nil {
				return parsedStatus{}, err
			}
			// HEAD's side of the pair belongs to the original path.
			add(dirtyEntry{path: p, sub: f[2], indexOID: f[7]})
			add(dirtyEntry{path: o, sub: "N...", headKnown: true, headMode: f[3], headOID: f[6]})
		case 'u':
			// u XY sub m1 m2 m3 mW h1 h2 h3 path
			f, ok := splitFields(rec, 11)
			if !ok || !validXY(f[1]) || !validSub(f[2]) {
				return parsedStatus{}, malformed("unmerged", rec)
			}
			p, err := cleanStatusPath(f[10])
			if err != nil {
				return parsedStatus{}, err
			}
			add(dirtyEntry{path: p, sub: f[2]})
		case '?':
			if len(rec) < 3 || rec[1] != ' ' {
				return parsedStatus{}, malformed("untracked", rec)
			}
			raw := string(rec[2:])
			dir := strings.HasSuffix(raw, "/")
			p, err := cleanStatusPath(strings.TrimSuffix(raw, "/"))
			if err != nil {
				return parsedStatus{}, err
			}
			add(dirtyEntry{path: p, untracked: true, dir: dir})
		case '!':
			// Ignored; not requested.
		default:
			return parsedStatus{}, malformed("unknown", rec)
		}
	}
	return st, nil
}

func nextRecord(b []byte) (rec, rest []byte) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// splitFields splits rec into n space-separated fields, the last taking the
// rest (paths may contain spaces).
func splitFields(rec []byte, n int) ([]string, bool) {
	f := strings.SplitN(string(rec), " ", n)
	if len(f) != n || f[n-1] == "" {
		return nil, false
	}
	return f, true
}

func validXY(s string) bool {
	if len(s) != 2 {
		return false
	}
	for i := 0; i < 2; i++ {
		if !strings.ContainsRune(".MTADRCU", rune(s[i])) {
			return false
		}
	}
	return true
}

func validSub(s string) bool { return len(s) == 4 && (s[0] == 'N' || s[0] == 'S') }

// cleanStatusPath checks a path reported by git: relative, clean, inside the
// work tree and not inside .git.
func cleanStatusPath(p string) (string, error) {
	if p == "" || p[0] == '/' || strings.IndexByte(p, 0) >= 0 || path.Clean(p) != p ||
		p == ".." || strings.HasPrefix(p, "../") || p == "." {
		return "", errs.New(errs.InvalidArgument, "git status reported an unexpected path %q", p)
	}
	return p, nil
}

func malformed(kind string, rec []byte) error {
	if len(rec) > 120 {
		rec = rec[:120]
	}
	return errs.New(errs.InvalidArgument, "malformed %s status record %q", kind, rec)
}
