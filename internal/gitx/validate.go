package gitx

import (
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/harnessd/harnessd/contract/errs"
)

// MaxRevLen is the longest revision ValidateRev accepts.
const MaxRevLen = 256

// MaxPathspecLen is the longest path filter ValidatePathspec accepts.
const MaxPathspecLen = 4096

// ValidateRev checks an agent-supplied revision before it reaches git, as
// the argument named "rev"; see CheckRev.
func ValidateRev(rev string) error { return CheckRev("rev", rev) }

// revFix is the remedy every rejected revision's message ends with.
const revFix = "give a branch, tag or commit id, optionally with ~N, ^N or @{...}, or a range A..B or A...B; paths go in paths"

// CheckRev checks the revision rev, an argument named field, before it
// reaches git. It is pure: it reads no file and runs no git.
//
// Accepted: a revision in ref form, optionally a range. A range is A..B or
// A...B where either side may be empty (git reads it as HEAD). Each side is
// a base followed by any number of suffixes:
//   - base: a ref name as git check-ref-format --allow-onelevel accepts it
//     (so also HEAD, a branch such as origin/main, a tag, an object id),
//     "@" (HEAD), or nothing before an @{...} suffix (@{u}, @{-1});
//   - suffixes: ~, ~N, ^, ^N, ^{}, ^{commit|tree|blob|tag|object},
//     ^{/text} (text without '/'), ^!, ^@, ^-, ^-N and @{x} where x is made
//     of letters, digits and . _ + - (@{u}, @{push}, @{1}, @{-1},
//     @{yesterday}).
//
// Everything else is INVALID_ARGUMENT naming field, what is wrong and the
// fix, with details "field" and "rev". In particular:
//   - empty, longer than 256 bytes, or not valid UTF-8;
//   - a leading '-' (it would be read as an option);
//   - NUL, newline, any other whitespace or control character;
//   - a path: absolute, ".", "..", a "." or ".." component anywhere
//     ("./a", "x/../../etc/passwd"), an empty component ("a//b", "a/"), a
//     component starting with '.': git diff with one argument outside the
//     work tree runs in its implicit --no-index mode and compares files;
//   - ':' anywhere: "REV:path" names a blob or tree, ":path" and ":N:path"
//     index entries and ":/text" searches commit messages (ref names never
//     contain ':', so no branch or tag is lost);
//   - the characters ? * [ \ and space, which ref names cannot contain.
//
// A string that names an existing file is therefore accepted only when it
// is also in ref form (a branch named like a file, such as "docs"), and git
// then reads it as a revision, because revisions are passed before "--".
func CheckRev(field, rev string) error {
	// The value comes last, quoted: a revision such as "x/secret.txt"
	// followed by ": ..." would read as a secret assignment to redactors.
	bad := func(format string, args ...any) error {
		return errs.New(errs.InvalidArgument, "%s "+format+": "+revFix+" (got %q)", append(append([]any{field}, args...), rev)...).
			With("field", field).With("rev", rev)
	}
	switch {
	case rev == "":
		return errs.New(errs.InvalidArgument, "%s is empty: %s", field, revFix).With("field", field)
	case len(rev) > MaxRevLen:
		return errs.New(errs.InvalidArgument, "%s is %d bytes, longer than the %d allowed: %s", field, len(rev), MaxRevLen, revFix).
			With("field", field)
	case !utf8.ValidString(rev):
		return bad("not valid UTF-8")
	case rev[0] == '-':
		return bad("must not start with '-' (it would be read as an option)")
	}
	for _, r := range rev {
		switch {
		case r == 0:
			return bad("contains a NUL byte")
		case r == '\n' || r == '\r':
			return bad("contains a newline")
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return bad("contains whitespace or a control character")
		case r == ':':
			return bad("contains ':' (object paths, index entries and message searches are not accepted)")
		case r == '?' || r == '*' || r == '[' || r == '\\':
			return bad("contains %q, which revisions cannot contain", r)
		}
	}
	if looksLikePath(rev) {
		// git diff of two paths, one outside the work tree, runs in its
		// implicit --no-index mode (a file named "--" makes the second):
		// a diff of any file. No revision is spelled like this.
		return bad("is a path, not a revision")
	}
	left, right, isRange := splitRange(rev)
	if isRange && left == "" && right == "" {
		return bad("is a range without ends")
	}
	sides := []string{left}
	if isRange {
		sides = append(sides, right)
	}
	for _, side := range sides {
		if side == "" && isRange {
			continue
		}
		if why := checkRevSide(side); why != "" {
			return bad("%s", why)
		}
	}
	return nil
}

// looksLikePath reports whether rev is spelled as a file path: absolute, or
// with a "." or ".." component anywhere ("..main" is a range, "a/../b" a
// path). These are exactly the spellings git's path_inside_repo can place
// outside the work tree.
func looksLikePath(rev string) bool {
	if rev[0] == '/' {
		return true
	}
	for _, c := range strings.Split(rev, "/") {
		if c == "." || c == ".." {
			return true
		}
	}
	return false
}

// splitRange splits rev at its first ".." or "...".
func splitRange(rev string) (left, right string, ok bool) {
	i := strings.Index(rev, "..")
	if i < 0 {
		return rev, "", false
	}
	n := 2
	if strings.HasPrefix(rev[i:], "...") {
		n = 3
	}
	return rev[:i], rev[i+n:], true
}

// checkRevSide checks one side of a range (or a whole revision): a base and
// its suffixes. It returns what is wrong, "" when nothing is.
func checkRevSide(s string) string {
	i := strings.IndexAny(s, "~^")
	if j := strings.Index(s, "@{"); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	base, suf := s, ""
	if i >= 0 {
		base, suf = s[:i], s[i:]
	}
	switch {
	case base == "" && !strings.HasPrefix(suf, "@{"):
		return "has no branch, tag or commit before " + quoteSuffix(suf)
	case base != "" && base != "@":
		if why := checkRefName(base); why != "" {
			return why
		}
	}
	for suf != "" {
		n, why := revSuffix(suf)
		if why != "" {
			return why
		}
		suf = suf[n:]
	}
	return ""
}

func quoteSuffix(s string) string {
	if s == "" {
		return "the end"
	}
	return strconv.Quote(s)
}

// checkRefName applies git check-ref-format --allow-onelevel to name (the
// characters were checked by the caller).
func checkRefName(name string) string {
	if strings.Contains(name, "..") {
		return "contains \"..\" more than once or in a ref name"
	}
	if strings.HasSuffix(name, ".") {
		return "ends with '.', which ref names cannot"
	}
	for _, c := range strings.Split(name, "/") {
		switch {
		case c == "":
			return "has an empty path component ('//', or '/' at the start or end): ref names have none"
		case c[0] == '.':
			return "has a component starting with '.', which ref names cannot"
		case strings.HasSuffix(c, ".lock"):
			return "has a component ending with \".lock\", which ref names cannot"
		}
	}
	return ""
}

// objectTypes are the words of the ^{type} suffix ("" peels tags).
var objectTypes = map[string]bool{"": true, "commit": true, "tree": true, "blob": true, "tag": true, "object": true}

// revSuffix measures the navigation suffix at the start of s and returns
// its length, or what is wrong with it.
func revSuffix(s string) (int, string) {
	digits := func(from int) int {
		for from < len(s) && s[from] >= '0' && s[from] <= '9' {
			from++
		}
		return from
	}
	switch {
	case s[0] == '~':
		return digits(1), ""
	case strings.HasPrefix(s, "@{"):
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return 0, "has an unclosed @{"
		}
		body := s[2:end]
		if body == "" {
			return 0, "has an empty @{}"
		}
		for _, r := range body {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '+' || r == '-') {
				return 0, "has @{" + body + "}, but only @{u}, @{push}, @{N}, @{-N} or a date such as @{yesterday} are accepted"
			}
		}
		return end + 1, ""
	case s[0] == '^':
		if len(s) == 1 {
			return 1, ""
		}
		switch s[1] {
		case '!', '@':
			return 2, ""
		case '-':
			return digits(2), ""
		case '{':
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return 0, "has an unclosed ^{"
			}
			body := s[2:end]
			if strings.HasPrefix(body, "/") {
				if len(body) == 1 || strings.ContainsAny(body[1:], "/{}") {
					return 0, "has a ^{/text} search whose text is empty or contains '/', '{' or '}'"
				}
				return end + 1, ""
			}
			if !objectTypes[body] {
				return 0, "has ^{" + body + "}, but the type must be commit, tree, blob, tag or object"
			}
			return end + 1, ""
		}
		return digits(1), ""
	}
	return 0, "has " + strconv.Quote(s) + " after the ref name, which is not a ~, ^ or @{...} suffix"
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
