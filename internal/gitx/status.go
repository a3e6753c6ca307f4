package gitx

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/patch"
)

// Status is the state of a work tree as reported by one
// `git status --porcelain=v2 --branch -z --untracked-files=all`.
type Status struct {
	Branch     string   `json:"branch"`   // "" when detached
	Detached   bool     `json:"detached"` //
	Head       string   `json:"head"`     // commit oid, "" for an unborn branch ("(initial)")
	Upstream   string   `json:"upstream,omitempty"`
	Ahead      int      `json:"ahead"`
	Behind     int      `json:"behind"`
	Staged     []Entry  `json:"staged"`
	Unstaged   []Entry  `json:"unstaged"`
	Untracked  []string `json:"untracked"`
	Conflicted []Entry  `json:"conflicted"`
	Clean      bool     `json:"clean"`
	// Truncated reports that git's output exceeded the 16 MiB cap; the
	// lists hold the entries read before the cut and Clean is false.
	Truncated bool `json:"truncated,omitempty"`
}

// Entry is one changed path. Status is one of "modified", "added",
// "deleted", "renamed", "copied", "type_changed" or "unmerged".
type Entry struct {
	Path      string `json:"path"`
	OrigPath  string `json:"orig_path,omitempty"`
	Status    string `json:"status"`
	Submodule bool   `json:"submodule,omitempty"`
}

// Entry status names.
const (
	StatusModified    = "modified"
	StatusAdded       = "added"
	StatusDeleted     = "deleted"
	StatusRenamed     = "renamed"
	StatusCopied      = "copied"
	StatusTypeChanged = "type_changed"
	StatusUnmerged    = "unmerged"
)

// statusArgs is the single git call Status makes.
var statusArgs = []string{"status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"}

// Status runs ONE `git status --porcelain=v2 --branch -z
// --untracked-files=all` in dir (and no other git call) and parses it.
// GIT_OPTIONAL_LOCKS=0 keeps it from taking index.lock.
func (g *Git) Status(ctx context.Context, dir string) (Status, error) {
	r, err := g.run(ctx, dir, DefaultMaxOutput, 0, statusArgs)
	if err != nil {
		return Status{}, err
	}
	out := r.out
	if r.truncated {
		// Drop the partial record after the last NUL.
		out = out[:bytes.LastIndexByte(out, 0)+1]
	}
	st, err := ParseStatus(out)
	if err != nil {
		if r.truncated {
			// A cut inside a rename pair leaves a dangling record; keep
			// what parsed and report the truncation.
			st, err = parseStatus(out, true)
		}
		if err != nil {
			return Status{}, errs.Wrap(errs.Internal, err, "unexpected git status output: %v", err)
		}
	}
	if r.truncated {
		st.Truncated = true
		st.Clean = false
	}
	return st, nil
}

// ParseStatus parses the output of `git status --porcelain=v2 --branch -z`.
// Unknown header lines ("# ...") and ignored entries ("! path") are skipped,
// and so are untracked temp files of a patch (".<name>.harnessd-tmp-<n>",
// see patch.IsTempName), which a crash can leave and nobody should stage;
// malformed records give an INVALID_ARGUMENT error. The slices in the result
// are never nil, so they encode as [] in JSON.
func ParseStatus(b []byte) (Status, error) { return parseStatus(b, false) }

func parseStatus(b []byte, lenient bool) (Status, error) {
	st := Status{Staged: []Entry{}, Unstaged: []Entry{}, Untracked: []string{}, Conflicted: []Entry{}}
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		var rec []byte
		if i < 0 {
			rec, b = b, nil
		} else {
			rec, b = b[:i], b[i+1:]
		}
		if len(rec) == 0 {
			continue
		}
		var err error
		switch rec[0] {
		case '#':
			err = st.header(rec)
		case '1':
			err = st.ordinary(rec)
		case '2':
			var orig []byte
			if j := bytes.IndexByte(b, 0); j >= 0 {
				orig, b = b[:j], b[j+1:]
			} else {
				orig, b = b, nil
			}
			err = st.renamed(rec, orig)
		case 'u':
			err = st.unmerged(rec)
		case '?':
			switch {
			case len(rec) < 3 || rec[1] != ' ':
				err = malformed("untracked", rec)
			case isTempFile(rec[2:]):
				// A patch's temp file left by a crash: not the agent's.
			default:
				st.Untracked = append(st.Untracked, string(rec[2:]))
			}
		case '!':
			// Ignored file; not requested, skip.
		default:
			err = malformed("unknown", rec)
		}
		if err != nil {
			if lenient {
				break
			}
			return Status{}, err
		}
	}
	st.Clean = len(st.Staged) == 0 && len(st.Unstaged) == 0 && len(st.Untracked) == 0 && len(st.Conflicted) == 0
	return st, nil
}

// isTempFile reports whether the path p is a temp file of a patch
// (patch.IsTempName of its base name).
func isTempFile(p []byte) bool {
	return patch.IsTempName(string(p[bytes.LastIndexByte(p, '/')+1:]))
}

func malformed(kind string, rec []byte) error {
	if len(rec) > 120 {
		rec = rec[:120]
	}
	return errs.New(errs.InvalidArgument, "malformed %s status record %q", kind, rec)
}

func (st *Status) header(rec []byte) error {
	s := string(rec)
	key, val, _ := strings.Cut(strings.TrimPrefix(s, "# "), " ")
	switch key {
	case "branch.oid":
		if val == "" {
			return malformed("branch.oid", rec)
		}
		if val == "(initial)" {
			st.Head = ""
		} else {
			st.Head = val
		}
	case "branch.head":
		if val == "" {
			return malformed("branch.head", rec)
		}
		if val == "(detached)" {
			st.Branch, st.Detached = "", true
		} else {
			st.Branch, st.Detached = val, false
		}
	case "branch.upstream":
		if val == "" {
			return malformed("branch.upstream", rec)
		}
		st.Upstream = val
	case "branch.ab":
		a, bh, ok := strings.Cut(val, " ")
		if !ok || len(a) < 2 || len(bh) < 2 || a[0] != '+' || bh[0] != '-' {
			return malformed("branch.ab", rec)
		}
		ahead, err1 := strconv.Atoi(a[1:])
		behind, err2 := strconv.Atoi(bh[1:])
		if err1 != nil || err2 != nil || ahead < 0 || behind < 0 {
			return malformed("branch.ab", rec)
		}
		st.Ahead, st.Behind = ahead, behind
	}
	return nil
}

// fields splits rec into n space-separated fields, the last taking the rest
// (paths may contain spaces).
func fields(rec []byte, n int) ([]string, bool) {
	f := strings.SplitN(string(rec), " ", n)
	if len(f) != n || f[n-1] == "" {
		return nil, false
	}
	return f, true
}

// xyCode maps one porcelain status letter to an entry status.
func xyCode(c byte) (string, bool) {
	switch c {
	case 'M':
		return StatusModified, true
	case 'A':
		return StatusAdded, true
	case 'D':
		return StatusDeleted, true
	case 'R':
		return StatusRenamed, true
	case 'C':
		return StatusCopied, true
	case 'T':
		return StatusTypeChanged, true
	case 'U':
		return StatusUnmerged, true
	}
	return "", false
}

func validSub(s string) bool {
	return len(s) == 4 && (s[0] == 'N' || s[0] == 'S')
}

// addXY records the staged (X) and unstaged (Y) sides of a changed entry.
func (st *Status) addXY(kind string, rec []byte, xy, sub, path, orig string) error {
	if len(xy) != 2 || !validSub(sub) {
		return malformed(kind, rec)
	}
	isSub := sub[0] == 'S'
	for side := 0; side < 2; side++ {
		c := xy[side]
		if c == '.' {
			continue
		}
		code, ok := xyCode(c)
		if !ok {
			return malformed(kind, rec)
		}
		e := Entry{Path: path, Status: code, Submodule: isSub}
		if c == 'R' || c == 'C' {
			e.OrigPath = orig
		}
		if side == 0 {
			st.Staged = append(st.Staged, e)
		} else {
			st.Unstaged = append(st.Unstaged, e)
		}
	}
	return nil
}

// ordinary parses "1 XY sub mH mI mW hH hI path".
func (st *Status) ordinary(rec []byte) error {
	f, ok := fields(rec, 9)
	if !ok || f[0] != "1" {
		return malformed("changed", rec)
	}
	return st.addXY("changed", rec, f[1], f[2], f[8], "")
}

// renamed parses "2 XY sub mH mI mW hH hI Xscore path" followed by the
// NUL-separated original path.
func (st *Status) renamed(rec, orig []byte) error {
	f, ok := fields(rec, 10)
	if !ok || f[0] != "2" || len(orig) == 0 {
		return malformed("renamed", rec)
	}
	if s := f[8]; len(s) < 2 || (s[0] != 'R' && s[0] != 'C') {
		return malformed("renamed", rec)
	}
	return st.addXY("renamed", rec, f[1], f[2], f[9], string(orig))
}

// unmerged parses "u XY sub m1 m2 m3 mW h1 h2 h3 path".
func (st *Status) unmerged(rec []byte) error {
	f, ok := fields(rec, 11)
	if !ok || f[0] != "u" || len(f[1]) != 2 || !validSub(f[2]) {
		return malformed("unmerged", rec)
	}
	st.Conflicted = append(st.Conflicted, Entry{Path: f[10], Status: StatusUnmerged, Submodule: f[2][0] == 'S'})
	return nil
}
