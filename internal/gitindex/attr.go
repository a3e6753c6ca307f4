package gitindex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Attributes: the rules of gitattributes(5) as git reads them for a work
// tree's status (git's "checkin" direction): for a path a/b/c, the
// .gitattributes of the root, a and a/b (each from the work tree or, when
// it cannot be opened there, from the index) and $GIT_COMMON_DIR/info/
// attributes above them all, the built-in macro `binary` (-diff -merge
// -text) below. No system or user attributes file applies: harnessd's git
// runs with GIT_ATTR_NOSYSTEM=1 and core.attributesFile=/dev/null (gitx).
//
// Within a file later lines win; a deeper file wins over a shallower one;
// info/attributes wins over all. A line is a pattern (gitignore syntax
// without negation: a line whose pattern starts with '!' is dropped, as
// git drops it; `\!` is a literal '!'; a pattern may be C-quoted) followed
// by attribute settings `attr`, `-attr`, `!attr` (back to unspecified) or
// `attr=value`; `[attr]name settings` defines a macro, only in the root
// .gitattributes and info/attributes. Setting a macro sets what it
// expands to, in the order git applies them. Lines of 2048 bytes or more
// and files of 100 MiB or more are ignored, as git ignores them; a line
// with an invalid attribute name is dropped whole.

// attrKind is the state of one attribute for a path.
type attrKind uint8

const (
	attrUnknown     attrKind = iota // not decided by any line (unspecified)
	attrSet                         // attr
	attrFalse                       // -attr
	attrUnspecified                 // !attr: back to unspecified, and no lower line decides
	attrString                      // attr=value
)

type attrVal struct {
	kind attrKind
	val  string
}

// attrSetting is one `attr`, `-attr`, `!attr` or `attr=value` of a line.
type attrSetting struct {
	name string
	v    attrVal
}

// Pattern flags (gitignore's).
const (
	patMustBeDir = 1 << iota // a trailing '/': matches directories only (never a file)
	patNoDir                 // no '/': matched against the base name
	patEndsWith              // "*literal": a suffix compare
)

// attrRule is one line of an attributes file: a pattern rule, or a macro
// definition when macro is set.
type attrRule struct {
	macro    string
	pattern  string // without a trailing '/'
	flags    uint8
	prefix   int // bytes of pattern before its first wildcard
	states   []attrSetting
	glob     *glob // the pattern after its literal prefix (path rules) or whole (base-name rules)
	literalN int   // for path rules: bytes compared literally (after a leading '/')
}

// attrFile is one parsed attributes file.
type attrFile struct {
	rules []attrRule
	// uncertain: a line names an attribute git versions disagree on
	// (builtin_*: git 2.40 and later drop the line, older git keeps it).
	uncertain bool
}

// Limits git applies (attr.h).
const (
	attrMaxLine = 2048
	attrMaxFile = 100 << 20
)

const attrBlank = " \t\r\n"

// parseAttrFile parses an attributes file read from the work tree or the
// git dir (fromBlob false: a UTF-8 BOM is dropped, a CR before each LF is
// dropped) or from a blob of the index (fromBlob true: the content ends at
// its first NUL). macroOK allows macro definitions (the root
// .gitattributes and info/attributes); fold matches patterns
// case-insensitively (core.ignorecase).
func parseAttrFile(b []byte, fromBlob, macroOK, fold bool) *attrFile {
	f := &attrFile{}
	if fromBlob {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
	} else {
		b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	}
	for len(b) > 0 {
		line := b
		i := bytes.IndexByte(b, '\n')
		if i >= 0 {
			line, b = b[:i], b[i+1:]
			if !fromBlob {
				line = bytes.TrimSuffix(line, []byte{'\r'})
			}
		} else {
			b = nil
		}
		if j := bytes.IndexByte(line, 0); j >= 0 {
			line = line[:j] // git reads each line as a C string
		}
		f.parseLine(string(line), macroOK, fold)
	}
	return f
}

func (f *attrFile) parseLine(line string, macroOK, fold bool) {
	cp := strings.TrimLeft(line, attrBlank)
	if cp == "" || cp[0] == '#' {
		return
	}
	if len(line) >= attrMaxLine {
		return
	}
	var name, states string
	if q, rest, ok := unquoteC(cp); ok {
		name, states = q, rest
	} else {
		n := strings.IndexAny(cp, attrBlank)
		if n < 0 {
			n = len(cp)
		}
		name, states = cp[:n], cp[n:]
	}
	r := attrRule{}
	if len(name) > len("[attr]") && strings.HasPrefix(name, "[attr]") {
		if !macroOK {
			return
		}
		m := strings.TrimLeft(name[len("[attr]"):], attrBlank)
		if n := strings.IndexAny(m, attrBlank+"\x00"); n >= 0 {
			m = m[:n]
		}
		if !validAttrName(m) {
			return
		}
		if strings.HasPrefix(m, "builtin_") {
			f.uncertain = true
		}
		r.macro = m
	}
	states = strings.TrimLeft(states, attrBlank)
	for states != "" {
		s, rest, ok := parseSetting(states)
		if !ok {
			return // an invalid name drops the whole line
		}
		if strings.HasPrefix(s.name, "builtin_") {
			f.uncertain = true
		}
		r.states = append(r.states, s)
		states = rest
	}
	if r.macro == "" {
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if strings.HasPrefix(name, "!") {
			return // negative patterns are ignored in attributes
		}
		r.compile(name, fold)
	}
	f.rules = append(f.rules, r)
}

// parseSetting reads one setting from s (which starts with it) and
// returns the rest after the blanks that follow it.
func parseSetting(s string) (attrSetting, string, bool) {
	ep := strings.IndexAny(s, attrBlank)
	if ep < 0 {
		ep = len(s)
	}
	tok, rest := s[:ep], strings.TrimLeft(s[ep:], attrBlank)
	// git looks for '=' in the rest of the line: one after the token's end
	// does not count.
	name, value, hasValue := strings.Cut(tok, "=")
	var v attrVal
	switch {
	case strings.HasPrefix(name, "-"):
		name, v = name[1:], attrVal{kind: attrFalse}
	case strings.HasPrefix(name, "!"):
		name, v = name[1:], attrVal{kind: attrUnspecified}
	case hasValue:
		v = attrVal{kind: attrString, val: value}
	default:
		v = attrVal{kind: attrSet}
	}
	if !validAttrName(name) {
		return attrSetting{}, "", false
	}
	return attrSetting{name: name, v: v}, rest, true
}

// validAttrName: not empty, not starting with '-', only [-._0-9A-Za-z].
func validAttrName(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || c == '.' || c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')) {
			return false
		}
	}
	return true
}

// compile sets the rule's pattern fields from p (gitignore's pattern
// parsing, without negation).
func (r *attrRule) compile(p string, fold bool) {
	if strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
		r.flags |= patMustBeDir
	}
	if !strings.Contains(p, "/") {
		r.flags |= patNoDir
	}
	r.prefix = min(simpleLength(p), len(p))
	if strings.HasPrefix(p, "*") && simpleLength(p[1:]) == len(p[1:]) {
		r.flags |= patEndsWith
	}
	r.pattern = p
	if r.flags&patNoDir != 0 {
		r.glob = compileGlob(p, false, fold)
		return
	}
	q, n := p, r.prefix
	if strings.HasPrefix(q, "/") {
		q, n = q[1:], n-1
	}
	r.literalN = n
	r.glob = compileGlob(q[n:], true, fold)
}

// simpleLength is the length of p before its first glob character.
func simpleLength(p string) int {
	if i := strings.IndexAny(p, "*?[\\"); i >= 0 {
		return i
	}
	return len(p)
}

// matches reports whether the rule's pattern matches the file path (not a
// directory), read in the attributes file of directory base ("" = root).
func (r *attrRule) matches(p, base string, fold bool) bool {
	if r.flags&patMustBeDir != 0 {
		return false
	}
	eq := func(a, b string) bool {
		if fold {
			return foldEq(a, b)
		}
		return a == b
	}
	if r.flags&patNoDir != 0 {
		name := p[strings.LastIndexByte(p, '/')+1:]
		switch {
		case r.prefix == len(r.pattern):
			return eq(r.pattern, name)
		case r.flags&patEndsWith != 0:
			lit := r.pattern[1:]
			return len(lit) <= len(name) && eq(lit, name[len(name)-len(lit):])
		}
		return r.glob.match(name)
	}
	if len(p) < len(base)+1 || (base != "" && (p[len(base)] != '/' || !eq(p[:len(base)], base))) {
		return false
	}
	name := p
	if base != "" {
		name = p[len(base)+1:]
	}
	pat := strings.TrimPrefix(r.pattern, "/")
	if r.literalN > 0 {
		if r.literalN > len(name) || !eq(pat[:r.literalN], name[:r.literalN]) {
			return false
		}
		name = name[r.literalN:]
		if r.literalN == len(pat) && name == "" {
			return true
		}
	}
	return r.glob.match(name)
}

// foldEq compares a and b ASCII case-insensitively (git's strncasecmp in
// the C locale).
func foldEq(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

// unquoteC reads a C-quoted string at the start of s (git's
// unquote_c_style: \a \b \f \n \r \t \v \\ \" and three octal digits, the
// first at most 3) and returns it and what follows the closing quote; ok
// is false when s does not start with a well-formed one.
func unquoteC(s string) (string, string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], true
		case '\\':
			if i+1 >= len(s) {
				return "", "", false
			}
			e := s[i+1]
			i += 2
			switch e {
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			case '\\', '"':
				b.WriteByte(e)
			case '0', '1', '2', '3':
				if i+1 >= len(s) || s[i] < '0' || s[i] > '7' || s[i+1] < '0' || s[i+1] > '7' {
					return "", "", false
				}
				b.WriteByte((e-'0')<<6 | (s[i]-'0')<<3 | (s[i+1] - '0'))
				i += 2
			default:
				return "", "", false
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return "", "", false
}

// builtinAttrs is git's built-in attributes file.
var builtinAttrs = parseAttrFile([]byte("[attr]binary -diff -merge -text\n"), false, true, false)

// Attributes answers the attributes git applies to the files of one work
// tree, reading each directory's .gitattributes once, when a path below it
// is first asked about. It is not safe for concurrent use.
type Attributes struct {
	root     string
	ix       *Index
	fold     bool
	readBlob func(oid []byte) ([]byte, error)
	info     *attrFile
	frames   map[string]*attrFile // directory ("" = root) -> its rules
	macros   map[string]*attrRule // nil: not computed since the root's changed
}

// NewAttributes returns the attribute reader of the work tree root whose
// index is ix and whose common git dir holds info/attributes (commonDir;
// "" = none). fold is core.ignorecase. readBlob returns the content of a
// blob (`git cat-file blob`); it is called only for a .gitattributes that
// is in the index but cannot be opened in the work tree (git reads the
// index's then). It may be nil: such a file then makes Conversion inexact.
func NewAttributes(root, commonDir string, ix *Index, fold bool, readBlob func(oid []byte) ([]byte, error)) (*Attributes, error) {
	a := &Attributes{root: root, ix: ix, fold: fold, readBlob: readBlob, frames: map[string]*attrFile{}}
	a.info = &attrFile{}
	if commonDir != "" {
		b, err := readAttrFile(filepath.Join(commonDir, "info", "attributes"), false)
		if err != nil {
			return nil, err
		}
		if b != nil {
			a.info = parseAttrFile(b, false, true, fold)
		}
	}
	return a, nil
}

// Forget drops what was read of directory dir's .gitattributes ("" = the
// root's), which changed: the next question about a path below it reads
// it again.
func (a *Attributes) Forget(dir string) {
	delete(a.frames, dir)
	if dir == "" {
		a.macros = nil
	}
}

// ErrAttrTooLarge is wrapped by a readBlob error for a blob of 100 MiB or
// more: git ignores such an attributes file, and so does Attributes.
var ErrAttrTooLarge = errors.New("attributes file of 100 MiB or more")

// errAttrRead is wrapped by the errors of reading a .gitattributes that
// git would read in a way this package does not (a FIFO, a blob without
// readBlob).
var errAttrRead = errors.New("unreadable attributes file")

// readAttrFile reads an attributes file of the work tree or the git dir as
// git does: nil (and no error) when git would not read it (missing, not
// openable, a symbolic link when nofollow, 100 MiB or more); empty for a
// directory (git opens it and reads nothing).
func readAttrFile(p string, nofollow bool) ([]byte, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if nofollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(p, flags, 0)
	if err != nil {
		return nil, nil // git warns (unless the file is missing) and reads none
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil
	}
	switch {
	case fi.IsDir():
		return []byte{}, nil
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%w: %s is not a regular file", errAttrRead, p)
	case fi.Size() >= attrMaxFile:
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(f, attrMaxFile))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", errAttrRead, p, err)
	}
	return b, nil
}

// frame returns the rules of directory dir's .gitattributes.
func (a *Attributes) frame(dir string) (*attrFile, error) {
	if f, ok := a.frames[dir]; ok {
		return f, nil
	}
	rel := path.Join(dir, ".gitattributes")
	b, err := readAttrFile(filepath.Join(a.root, filepath.FromSlash(rel)), true)
	if err != nil {
		return nil, err
	}
	fromBlob := false
	if b == nil && a.ix != nil {
		// Not in the work tree (or not openable there): git reads the
		// index's.
		if e, ok := a.ix.Lookup(rel); ok {
			if a.readBlob == nil {
				return nil, fmt.Errorf("%w: %s is only in the index", errAttrRead, rel)
			}
			b, err = a.readBlob(e.OID)
			switch {
			case errors.Is(err, ErrAttrTooLarge):
				b = nil
			case err != nil:
				return nil, fmt.Errorf("%w: read %s from the index: %v", errAttrRead, rel, err)
			case len(b) >= attrMaxFile:
				b = nil
			}
			fromBlob = true
		}
	}
	f := &attrFile{}
	if b != nil {
		f = parseAttrFile(b, fromBlob, dir == "", a.fold)
	}
	a.frames[dir] = f
	return f, nil
}

// values returns the attributes git gives the file p (slash-separated,
// relative to the root), by name; an attribute no line decides is absent.
// uncertain reports a rule file git versions read differently.
func (a *Attributes) values(p string) (vals map[string]attrVal, uncertain bool, err error) {
	dirs := []string{""}
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i > 0 {
			dirs = append(dirs, p[:i])
		}
	}
	// The stack, highest priority first: info, the deepest directory up
	// to the root, the built-in rules.
	type frame struct {
		f    *attrFile
		base string
	}
	stack := make([]frame, 0, len(dirs)+2)
	stack = append(stack, frame{a.info, ""})
	for i := len(dirs) - 1; i >= 0; i-- {
		f, err := a.frame(dirs[i])
		if err != nil {
			return nil, false, err
		}
		stack = append(stack, frame{f, dirs[i]})
	}
	stack = append(stack, frame{builtinAttrs, ""})
	if a.macros == nil {
		a.macros = map[string]*attrRule{}
		for _, fr := range stack {
			if fr.base != "" {
				continue // only the root, info and the built-ins define macros
			}
			for i := len(fr.f.rules) - 1; i >= 0; i-- {
				r := &fr.f.rules[i]
				if r.macro != "" && a.macros[r.macro] == nil {
					a.macros[r.macro] = r
				}
			}
		}
	}
	vals = map[string]attrVal{}
	for _, fr := range stack {
		uncertain = uncertain || fr.f.uncertain
		for i := len(fr.f.rules) - 1; i >= 0; i-- {
			r := &fr.f.rules[i]
			if r.macro != "" || !r.matches(p, fr.base, a.fold) {
				continue
			}
			a.fill(vals, r)
		}
	}
	return vals, uncertain, nil
}

// fill applies rule r's settings, the last first, to the attributes not
// decided yet; a macro set to true applies its own settings right away.
func (a *Attributes) fill(vals map[string]attrVal, r *attrRule) {
	todo := make([]*attrSetting, 0, len(r.states))
	push := func(r *attrRule) {
		for i := range r.states {
			todo = append(todo, &r.states[i])
		}
	}
	push(r)
	for len(todo) > 0 {
		s := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if _, decided := vals[s.name]; decided {
			continue
		}
		vals[s.name] = s.v
		if m := a.macros[s.name]; m != nil && s.v.kind == attrSet {
			push(m)
		}
	}
}

// forgetUnder drops what was read of the .gitattributes of every directory
// at or below roots ("" = all): a changed path may have replaced any of
// them (a renamed directory reports only its old and new names).
func (a *Attributes) forgetUnder(roots []string) {
	for dir := range a.frames {
		if coveredBy(dir, roots) {
			a.Forget(dir)
		}
	}
}
