package op

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/suggest"
)

// Schemas are built for models: every field described, closed sets of
// values as enums, one plain type per field (function-calling APIs refuse
// ["null","array"]), and `required` true to the contract. Struct tags on
// the input types say what Go's types cannot:
//
//	jsonschema:"..."  the field's description
//	enum:"a,b,c"      the values the field (or each item of a list) takes
//	required:"true"   required although the Go field is omitempty (request_id)
//
// Fields every operation shares get a description here when their struct
// leaves it out (commonDescriptions).

// typeSchemas are the schemas of the types whose JSON is not what their Go
// kind says.
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
		reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
		reflect.TypeFor[time.Duration]():   {Type: "integer"},
	}
}

// commonDescriptions describes the fields many operations share.
func commonDescriptions() map[string]string {
	return map[string]string{
		"repo_id":                   "repository id from repository_register",
		"request_id":                "unique id of this write (up to 255 characters); a retry with the same request_id and input replays the first result instead of writing twice",
		"include_latency_breakdown": "also report the latency of each segment (routing, policy, snapshot, execution, receipt) in the result's latency",
		"wait_ms":                   "wait up to this many milliseconds for a busy file or lease instead of failing at once with MUTATION_BUSY (max 30000)",
		"case_insensitive":          "match regardless of letter case",
		"timeout_ms":                "give up after this many milliseconds",
		"approval_id":               "from APPROVAL_REQUIRED, once a person approved it",
	}
}

// inputSchema builds the input schema of t.
func inputSchema(t reflect.Type) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: typeSchemas()})
	if err != nil {
		return nil, err
	}
	shape(s, t, true, commonDescriptions())
	return s, nil
}

// marshalers finds the types reachable from t whose JSON their own
// MarshalJSON or MarshalText decides (an enum kept as an int and written
// as a name): their schema is any value, or a string for MarshalText.
func marshalers(t reflect.Type, seen map[reflect.Type]bool, out map[reflect.Type]*jsonschema.Schema) {
	if seen[t] {
		return
	}
	seen[t] = true
	if _, special := typeSchemas()[t]; special {
		return
	}
	jm := reflect.TypeFor[json.Marshaler]()
	tm := reflect.TypeFor[encoding.TextMarshaler]()
	switch {
	case t.Implements(jm) || reflect.PointerTo(t).Implements(jm):
		out[t] = &jsonschema.Schema{}
		return
	case t.Implements(tm) || reflect.PointerTo(t).Implements(tm):
		out[t] = &jsonschema.Schema{Type: "string"}
		return
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		marshalers(t.Elem(), seen, out)
	case reflect.Struct:
		for i := range t.NumField() {
			marshalers(t.Field(i).Type, seen, out)
		}
	}
}

// outputSchema builds the output schema of t: the shape and types of the
// result, open to fields added later (no additionalProperties: false) and
// with no required list, so a client that validates results against it
// never refuses a result of a newer harnessd.
func outputSchema(t reflect.Type) (*jsonschema.Schema, error) {
	ts := typeSchemas()
	marshalers(t, map[reflect.Type]bool{}, ts)
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: ts})
	if err != nil {
		return nil, err
	}
	shape(s, t, false, nil)
	if s.Type != "object" {
		return nil, fmt.Errorf("output schema of %s has type %q, want object", t, s.Type)
	}
	return s, nil
}

// shape walks s alongside the Go type it was built from and applies the
// struct tags (see above); for inputs it makes every type plain, for
// outputs it opens every object.
func shape(s *jsonschema.Schema, t reflect.Type, input bool, desc map[string]string) {
	if s == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.ValueOf(*s).IsZero() {
		// The empty schema is written `true`, which strict clients (the
		// TypeScript SDK) refuse as a property's schema: say it.
		s.Description = "any JSON value"
	}
	if input {
		plainType(s)
	} else {
		s.Required = nil
		if isFalse(s.AdditionalProperties) {
			s.AdditionalProperties = nil
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		shapeStruct(s, t, input, desc)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() != reflect.Uint8 { // []byte is a string
			shape(s.Items, t.Elem(), input, desc)
		}
	case reflect.Map:
		if !isFalse(s.AdditionalProperties) {
			shape(s.AdditionalProperties, t.Elem(), input, desc)
		}
	}
}

func shapeStruct(s *jsonschema.Schema, t reflect.Type, input bool, desc map[string]string) {
	if _, special := typeSchemas()[t]; special {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			// Embedded: its fields are the parent's (encoding/json).
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				shapeStruct(s, ft, input, desc)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		p := s.Properties[name]
		if p == nil {
			continue
		}
		if e := f.Tag.Get("enum"); e != "" {
			vals := []any{}
			for v := range strings.SplitSeq(e, ",") {
				vals = append(vals, v)
			}
			target := p
			if p.Items != nil && (p.Type == "array" || slices.Contains(p.Types, "array")) {
				target = p.Items
			}
			target.Enum = vals
		}
		if input && f.Tag.Get("required") == "true" && !slices.Contains(s.Required, name) {
			s.Required = append(s.Required, name)
		}
		if p.Description == "" && desc != nil {
			p.Description = desc[name]
		}
		shape(p, f.Type, input, desc)
	}
}

// plainType makes ["null", T] the plain T: a JSON null is read as the
// field being absent (Validate drops null members).
func plainType(s *jsonschema.Schema) {
	if len(s.Types) == 0 {
		return
	}
	var kept []string
	for _, t := range s.Types {
		if t != "null" {
			kept = append(kept, t)
		}
	}
	if len(kept) == 1 {
		s.Type, s.Types = kept[0], nil
	} else {
		s.Types = kept
	}
}

func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}

// titleOf makes a tool's title from its name: git_status → Git status.
func titleOf(name string) string {
	w := strings.Split(name, "_")
	if len(w) > 0 && w[0] != "" {
		w[0] = strings.ToUpper(w[0][:1]) + w[0][1:]
	}
	return strings.Join(w, " ")
}

// dropNulls removes the members whose value is null from every object of
// v (a JSON value decoded into any): an optional field sent as null is
// treated as absent. It reports whether it removed any.
func dropNulls(v any) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				changed = true
				continue
			}
			if dropNulls(e) {
				changed = true
			}
		}
	case []any:
		for _, e := range x {
			if dropNulls(e) {
				changed = true
			}
		}
	}
	return changed
}

// fieldError returns the first unknown or missing field of inst against s
// (in a stable order: each object's unknown fields, then its missing
// ones, then its members in name order), with a message that names the
// fix: the closest valid field, or the list of valid ones. where is the
// JSON path so far ("" at the top).
func fieldError(opName, where string, inst any, s *jsonschema.Schema) *errs.Error {
	if s == nil {
		return nil
	}
	if e := typeError(opName, where, inst, s); e != nil {
		return e
	}
	switch x := inst.(type) {
	case map[string]any:
		if s.Properties == nil {
			return nil
		}
		at := opName
		if where != "" {
			at += ": " + where
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		// Unknown fields first: a guess for a missing field ("pattern"
		// for "query") is answered with the field to use.
		if isFalse(s.AdditionalProperties) {
			for _, k := range keys {
				if _, ok := s.Properties[k]; !ok {
					return unknownField(at, where, k, s)
				}
			}
		}
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				d := ""
				if p := s.Properties[r]; p != nil && p.Description != "" {
					d = " (" + p.Description + ")"
				}
				code := errs.InvalidArgument
				if r == "request_id" && where == "" {
					code = errs.RequestIDRequired
				}
				return errs.New(code, "%s: missing required field %q%s", at, r, d).With("field", joinPath(where, r))
			}
		}
		for _, k := range keys {
			if e := fieldError(opName, joinPath(where, k), x[k], s.Properties[k]); e != nil {
				return e
			}
		}
	case string:
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, any(x)) {
			valid := make([]string, 0, len(s.Enum))
			for _, v := range s.Enum {
				valid = append(valid, fmt.Sprint(v))
			}
			msg := fmt.Sprintf("%s: %s: %s is not a valid value (valid: %s)", opName, where, echo(x), strings.Join(valid, ", "))
			if g := closestShort(x, valid); g != "" {
				msg = fmt.Sprintf("%s: %s: %s is not a valid value: did you mean %q? (valid: %s)", opName, where, echo(x), g, strings.Join(valid, ", "))
			}
			return errs.New(errs.InvalidArgument, "%s", msg).With("field", where).With("valid_values", valid)
		}
	case []any:
		for i, e := range x {
			if err := fieldError(opName, fmt.Sprintf("%s[%d]", where, i), e, s.Items); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinPath(where, k string) string {
	if where == "" {
		return k
	}
	return where + "." + k
}

// aliases are the names agents guess for harnessd's fields (from other
// tools' APIs), with the fields they mean.
func aliases() map[string][]string {
	return map[string][]string{
		"offset":        {"offset_line"},
		"start_line":    {"offset_line"},
		"line":          {"offset_line"},
		"limit":         {"max_lines", "max_results", "max_bytes"},
		"lines":         {"max_lines"},
		"pattern":       {"query"},
		"regexp":        {"query", "regex"},
		"q":             {"query"},
		"text":          {"query", "content", "new_text"},
		"old_string":    {"old_text"},
		"new_string":    {"new_text"},
		"old":           {"old_text"},
		"new":           {"new_text"},
		"replace_all":   {"all"},
		"contents":      {"content"},
		"data":          {"content"},
		"tool":          {"op", "kind"},
		"operation":     {"op", "tool", "kind"},
		"name":          {"op"},
		"type":          {"op", "kind"},
		"file":          {"path"},
		"file_path":     {"path"},
		"filepath":      {"path"},
		"filename":      {"path"},
		"files":         {"paths"},
		"cmd":           {"argv"},
		"command":       {"argv"},
		"args":          {"argv", "arguments"},
		"repo":          {"repo_id"},
		"repository":    {"repo_id"},
		"repository_id": {"repo_id"},
		"id":            {"job_id", "run_id", "repo_id", "approval_id"},
		"status":        {"state"},
		"ref":           {"rev"},
		"revision":      {"rev"},
		"timeout":       {"timeout_s", "timeout_ms"},
		"message":       {"message", "note"},
	}
}

// unknownField is the error of an unknown member k of an object.
func unknownField(at, where, k string, s *jsonschema.Schema) *errs.Error {
	valid := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		valid = append(valid, n)
	}
	sort.Strings(valid)
	guess := closestShort(k, valid)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: unknown field %s", at, echo(k))
	switch {
	case guess != "":
		fmt.Fprintf(&b, ": did you mean %q?", guess)
	case k == "repo_id":
		b.WriteString(": this tool does not take repo_id (what it names already knows its repository)")
	}
	fmt.Fprintf(&b, " (valid fields: %s)", strings.Join(valid, ", "))
	e := errs.New(errs.InvalidArgument, "%s", b.String()).With("field", clip(joinPath(where, k), maxEcho)).With("valid_fields", valid)
	if guess != "" {
		e = e.With("did_you_mean", guess)
	}
	return e
}

// closest returns the valid field k most likely means: the tool's own
// fields only, a meaning (aliases, either way round) before a spelling
// (suggest.Field).
func closest(k string, valid []string) string {
	return suggest.Field(k, valid, aliases())
}
