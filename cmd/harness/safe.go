package main

import (
	"os"
	"reflect"
	"unicode/utf8"

	"github.com/harnessd/harnessd/internal/textsafe"
	"github.com/harnessd/harnessd/messages"
)

// What the CLI prints of the daemon's answers holds agent-supplied text
// (an argv, a path, a summary, a reason, a goal, a note): a carriage
// return, an escape sequence, a bidi override or a line break in it would
// make the person read something else than what runs. Every such string
// goes through textsafe before it is printed in a table or a text; --json
// prints the answer exactly (JSON escapes the control characters itself).

// esc is an agent-supplied string for a table cell or a one-line field.
func esc(s string) string { return textsafe.Line(s) }

// clip is esc(s) cut to n characters (never inside one), "…" marking the
// cut.
func clip(s string, n int) string {
	s = esc(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for k < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[:i] + "…"
}

// escAll replaces every string reachable from v (a pointer) with
// textsafe.Line of it, but a run note's text with textsafe.Text: the run
// views (internal/runview) show a note's lines indented under it.
func escAll(v any) {
	escValue(reflect.ValueOf(v), textsafe.Line)
}

// noteType is the type whose Text keeps its lines.
var noteType = reflect.TypeFor[messages.RunObservation]()

func escValue(v reflect.Value, f func(string) string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			escValue(v.Elem(), f)
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		// What an interface holds is a copy: escape a settable one and put
		// it back.
		e := reflect.New(v.Elem().Type()).Elem()
		e.Set(v.Elem())
		escValue(e, f)
		if v.CanSet() {
			v.Set(e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			switch {
			case !sf.IsExported():
			case v.Type() == noteType && sf.Name == "Text":
				escValue(v.Field(i), textsafe.Text)
			default:
				escValue(v.Field(i), textsafe.Line)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // raw bytes (json.RawMessage): not shown as text
		}
		for i := range v.Len() {
			escValue(v.Index(i), f)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			escValue(e, f)
			nk := k
			if k.Kind() == reflect.String {
				if t := textsafe.Line(k.String()); t != k.String() {
					v.SetMapIndex(k, reflect.Value{})
					nk = reflect.ValueOf(t).Convert(k.Type())
				}
			}
			v.SetMapIndex(nk, e)
		}
	case reflect.String:
		if t := f(v.String()); t != v.String() && v.CanSet() {
			v.SetString(t)
		}
	}
}

// logEscaper makes a job's output safe for a terminal, chunk by chunk:
// line breaks and tabs stay, every other control and format character is
// escaped (textsafe.Text); a UTF-8 sequence cut at a chunk's end waits
// for the rest in the next chunk.
type logEscaper struct{ pending string }

// chunk returns the escaped text of data after what was pending; final
// flushes a cut sequence (as the bytes it is).
func (e *logEscaper) chunk(data []byte, final bool) []byte {
	s := e.pending + string(data)
	e.pending = ""
	if !final {
		if cut := textsafe.Partial(s); cut > 0 {
			s, e.pending = s[:len(s)-cut], s[len(s)-cut:]
		}
	}
	return []byte(textsafe.Text(s))
}

// terminal reports whether w is a terminal.
func terminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
