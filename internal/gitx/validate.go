package gitx

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/harnessd/harnessd/harness/errs"
)

// MaxRevLen is the longest revision ValidateRev accepts.
const MaxRevLen = 256

// MaxPathspecLen is the longest path filter ValidatePathspec accepts.
const MaxPathspecLen = 4096

// ValidateRev checks an agent-supplied revision before it reaches git.
//
// Accepted: anything git's revision syntax allows that is built from ref
// names, object ids and the navigation operators ~ ^ @{...}, including the
// ranges A..B and A...B (git diff treats them as "A B" and "merge-base B").
//
// Rejected with INVALID_ARGUMENT:
//   - empty, longer than 256 bytes, or not valid UTF-8;
//   - a leading '-' (it would be read as an option);
//   - a file path: absolute, ".", "..", "./..." or "../..." (git diff of
//     paths outside the work tree runs as diff --no-index);
//   - NUL, whitespace or control characters;
//   - ':' anywhere: "REV:path" names a blob or tree, ":path" and ":N:path"
//     name index entries and ":/text" searches commit messages. Ref names can
//     never contain ':', so no branch or tag is lost;
//   - the characters '?', '*', '[' and '\' that ref names cannot contain.
func ValidateRev(rev string) error {
	if rev == "" {
		return errs.New(errs.InvalidArgument, "revision must not be empty")
	}
	if len(rev) > MaxRevLen {
		return errs.New(errs.InvalidArgument, "revision is %d bytes, longer than the %d allowed", len(rev), MaxRevLen)
	}
	if !utf8.ValidString(rev) {
		return errs.New(errs.InvalidArgument, "revision %q is not valid UTF-8", rev)
	}
	if rev[0] == '-' {
		return errs.New(errs.InvalidArgument, "revision %q must not start with '-'", rev)
	}
	if looksLikePath(rev) {
		// git diff of two paths, one outside the work tree, runs in its
		// implicit --no-index mode (a file named "--" makes the second):
		// a diff of any file. No ref name starts like this.
		return errs.New(errs.InvalidArgument, "revision %q is a path, not a revision: give a branch, tag, commit id or range", rev)
	}
	for _, r := range rev {
		switch {
		case r == 0:
			return errs.New(errs.InvalidArgument, "revision %q contains a NUL byte", rev)
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return errs.New(errs.InvalidArgument, "revision %q contains whitespace or a control character", rev)
		case r == ':':
			return errs.New(errs.InvalidArgument, "revision %q must not contain ':' (object paths and index entries are not accepted)", rev)
		case r == '?' || r == '*' || r == '[' || r == '\\':
			return errs.New(errs.InvalidArgument, "revision %q contains %q, which revisions cannot contain", rev, r)
		}
	}
	return nil
}

// looksLikePath reports whether rev is spelled as a file path: absolute,
// "." or "..", or starting with "./" or "../" (ranges such as "..main" are
// revisions).
func looksLikePath(rev string) bool {
	return rev[0] == '/' || rev == "." || rev == ".." || strings.HasPrefix(rev, "./") || strings.HasPrefix(rev, "../")
}

// ValidatePathspec checks an agent-supplied path filter before it is passed
// to git after "--". It must be non-empty, at most 4096 bytes, relative (no
// leading '/'), must not start with '-' or with ':' (pathspec magic such as
// ":(top)" or ":!x"), must not contain NUL and must not escape the work tree
// with "..". Glob characters keep their usual pathspec meaning.
//
// Errors are INVALID_ARGUMENT, except absolute paths and paths that escape
// with ".." which are PATH_OUTSIDE_ROOT.
func ValidatePathspec(p string) error {
	if p == "" {
		return errs.New(errs.InvalidArgument, "path filter must not be empty")
	}
	if len(p) > MaxPathspecLen {
		return errs.New(errs.InvalidArgument, "path filter is %d bytes, longer than the %d allowed", len(p), MaxPathspecLen)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return errs.New(errs.InvalidArgument, "path filter %q contains a NUL byte", p)
	}
	switch p[0] {
	case '-':
		return errs.New(errs.InvalidArgument, "path filter %q must not start with '-'", p)
	case ':':
		return errs.New(errs.InvalidArgument, "path filter %q must not start with ':' (pathspec magic is not accepted)", p)
	case '/':
		return errs.New(errs.PathOutsideRoot, "path filter %q must be relative to the repository root", p)
	}
	if c := path.Clean(p); c == ".." || strings.HasPrefix(c, "../") {
		return errs.New(errs.PathOutsideRoot, "path filter %q escapes the repository root", p)
	}
	return nil
}
