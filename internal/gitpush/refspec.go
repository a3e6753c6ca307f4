package gitpush

import (
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
)

// Refspec is a parsed git_push refspec: the local side and the remote
// side ("" = the local ref's own name).
type Refspec struct {
	Src, Dst string
}

// ParseRefspec parses "src" or "src:dst". A leading "+" is refused (force
// is its own field, approved on its own), so are deletions (":dst"),
// patterns and anything CheckRefName refuses.
func ParseRefspec(s string) (Refspec, error) {
	bad := func(format string, args ...any) error {
		return errs.New(errs.InvalidArgument, "refspec %q: "+format, append([]any{s}, args...)...).With("refspec", s)
	}
	switch {
	case s == "":
		return Refspec{}, bad("empty: name the local branch (main) or local:remote (main:release)")
	case strings.HasPrefix(s, "+"):
		return Refspec{}, bad("a leading + forces; set force: true instead (a forced push needs its own approval)")
	case strings.HasPrefix(s, ":"):
		return Refspec{}, bad("deleting a remote ref is not supported by git_push")
	case strings.Contains(s, "*"):
		return Refspec{}, bad("patterns are not supported: name one ref")
	}
	src, dst, _ := strings.Cut(s, ":")
	if strings.Contains(dst, ":") {
		return Refspec{}, bad("more than one ':'")
	}
	if err := CheckRefName(src); err != nil {
		return Refspec{}, bad("local side: %s", err.Error())
	}
	if dst != "" {
		if err := CheckRefName(dst); err != nil {
			return Refspec{}, bad("remote side: %s", err.Error())
		}
	}
	return Refspec{Src: src, Dst: dst}, nil
}

// refNameError is why CheckRefName refused a name.
type refNameError string

func (e refNameError) Error() string { return string(e) }

// CheckRefName checks a ref name the way `git check-ref-format
// --allow-onelevel` does, and also refuses a name starting with "-" (it
// would read as an option): no component starting with "." or ending in
// ".lock", no "..", "@{", "//", control characters, space, ~ ^ : ? * [ \,
// not "@", not ending in "/" or ".".
func CheckRefName(name string) error {
	switch {
	case name == "":
		return refNameError("empty ref name")
	case name == "@":
		return refNameError(`"@" is not a ref name`)
	case strings.HasPrefix(name, "-"):
		return refNameError("a ref name cannot start with '-'")
	case strings.HasPrefix(name, "/"), strings.HasSuffix(name, "/"):
		return refNameError("a ref name cannot start or end with '/'")
	case strings.HasSuffix(name, "."):
		return refNameError("a ref name cannot end with '.'")
	case strings.Contains(name, ".."), strings.Contains(name, "@{"), strings.Contains(name, "//"):
		return refNameError(`a ref name cannot contain "..", "@{" or "//"`)
	case len(name) > 255:
		return refNameError("a ref name is at most 255 bytes")
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return refNameError("a ref name cannot contain control characters, space or any of ~^:?*[\\")
		}
	}
	for _, comp := range strings.Split(name, "/") {
		if strings.HasPrefix(comp, ".") || strings.HasSuffix(comp, ".lock") {
			return refNameError("a ref name component cannot start with '.' or end with \".lock\"")
		}
	}
	return nil
}

// RemoteRef returns the full name of the remote side: dst as given when
// it is a full ref (refs/heads/..., refs/tags/...), dst in the local
// ref's namespace when it is short, the local ref itself when dst is "".
// Only branches and tags are pushed.
func RemoteRef(localFull, dst string) (string, error) {
	ns := ""
	switch {
	case strings.HasPrefix(localFull, "refs/heads/"):
		ns = "refs/heads/"
	case strings.HasPrefix(localFull, "refs/tags/"):
		ns = "refs/tags/"
	default:
		return "", errs.New(errs.InvalidArgument, "local ref %q is no branch or tag: git_push pushes a branch (refs/heads/) or a tag (refs/tags/)", localFull)
	}
	switch {
	case dst == "":
		return localFull, nil
	case strings.HasPrefix(dst, "refs/heads/"), strings.HasPrefix(dst, "refs/tags/"):
		return dst, nil
	case strings.HasPrefix(dst, "refs/"):
		return "", errs.New(errs.InvalidArgument, "remote ref %q: git_push writes only refs/heads/ and refs/tags/", dst)
	}
	return ns + dst, nil
}
