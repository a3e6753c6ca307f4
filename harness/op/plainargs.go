package op

import (
	"encoding/json"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// Plain arguments skip the schema's validator, not its verdict: when
// every member of the arguments names a property whose schema says only
// its type (a string, an integer, a boolean, a number), each value is a
// literal of that type (no null), no member comes twice and every
// required one is there, the validator can only accept them, no alias or
// null applies, and checkAgainst would return them unchanged. The typed
// decode that follows is the same either way. Everything else (an alias,
// a null, an array, an unknown field, a malformed value) takes the full
// check, so errors keep their codes and messages. For a small read this
// halves the cost of the decode (the validator walks a decoded copy of
// the arguments).

// plainKind is the JSON type a plain property takes.
type plainKind uint8

const (
	plainNone plainKind = iota
	plainString
	plainInteger
	plainNumber
	plainBoolean
)

// plainSchema is what a schema's plain check needs: its plain properties
// and its required ones. nil when the schema itself says more than
// properties, required and a closed object.
type plainSchema struct {
	props    map[string]plainKind
	required []string
}

// constrainsNothing reports whether k is a keyword of a plain property or object
// schema that constrains nothing.
func constrainsNothing(k string) bool {
	switch k {
	case "type", "description", "title", "default", "examples":
		return true
	}
	return false
}

// plainOf returns the plain check of s, nil when it has none.
func plainOf(s *jsonschema.Schema) *plainSchema {
	if s == nil || s.Type != "object" {
		return nil
	}
	top, ok := keywords(s)
	if !ok {
		return nil
	}
	for _, k := range top {
		if !constrainsNothing(k) && k != "properties" && k != "required" && k != "additionalProperties" {
			return nil
		}
	}
	if a := s.AdditionalProperties; a == nil || a.Not == nil {
		return nil // an open object: unknown fields need the full check's error
	}
	p := &plainSchema{props: map[string]plainKind{}, required: s.Required}
	for name, prop := range s.Properties {
		if k := plainKindOf(prop); k != plainNone {
			p.props[name] = k
		}
	}
	for _, r := range s.Required {
		if p.props[r] == plainNone {
			return nil // a required member that is never plain
		}
	}
	return p
}

// plainKindOf is the kind of a property that says only its type.
func plainKindOf(s *jsonschema.Schema) plainKind {
	keys, ok := keywords(s)
	if !ok {
		return plainNone
	}
	for _, k := range keys {
		if !constrainsNothing(k) {
			return plainNone
		}
	}
	switch s.Type {
	case "string":
		return plainString
	case "integer":
		return plainInteger
	case "number":
		return plainNumber
	case "boolean":
		return plainBoolean
	}
	return plainNone
}

// keywords returns the keywords s sets.
func keywords(s *jsonschema.Schema) ([]string, bool) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys, true
}

// accepts reports whether args (valid JSON or not) are plain for p: then
// the full check accepts them unchanged.
func (p *plainSchema) accepts(args []byte) bool {
	if p == nil || !json.Valid(args) {
		return false
	}
	i := skipSpace(args, 0)
	if i >= len(args) || args[i] != '{' {
		return false
	}
	var seen [8]string // the members so far (a call has few): duplicates
	n, have := 0, 0
	i = skipSpace(args, i+1)
	if i < len(args) && args[i] == '}' {
		return len(p.required) == 0 && skipSpace(args, i+1) == len(args)
	}
	for {
		key, j, ok := plainKey(args, i)
		if !ok {
			return false
		}
		kind := p.props[key]
		if kind == plainNone || n == len(seen) || slices.Contains(seen[:n], key) {
			return false
		}
		seen[n] = key
		n++
		if slices.Contains(p.required, key) {
			have++
		}
		j = skipSpace(args, j)
		if j >= len(args) || args[j] != ':' {
			return false
		}
		j = skipSpace(args, j+1)
		if j, ok = plainValue(args, j, kind); !ok {
			return false
		}
		j = skipSpace(args, j)
		if j >= len(args) {
			return false
		}
		if args[j] == '}' {
			return have == len(p.required) && skipSpace(args, j+1) == len(args)
		}
		if args[j] != ',' {
			return false
		}
		i = skipSpace(args, j+1)
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainKey reads a member name at b[i] without escapes (a name with one is
// not plain: the full check decodes it).
func plainKey(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			return "", j, false
		case '"':
			return string(b[i+1 : j]), j + 1, true
		}
	}
	return "", len(b), false
}

// plainValue skips a literal of kind at b[i] (b is valid JSON).
func plainValue(b []byte, i int, kind plainKind) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch kind {
	case plainString:
		if b[i] != '"' {
			return i, false
		}
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, true
			}
		}
		return len(b), false
	case plainBoolean:
		for _, lit := range []string{"true", "false"} {
			if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
				return i + len(lit), true
			}
		}
		return i, false
	case plainInteger, plainNumber:
		j := i
		if j < len(b) && b[j] == '-' {
			j++
		}
		start := j
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || kind == plainNumber && (b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-')) {
			j++
		}
		// An integer of more digits than a float64 holds exactly is left
		// to the full check (the validator reads numbers as float64).
		return j, j > start && (kind == plainNumber || j-start <= 15)
	}
	return i, false
}
