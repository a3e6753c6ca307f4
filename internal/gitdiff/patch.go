package gitdiff

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// ErrUnsupported is the cause of every file WritePatch will not print
// because its output could differ from git's: the caller runs git instead.
var ErrUnsupported = errors.New("gitdiff: not printed in process")

func unsupported(why string) error { return &unsupportedError{why} }

type unsupportedError struct{ why string }

func (e *unsupportedError) Error() string { return "gitdiff: " + e.why }
func (e *unsupportedError) Unwrap() error { return ErrUnsupported }

// Modes of regular files, the only ones WritePatch prints.
const (
	ModeRegular    = 0o100644
	ModeExecutable = 0o100755
)

// File is one file of a patch: its two sides as `git diff` compares them.
type File struct {
	// Path is the slash-separated path relative to the top of the work
	// tree, printed as a/<Path> and b/<Path>.
	Path string
	// OldMode and NewMode are the sides' modes; 0 means the side does not
	// exist (a created or a deleted file).
	OldMode, NewMode uint32
	// OldID and NewID are the abbreviated object names of the index line
	// (git's find_unique_abbrev of each side's blob, "0000000"-like for a
	// missing side).
	OldID, NewID string
	// Old and New are the contents (nil for a missing side).
	Old, New []byte
}

// binaryProbe is how much of a file git looks at for a NUL to call it
// binary (FIRST_FEW_BYTES).
const binaryProbe = 8000

// IsBinary is git's buffer_is_binary: a NUL in the first 8000 bytes.
func IsBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binaryProbe)], 0) >= 0
}

// needsQuote reports whether git prints p quoted (quote_c_style with
// core.quotePath=false): a control character, DEL, '"' or '\\'.
func needsQuote(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '"' || c == '\\' {
			return true
		}
	}
	return false
}

// WritePatch appends f's part of a `git diff` patch (run with
// --no-ext-diff --no-textconv --no-color, a/ and b/ prefixes, no diff
// driver or other attribute for the path) and returns the lines it adds
// and deletes, as --numstat counts them with the stat options (which
// differ from o when -U was given). Equal sides print nothing. It returns
// an error wrapping ErrUnsupported, and appends nothing, for what git
// prints differently from a text hunk: a binary side, a mode change, a
// file that is not a regular one, a path git quotes, or a side larger
// than xdiff takes.
func WritePatch(w []byte, f File, o, statOpts Options) ([]byte, Stat, error) {
	switch {
	case f.OldMode == 0 && f.NewMode == 0:
		return w, Stat{}, unsupported("neither side exists")
	case f.OldMode != 0 && f.OldMode != ModeRegular && f.OldMode != ModeExecutable,
		f.NewMode != 0 && f.NewMode != ModeRegular && f.NewMode != ModeExecutable:
		return w, Stat{}, unsupported("not a regular file")
	case f.OldMode != 0 && f.NewMode != 0 && f.OldMode != f.NewMode:
		return w, Stat{}, unsupported("mode change")
	case needsQuote(f.Path):
		return w, Stat{}, unsupported("path git quotes")
	case f.Path == "" || strings.HasPrefix(f.Path, "/"):
		return w, Stat{}, unsupported("path not relative")
	case f.OldMode != 0 && IsBinary(f.Old), f.NewMode != 0 && IsBinary(f.New):
		return w, Stat{}, unsupported("binary file")
	case len(f.Old) > MaxSize || len(f.New) > MaxSize:
		return w, Stat{}, unsupported("file larger than xdiff's limit")
	}
	if f.OldMode == f.NewMode && bytes.Equal(f.Old, f.New) {
		return w, Stat{}, nil
	}
	r, err := diff(f.Old, f.New, o)
	if err != nil {
		return w, Stat{}, unsupported(err.Error())
	}
	st := stat(r.script)
	if statOpts.Context != o.Context && (statOpts.Context == 0 || o.Context == 0) {
		// Only a context of 0 changes the script (git trims the common
		// tail first): count the one --numstat computes.
		if st, err = Count(f.Old, f.New, statOpts); err != nil {
			return w, Stat{}, unsupported(err.Error())
		}
	}

	a, b := "a/"+f.Path, "b/"+f.Path
	w = append(w, "diff --git "...)
	w = append(w, a...)
	w = append(w, ' ')
	w = append(w, b...)
	w = append(w, '\n')
	switch {
	case f.OldMode == 0:
		w = append(w, "new file mode "...)
		w = appendMode(w, f.NewMode)
		a = "/dev/null"
	case f.NewMode == 0:
		w = append(w, "deleted file mode "...)
		w = appendMode(w, f.OldMode)
		b = "/dev/null"
	}
	w = append(w, "index "...)
	w = append(w, f.OldID...)
	w = append(w, ".."...)
	w = append(w, f.NewID...)
	if f.OldMode == f.NewMode {
		w = append(w, ' ')
		w = appendMode(w, f.OldMode)
	} else {
		w = append(w, '\n')
	}
	if len(r.script) == 0 {
		return w, st, nil
	}
	w = appendLabel(w, "--- ", a)
	w = appendLabel(w, "+++ ", b)
	return r.emit(w, o), st, nil
}

func appendMode(w []byte, mode uint32) []byte {
	s := strconv.FormatUint(uint64(mode), 8)
	for i := len(s); i < 6; i++ {
		w = append(w, '0')
	}
	w = append(w, s...)
	return append(w, '\n')
}

// appendLabel appends a ---/+++ line; git ends it with a tab when the
// label holds a space.
func appendLabel(w []byte, prefix, label string) []byte {
	w = append(w, prefix...)
	w = append(w, label...)
	if strings.IndexByte(label, ' ') >= 0 {
		w = append(w, '\t')
	}
	return append(w, '\n')
}
