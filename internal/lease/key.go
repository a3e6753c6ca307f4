package lease

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/harnessd/harnessd/contract/errs"
)

// Key is a resource key such as "path:c1:src/main.go". Valid keys are
// canonical: ParseKey accepts exactly the strings the constructors build from
// valid parts, so two valid keys name the same resource only if they are equal.
type Key string

// Limits on the parts of a key.
const (
	MaxCheckoutLen = 255  // bytes in a checkout id
	MaxPathLen     = 4096 // bytes in a relative path
	MaxRefLen      = 1024 // bytes in a ref name
)

const (
	prefixWorkspace = "workspace:"
	prefixPath      = "path:"
	prefixIndex     = "git-index:"
	prefixHead      = "git-head:"
	prefixRef       = "git-ref:"
)

type kind uint8

const (
	kindInvalid kind = iota
	kindWorkspace
	kindPath
	kindIndex
	kindHead
	kindRef
)

// parts is a key split into its kind, checkout and (for path and git-ref
// keys) the rest. split does not validate the parts.
type parts struct {
	kind     kind
	checkout string
	rest     string
}

// WorkspaceKey returns the key of the whole checkout.
func WorkspaceKey(checkout string) Key { return Key(prefixWorkspace + checkout) }

// PathKey returns the key of a file or directory of the checkout. rel is
// cleaned first ("./src/" becomes "src"); a path that is still not a valid
// relative path (absolute, escaping with "..", or the root ".") yields a key
// that ParseKey and Table.Prepare reject. Claim the root with WorkspaceKey.
func PathKey(checkout, rel string) Key {
	if !isCleanRel(rel) && rel != "" {
		rel = path.Clean(rel)
	}
	return Key(prefixPath + checkout + ":" + rel)
}

// GitIndexKey returns the key of the checkout's git index.
func GitIndexKey(checkout string) Key { return Key(prefixIndex + checkout) }

// GitHeadKey returns the key of the checkout's HEAD.
func GitHeadKey(checkout string) Key { return Key(prefixHead + checkout) }

// GitRefKey returns the key of one ref of the checkout, such as
// "refs/heads/main".
func GitRefKey(checkout, ref string) Key { return Key(prefixRef + checkout + ":" + ref) }

// ParseKey validates s and returns it as a Key. Anything that is not a
// canonical key gives an errs.InvalidArgument error.
func ParseKey(s string) (Key, error) {
	k := Key(s)
	if err := k.Validate(); err != nil {
		return "", err
	}
	return k, nil
}

// Validate returns an errs.InvalidArgument error if k is not a valid,
// canonical key.
func (k Key) Validate() error {
	_, err := parseKey(k)
	return err
}

// parseKey splits and validates k.
func parseKey(k Key) (parts, error) {
	p, ok := split(k)
	if !ok {
		return parts{}, errs.New(errs.InvalidArgument,
			"invalid lease key %q: want workspace:<checkout>, path:<checkout>:<relpath>, git-index:<checkout>, git-head:<checkout> or git-ref:<checkout>:<ref>", clip(string(k)))
	}
	if msg := checkCheckout(p.checkout); msg != "" {
		return parts{}, errs.New(errs.InvalidArgument, "invalid lease key %q: checkout %s", clip(string(k)), msg)
	}
	switch p.kind {
	case kindPath:
		if msg := checkRel(p.rest); msg != "" {
			return parts{}, errs.New(errs.InvalidArgument, "invalid lease key %q: path %s", clip(string(k)), msg)
		}
	case kindRef:
		if msg := checkRef(p.rest); msg != "" {
			return parts{}, errs.New(errs.InvalidArgument, "invalid lease key %q: ref %s", clip(string(k)), msg)
		}
	}
	return p, nil
}

// Checkout returns the checkout part of k, or "" if k is malformed.
func (k Key) Checkout() string {
	p, ok := split(k)
	if !ok {
		return ""
	}
	return p.checkout
}

// String returns k as a string.
func (k Key) String() string { return string(k) }

// Overlaps reports whether a lease on a and a lease on b may not be held at the
// same time. It is symmetric and reflexive; see the package comment for the
// rules. Malformed keys overlap only themselves.
func Overlaps(a, b Key) bool {
	if a == b {
		return true
	}
	pa, ok := split(a)
	if !ok {
		return false
	}
	pb, ok := split(b)
	return ok && overlapParts(pa, pb)
}

// overlapParts is Overlaps on split keys.
func overlapParts(pa, pb parts) bool {
	if pa.checkout != pb.checkout {
		return false
	}
	if pa.kind == kindWorkspace || pb.kind == kindWorkspace {
		return true
	}
	switch pa.kind {
	case kindPath:
		return pb.kind == kindPath && nested(pa.rest, pb.rest)
	case kindIndex:
		return pb.kind == kindIndex
	case kindHead:
		return pb.kind == kindHead || pb.kind == kindRef
	case kindRef:
		return pb.kind == kindHead || (pb.kind == kindRef && nested(pa.rest, pb.rest))
	}
	return false
}

// nested reports whether x and y are equal or one is a '/'-separated
// directory prefix of the other.
func nested(x, y string) bool {
	if len(x) > len(y) {
		x, y = y, x
	}
	return strings.HasPrefix(y, x) && (len(x) == len(y) || y[len(x)] == '/')
}

// split cuts k into its parts without validating them. The checkout never
// contains ':', so the first ':' after the prefix ends it; the rest of a path
// or ref key may contain anything.
func split(k Key) (parts, bool) {
	s := string(k)
	var p parts
	var tail string
	switch {
	case strings.HasPrefix(s, prefixWorkspace):
		p.kind, tail = kindWorkspace, s[len(prefixWorkspace):]
	case strings.HasPrefix(s, prefixPath):
		p.kind, tail = kindPath, s[len(prefixPath):]
	case strings.HasPrefix(s, prefixIndex):
		p.kind, tail = kindIndex, s[len(prefixIndex):]
	case strings.HasPrefix(s, prefixHead):
		p.kind, tail = kindHead, s[len(prefixHead):]
	case strings.HasPrefix(s, prefixRef):
		p.kind, tail = kindRef, s[len(prefixRef):]
	default:
		return parts{}, false
	}
	if p.kind == kindPath || p.kind == kindRef {
		i := strings.IndexByte(tail, ':')
		if i < 0 {
			return parts{}, false
		}
		p.checkout, p.rest = tail[:i], tail[i+1:]
		return p, true
	}
	if strings.IndexByte(tail, ':') >= 0 {
		return parts{}, false
	}
	p.checkout = tail
	return p, true
}

// checkCheckout returns why c is not a valid checkout id, or "".
func checkCheckout(c string) string {
	switch {
	case c == "":
		return "is empty"
	case len(c) > MaxCheckoutLen:
		return "is longer than 255 bytes"
	case !utf8.ValidString(c):
		return "is not valid UTF-8"
	}
	for _, r := range c {
		if r <= ' ' || r == 0x7f || r == ':' || (r >= 0x80 && r <= 0x9f) {
			return "contains a space, control character or ':'"
		}
	}
	return ""
}

// checkRel returns why rel is not a clean relative path, or "".
func checkRel(rel string) string {
	switch {
	case rel == "":
		return "is empty"
	case rel == ".":
		return "is the checkout root (use the workspace key)"
	case len(rel) > MaxPathLen:
		return "is longer than 4096 bytes"
	case !utf8.ValidString(rel):
		return "is not valid UTF-8"
	case rel[0] == '/':
		return "is absolute"
	}
	for i := 0; i < len(rel); i++ {
		if c := rel[i]; c < ' ' || c == 0x7f {
			return "contains a control character"
		}
	}
	if !isCleanRel(rel) {
		return "is not clean (empty, '.' or '..' element, or trailing '/')"
	}
	return ""
}

// isCleanRel reports whether rel is non-empty, relative, and has no empty,
// "." or ".." elements.
func isCleanRel(rel string) bool {
	if rel == "" || rel[0] == '/' {
		return false
	}
	for elem := range strings.SplitSeq(rel, "/") {
		if elem == "" || elem == "." || elem == ".." {
			return false
		}
	}
	return true
}

// checkRef returns why ref breaks the rules of git check-ref-format, or "".
func checkRef(ref string) string {
	switch {
	case ref == "":
		return "is empty"
	case len(ref) > MaxRefLen:
		return "is longer than 1024 bytes"
	case !utf8.ValidString(ref):
		return "is not valid UTF-8"
	case ref == "@":
		return `is "@"`
	case strings.HasSuffix(ref, "."):
		return "ends with '.'"
	case strings.Contains(ref, ".."):
		return `contains ".."`
	case strings.Contains(ref, "@{"):
		return `contains "@{"`
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if c <= ' ' || c == 0x7f || strings.IndexByte("~^:?*[\\", c) >= 0 {
			return "contains a space, control character or one of ~^:?*[\\"
		}
	}
	for elem := range strings.SplitSeq(ref, "/") {
		switch {
		case elem == "":
			return "has an empty element"
		case elem[0] == '.':
			return "has an element starting with '.'"
		case strings.HasSuffix(elem, ".lock"):
			return `has an element ending with ".lock"`
		}
	}
	return ""
}

// clip shortens s for error messages.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
