package gitindex

import (
	"bytes"
	"strings"
)

// What git does to a work-tree file's content before it hashes it for
// status (its "clean" direction, convert_to_git): a clean filter, a
// working-tree-encoding, end-of-line conversion (text, eol, crlf,
// core.autocrlf) and $Id$ collapsing (ident). Refresh models the
// end-of-line conversion exactly and leaves to git the paths a filter,
// an encoding or an expanded $Id$ applies to.

// TreeConfig is the configuration that decides how Refresh compares a
// file with its index entry. The zero value is git's default.
type TreeConfig struct {
	// NoFileMode is core.filemode=false: the executable bit is not
	// compared.
	NoFileMode bool
	// IgnoreCase is core.ignorecase: attribute patterns match without
	// regard to ASCII case.
	IgnoreCase bool
	// AutoCRLF is core.autocrlf.
	AutoCRLF AutoCRLF
	// Filters are the filter drivers the configuration defines
	// (filter.<name>.*), lower-cased: a path whose filter attribute names
	// one is answered by git.
	Filters map[string]bool
}

// AutoCRLF is core.autocrlf.
type AutoCRLF uint8

// Values of core.autocrlf.
const (
	AutoCRLFFalse AutoCRLF = iota
	AutoCRLFTrue
	AutoCRLFInput
)

// ParseTreeConfig reads the TreeConfig of cfg (see ParseConfigList);
// reason is set when a value is one git would reject or that cannot be
// read exactly.
func ParseTreeConfig(cfg map[string][]string) (c TreeConfig, reason string) {
	if v, set := last(cfg, "core.filemode"); set {
		b, ok := boolVal(v)
		if !ok {
			return c, "core.filemode=" + v
		}
		c.NoFileMode = !b
	}
	if v, set := last(cfg, "core.ignorecase"); set {
		b, ok := boolVal(v)
		if !ok {
			return c, "core.ignorecase=" + v
		}
		c.IgnoreCase = b
	}
	if v, set := last(cfg, "core.autocrlf"); set {
		if strings.EqualFold(v, "input") {
			c.AutoCRLF = AutoCRLFInput
		} else if b, ok := boolVal(v); ok {
			if b {
				c.AutoCRLF = AutoCRLFTrue
			}
		} else {
			return c, "core.autocrlf=" + v
		}
	}
	for k := range cfg {
		if rest, ok := strings.CutPrefix(k, "filter."); ok {
			if i := strings.LastIndexByte(rest, '.'); i > 0 {
				if c.Filters == nil {
					c.Filters = map[string]bool{}
				}
				c.Filters[rest[:i]] = true
			}
		}
	}
	return c, ""
}

// crlfAction is git's end-of-line decision for one path.
type crlfAction uint8

const (
	crlfUndefined crlfAction = iota
	crlfBinary               // no conversion
	crlfText                 // text (or eol=...): CR before LF removed
	crlfAuto                 // text=auto or core.autocrlf: the same, for text content whose index blob has no CRLF
)

// conversion is what git applies to one path's content when it hashes it.
type conversion struct {
	crlf  crlfAction
	ident bool
	// git is set (to why) when only git can hash the path: a clean
	// filter, a working-tree-encoding, rules git versions read
	// differently.
	git string
}

// conversionOf derives the conversion of a path from its attributes and
// the configuration (git's convert_attrs).
func conversionOf(vals map[string]attrVal, uncertain bool, c TreeConfig) conversion {
	var cv conversion
	if uncertain {
		cv.git = "attributes git versions read differently (builtin_*)"
	}
	cv.crlf = crlfOf(vals["text"])
	if cv.crlf == crlfUndefined {
		cv.crlf = crlfOf(vals["crlf"])
	}
	cv.ident = vals["ident"].kind == attrSet
	if f := vals["filter"]; f.kind == attrString && c.Filters[strings.ToLower(f.val)] {
		cv.git = "filter=" + f.val
	}
	if cv.crlf != crlfBinary {
		if e := vals["eol"]; e.kind == attrString && (e.val == "lf" || e.val == "crlf") {
			if cv.crlf != crlfAuto {
				cv.crlf = crlfText
			}
		}
	}
	switch e := vals["working-tree-encoding"]; e.kind {
	case attrSet, attrFalse:
		cv.git = "working-tree-encoding without a value"
	case attrString:
		if e.val != "" && !strings.EqualFold(e.val, "utf-8") && !strings.EqualFold(e.val, "utf8") {
			cv.git = "working-tree-encoding=" + e.val
		}
	}
	if cv.crlf == crlfUndefined {
		switch c.AutoCRLF {
		case AutoCRLFFalse:
			cv.crlf = crlfBinary
		default:
			cv.crlf = crlfAuto
		}
	}
	return cv
}

// crlfOf reads a text or crlf attribute.
func crlfOf(v attrVal) crlfAction {
	switch v.kind {
	case attrSet:
		return crlfText
	case attrFalse:
		return crlfBinary
	case attrString:
		switch v.val {
		case "input":
			return crlfText
		case "auto":
			return crlfAuto
		}
	}
	return crlfUndefined
}

// textStats are git's counts over a buffer (gather_stats).
type textStats struct {
	nul, loneCR, loneLF, crlf, printable, nonPrintable int
}

func statsOf(b []byte) textStats {
	var s textStats
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				s.crlf++
				i++
			} else {
				s.loneCR++
			}
		case c == '\n':
			s.loneLF++
		case c == 127:
			s.nonPrintable++
		case c < 32:
			switch c {
			case '\b', '\t', '\033', '\014':
				s.printable++
			case 0:
				s.nul++
				s.nonPrintable++
			default:
				s.nonPrintable++
			}
		default:
			s.printable++
		}
	}
	if len(b) > 0 && b[len(b)-1] == '\032' {
		s.nonPrintable-- // a trailing ^Z (EOF) does not count
	}
	return s
}

// binary is git's text-or-binary guess (convert_is_binary).
func (s textStats) binary() bool {
	return s.loneCR > 0 || s.nul > 0 || (s.printable>>7) < s.nonPrintable
}

// sameAsIndex reports whether work-tree content data, converted as git
// converts it for cv, is the blob oid. needGit is set (to why) when only
// git can say.
func sameAsIndex(hashSize int, data, oid []byte, cv conversion) (same bool, needGit string) {
	if cv.git != "" {
		return false, cv.git
	}
	if cv.ident && bytes.Contains(data, []byte("$Id")) {
		return false, "ident"
	}
	if cv.crlf == crlfBinary || len(data) == 0 {
		return bytes.Equal(HashBlob(hashSize, data), oid), ""
	}
	st := statsOf(data)
	if st.crlf == 0 {
		return bytes.Equal(HashBlob(hashSize, data), oid), ""
	}
	if cv.crlf == crlfText {
		out := make([]byte, 0, len(data))
		for i := 0; i < len(data); i++ {
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				continue
			}
			out = append(out, data[i])
		}
		return bytes.Equal(HashBlob(hashSize, out), oid), ""
	}
	// Auto: binary-looking content is not converted. Otherwise git keeps
	// CRLF when the index blob holds CRLF itself (and is text): then the
	// blob is the content as is. Else CRs are dropped (no lone CR is left
	// in text content). So the content is unchanged exactly when either
	// reading gives the blob: as is (the blob has CRLF, git keeps it), or
	// converted (the blob has no CR at all, git converts).
	if asIs := bytes.Equal(HashBlob(hashSize, data), oid); asIs || st.binary() {
		return asIs, ""
	}
	out := make([]byte, 0, len(data))
	for _, c := range data {
		if c != '\r' {
			out = append(out, c)
		}
	}
	return bytes.Equal(HashBlob(hashSize, out), oid), ""
}

// maxConvertRead bounds the file Refresh reads whole to convert it; a
// larger one is answered by git.
const maxConvertRead = 64 << 20
