package op

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/harnessd/harnessd/contract/errs"
)

// maxEcho bounds an invalid value quoted back in an INVALID_ARGUMENT
// message: a client that sent 5 MiB in the wrong place gets a few hundred
// bytes back, never its value doubled (an answer past the client's buffer
// ends its session).
const maxEcho = 200

// echo renders v, an argument value quoted back in an error message: a
// string quoted, anything else as compact JSON; past maxEcho bytes it is
// cut (at a character boundary) and ends with an ellipsis and its whole
// size.
func echo(v any) string {
	var s string
	if str, ok := v.(string); ok {
		s = strconv.Quote(str)
	} else if b, err := json.Marshal(v); err == nil {
		s = string(b)
	} else {
		s = fmt.Sprint(v)
	}
	return clip(s, maxEcho)
}

// clip cuts s to at most n bytes at a character boundary, marking the cut
// with an ellipsis and the whole size.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + sizeText(len(s)) + ")"
}

// sizeText says how big a rendered value is, in bytes, KiB or MiB.
func sizeText(n int) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// maxValidatorMessage bounds a schema validator's message, which quotes
// the invalid value itself (Go syntax, unbounded): the head names the
// field, the tail the rule broken, and the middle is elided.
const maxValidatorMessage = 600

// clipMessage keeps a long validator message's head and tail and says how
// much of the middle it left out.
func clipMessage(s string) string {
	if len(s) <= maxValidatorMessage {
		return s
	}
	head, tail := maxValidatorMessage*2/3, maxValidatorMessage/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	from := len(s) - tail
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	return s[:head] + " … (" + sizeText(from-head) + " elided) … " + s[from:]
}

// jsonType names the JSON type of a decoded value the way a schema does
// ("integer" for a whole number).
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// typeError returns the INVALID_ARGUMENT for inst when s allows none of
// its types, naming the field, the types wanted and the one sent, and
// quoting at most maxEcho bytes of the value; nil when the type fits or s
// says nothing of types.
func typeError(opName, where string, inst any, s *jsonschema.Schema) *errs.Error {
	want := s.Types
	if s.Type != "" {
		want = []string{s.Type}
	}
	if len(want) == 0 {
		return nil
	}
	got := jsonType(inst)
	if slices.Contains(want, got) || (got == "integer" && slices.Contains(want, "number")) {
		return nil
	}
	at := opName
	if where != "" {
		at += ": " + where
	}
	e := errs.New(errs.InvalidArgument, "%s: want %s, got %s %s", at, strings.Join(want, " or "), article(got), echo(inst))
	if where != "" {
		e = e.With("field", where)
	}
	return e
}

// article puts "a" or "an" before a JSON type's name.
func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	case "null":
		return t
	}
	return "a " + t
}

// maxGuess is the longest invalid name or value worth a "did you mean": a
// longer one is not a slip of the fingers, and comparing it costs time.
const maxGuess = 64

// closestShort is closest for a k short enough to be a slip, else "".
func closestShort(k string, valid []string) string {
	if len(k) > maxGuess {
		return ""
	}
	return closest(k, valid)
}
