package op

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"mvdan.cc/sh/v3/syntax"

	"github.com/harnessd/harnessd/contract/errs"
)

// Field aliases: the names models already use for harnessd's fields (from
// Claude Code's, Codex's, Gemini CLI's and OpenCode's tools) are accepted
// and rewritten to the canonical name before anything reads the arguments,
// so a first guess costs no round trip. The rewriting is driven by the
// operation's input schema, never by a list of operations:
//
//   - An alias is renamed to the first of its fields that the object's
//     schema declares, at every object level (the top, and nested objects
//     such as apply_patch's operations[]), when the schema does not declare
//     the alias itself (job_logs' own offset stays job_logs' offset) and the
//     object does not also hold the canonical name (both: INVALID_ARGUMENT).
//   - A camelCase name (filePath, oldString) is read as its snake_case
//     form (file_path, old_string), then as above.
//   - Some values change with the name: seconds and milliseconds are
//     converted, one string where a list is expected becomes a list of one,
//     and a shell string `command` becomes argv when it is a plain simple
//     command (split into words, never evaluated).
//   - Shapes: an object whose schema edits through operations[] (apply_patch,
//     target_apply_patch, a proposal) and that holds an edit's own fields
//     instead (Edit-style file_path, old_string, new_string, replace_all;
//     Write-style file_path, content) becomes one operation: replace when it
//     names old text, write when it names content.
//
// The rewriting happens in the pipeline's decode, before the request hash
// and the gate see the input: a retry that spells the fields canonically
// is the same request. docs/mcp.md lists every alias.

// conv is how an alias's value changes on the way to its field.
type conv uint8

const (
	asIs  conv = iota
	msToS      // milliseconds to seconds, rounded up
	sToMs      // seconds to milliseconds
	list       // a single string becomes a list of one
	words      // a command string becomes argv (a plain simple command only)
)

// aliasTarget is one field an alias may mean, and how its value changes.
type aliasTarget struct {
	field string
	conv  conv
}

// fieldAlias is one alias and the fields it may mean, in order: the first
// the object's schema declares is used.
type fieldAlias struct {
	name string
	to   []aliasTarget
}

func to(fields ...string) []aliasTarget {
	out := make([]aliasTarget, len(fields))
	for i, f := range fields {
		out[i] = aliasTarget{field: f}
	}
	return out
}

// fieldAliases is the table: every alias harnessd accepts, in the order
// they are applied. Left out as ambiguous: timeout (milliseconds in Claude
// Code's Bash, seconds elsewhere: the error names timeout_ms or timeout_s),
// regex (search's own boolean), text (content or new_text), args (argv
// with or without the program; it completes a string command instead).
func fieldAliases() []fieldAlias {
	return []fieldAlias{
		{"file_path", to("path")},
		{"filepath", to("path")},
		{"file", to("path")},
		{"filename", to("path")},
		{"absolute_path", to("path")},
		{"target_file", to("path")},
		{"files", []aliasTarget{{"paths", list}}},
		{"file_paths", []aliasTarget{{"paths", list}}},
		{"path", []aliasTarget{{"paths", list}}},
		{"old_string", to("old_text")},
		{"old_str", to("old_text")},
		{"new_string", to("new_text")},
		{"new_str", to("new_text")},
		{"replace_all", to("all")},
		{"contents", to("content")},
		{"file_text", to("content")},
		{"offset", to("offset_line")},
		{"start_line", to("offset_line")},
		{"limit", to("max_lines", "max_results", "max_entries")},
		{"head_limit", to("max_results")},
		{"max_count", to("max_results")},
		{"command", []aliasTarget{{"argv", words}}},
		{"cmd", []aliasTarget{{"argv", words}}},
		{"working_directory", to("cwd")},
		{"workdir", to("cwd")},
		{"work_dir", to("cwd")},
		{"directory", to("cwd")},
		{"dir", to("cwd")},
		{"timeout_seconds", []aliasTarget{{"timeout_ms", sToMs}, {"timeout_s", asIs}}},
		{"timeout_secs", []aliasTarget{{"timeout_ms", sToMs}, {"timeout_s", asIs}}},
		{"timeout_sec", []aliasTarget{{"timeout_ms", sToMs}, {"timeout_s", asIs}}},
		{"timeout_s", []aliasTarget{{"timeout_ms", sToMs}}},
		{"timeout_ms", []aliasTarget{{"timeout_s", msToS}}},
		{"pattern", to("query")},
		{"q", to("query")},
		{"include", to("glob")},
		{"glob_pattern", to("glob")},
		{"file_pattern", to("glob")},
		{"ignore_case", to("case_insensitive")},
		{"-i", to("case_insensitive")},
		{"repo", to("repo_id")},
		{"repository", to("repo_id")},
		{"repository_id", to("repo_id")},
		{"target", to("target_id")},
		{"msg", to("message")},
		{"commit_message", to("message")},
		{"ref", to("rev")},
		{"revision", to("rev")},
		{"commit", to("rev")},
		{"cached", to("staged")},
		{"context_lines", to("context")},
		{"unified", to("context")},
	}
}

// aliasTable is the alias table compiled for one operation: only the
// aliases one of whose fields its input schema declares somewhere.
type aliasTable struct {
	list []fieldAlias
	rank map[string]int // alias -> its index in list
	// maybe has a bit for each (length, first byte) of an alias: most
	// names are told apart from every alias without a map lookup.
	maybe [32]uint64
}

// mayBe reports whether k could be an alias of t.
func (t *aliasTable) mayBe(k string) bool {
	return k != "" && t.maybe[len(k)&31]&(1<<(k[0]&63)) != 0
}

// compileAliases returns the aliases that may apply to inputs of s.
func compileAliases(s *jsonschema.Schema) *aliasTable {
	fields := map[string]bool{}
	schemaFields(s, fields, 0)
	t := &aliasTable{rank: map[string]int{}}
	for _, a := range fieldAliases() {
		if slices.ContainsFunc(a.to, func(x aliasTarget) bool { return fields[x.field] }) {
			t.rank[a.name] = len(t.list)
			t.list = append(t.list, a)
			t.maybe[len(a.name)&31] |= 1 << (a.name[0] & 63)
		}
	}
	return t
}

// schemaFields collects the property names declared anywhere in s.
func schemaFields(s *jsonschema.Schema, into map[string]bool, depth int) {
	if s == nil || depth > 16 {
		return
	}
	for k, p := range s.Properties {
		into[k] = true
		schemaFields(p, into, depth+1)
	}
	schemaFields(s.Items, into, depth+1)
}

// aliasError is a refused rewrite: at names the field (a JSON path).
type aliasError struct {
	at, msg, alias, field string
}

// in prefixes the error's path with the member or index it was found in.
func (e *aliasError) in(parent string) *aliasError {
	switch {
	case e.at == "":
		e.at = parent
	case strings.HasPrefix(e.at, "["):
		e.at = parent + e.at
	default:
		e.at = parent + "." + e.at
	}
	return e
}

func (e *aliasError) err(opName string) error {
	at := opName
	if e.at != "" {
		at += ": " + e.at
	}
	out := errs.New(errs.InvalidArgument, "%s: %s", at, e.msg).With("field", joinPath(e.at, e.alias))
	if e.field != "" {
		out = out.With("did_you_mean", e.field)
	}
	return out
}

// Alias rewrites the field aliases of args (a JSON object) to the
// operation's own field names. It returns args itself (absent arguments
// as {}) when no alias applies; a refused rewrite (an alias beside its
// canonical field, a shell string where argv is expected) is
// INVALID_ARGUMENT naming the field.
func (o *Op) Alias(args json.RawMessage) (json.RawMessage, error) {
	args = normArgs(args)
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		return nil, errs.New(errs.InvalidArgument, "%s: arguments are not valid JSON: %v", o.Name, err)
	}
	changed, err := o.rewriteAliases(inst, o.InputSchema)
	if err != nil || !changed {
		return args, err
	}
	return json.Marshal(inst)
}

// rewriteAliases rewrites inst (a JSON value decoded into any) in place
// against s and reports whether it changed anything.
func (o *Op) rewriteAliases(inst any, s *jsonschema.Schema) (bool, error) {
	if o.aliases == nil {
		return false, nil
	}
	changed, e := o.aliases.value(inst, s, 0)
	if e != nil {
		return false, e.err(o.Name)
	}
	return changed, nil
}

// maxAliasDepth bounds the recursion over untrusted JSON.
const maxAliasDepth = 32

// value rewrites v against s. It allocates nothing when no alias applies.
func (t *aliasTable) value(v any, s *jsonschema.Schema, depth int) (bool, *aliasError) {
	if s == nil || depth > maxAliasDepth {
		return false, nil
	}
	switch x := v.(type) {
	case map[string]any:
		return t.object(x, s, depth)
	case []any:
		if s.Items == nil {
			return false, nil
		}
		changed := false
		for i, e := range x {
			c, err := t.value(e, s.Items, depth+1)
			if err != nil {
				return false, err.in(fmt.Sprintf("[%d]", i))
			}
			changed = changed || c
		}
		return changed, nil
	}
	return false, nil
}

// object rewrites one object, then its members (in name order where
// several could fail, so the error is the same every time).
func (t *aliasTable) object(obj map[string]any, s *jsonschema.Schema, depth int) (bool, *aliasError) {
	if s.Properties == nil {
		return false, nil
	}
	changed := false
	if t.wants(obj, s) {
		c, err := t.rename(obj, s, depth)
		if err != nil {
			return false, err
		}
		changed = c
	}
	var firstKey string
	var firstErr *aliasError
	for k, v := range obj {
		switch v.(type) {
		case map[string]any, []any:
		default:
			continue
		}
		c, err := t.value(v, s.Properties[k], depth+1)
		if err != nil {
			if firstErr == nil || k < firstKey {
				firstKey, firstErr = k, err
			}
			continue
		}
		changed = changed || c
	}
	if firstErr != nil {
		return false, firstErr.in(firstKey)
	}
	return changed, nil
}

// wants reports, without allocating, whether obj may need a rewrite: a
// member named like an alias or in camelCase, or an edit's own fields
// where operations[] is expected.
func (t *aliasTable) wants(obj map[string]any, s *jsonschema.Schema) bool {
	for k := range obj {
		if t.mayBe(k) {
			if _, ok := t.rank[k]; ok && s.Properties[k] == nil {
				return true
			}
		}
		if hasUpper(k) && s.Properties[k] == nil {
			return true
		}
	}
	if it := editItems(s); it != nil {
		if _, ok := obj["operations"]; !ok {
			for k := range obj {
				if s.Properties[k] == nil {
					return true
				}
			}
		}
	}
	return false
}

// rename applies the camelCase reading, the shape guess and the aliases
// to obj itself.
func (t *aliasTable) rename(obj map[string]any, s *jsonschema.Schema, depth int) (bool, *aliasError) {
	changed := false
	for _, k := range sortedKeys(obj) {
		if !hasUpper(k) || s.Properties[k] != nil {
			continue
		}
		sn := snake(k)
		if _, known := t.rank[sn]; s.Properties[sn] == nil && !known && !t.editField(sn, s) {
			continue
		}
		if _, taken := obj[sn]; taken {
			return false, &aliasError{msg: fmt.Sprintf("%q and %q are both given: send only %q", k, sn, sn), alias: k, field: sn}
		}
		obj[sn] = obj[k]
		delete(obj, k)
		changed = true
	}
	if c, err := t.guessEdit(obj, s, depth); err != nil {
		return false, err
	} else if c {
		changed = true
	}
	var found []string
	for k := range obj {
		if _, ok := t.rank[k]; ok && s.Properties[k] == nil {
			found = append(found, k)
		}
	}
	sort.Slice(found, func(i, j int) bool { return t.rank[found[i]] < t.rank[found[j]] })
	for _, k := range found {
		a := t.list[t.rank[k]]
		i := slices.IndexFunc(a.to, func(x aliasTarget) bool { return s.Properties[x.field] != nil })
		if i < 0 {
			continue
		}
		target := a.to[i]
		if _, taken := obj[target.field]; taken {
			return false, &aliasError{msg: fmt.Sprintf("%q and %q are both given (%q is another name for %q): send only %q", k, target.field, k, target.field, target.field), alias: k, field: target.field}
		}
		v, err := convert(obj[k], target, s.Properties[target.field])
		if err != nil {
			err.alias = k
			return false, err
		}
		if target.conv == words {
			v = withArgs(obj, v, s)
		}
		obj[target.field] = v
		delete(obj, k)
		changed = true
	}
	return changed, nil
}

// withArgs completes a command's words with a list of string args beside
// it ({command: "go", args: ["test", "./..."]}) where the schema takes no
// args of its own, and removes the args.
func withArgs(obj map[string]any, argv any, s *jsonschema.Schema) any {
	w, ok := argv.([]any)
	if !ok || s.Properties["args"] != nil {
		return argv
	}
	args, ok := obj["args"].([]any)
	if !ok {
		return argv
	}
	for _, a := range args {
		if _, ok := a.(string); !ok {
			return argv
		}
	}
	delete(obj, "args")
	return append(slices.Clip(w), args...)
}

// editItems returns the schema of an edit operation when s edits through
// operations[] (apply_patch, target_apply_patch, a proposal), else nil.
func editItems(s *jsonschema.Schema) *jsonschema.Schema {
	ops := s.Properties["operations"]
	if ops == nil || ops.Items == nil || ops.Items.Properties["op"] == nil {
		return nil
	}
	return ops.Items
}

// editField reports whether k is a field (or an alias of a field) of an
// edit operation of s that s itself does not declare.
func (t *aliasTable) editField(k string, s *jsonschema.Schema) bool {
	it := editItems(s)
	if it == nil || s.Properties[k] != nil {
		return false
	}
	if it.Properties[k] != nil {
		return true
	}
	i, ok := t.rank[k]
	return ok && slices.ContainsFunc(t.list[i].to, func(x aliasTarget) bool { return it.Properties[x.field] != nil })
}

// guessEdit makes an Edit- or Write-style call ({file_path, old_string,
// new_string} or {file_path, content} where operations[] is expected) one
// operation: replace when it names old text, write when it names content.
func (t *aliasTable) guessEdit(obj map[string]any, s *jsonschema.Schema, depth int) (bool, *aliasError) {
	it := editItems(s)
	if it == nil {
		return false, nil
	}
	if _, ok := obj["operations"]; ok {
		return false, nil
	}
	item := map[string]any{}
	for _, k := range sortedKeys(obj) {
		if t.editField(k, s) {
			item[k] = obj[k]
		}
	}
	if len(item) == 0 {
		return false, nil
	}
	for k := range item {
		delete(obj, k)
	}
	if _, err := t.value(item, it, depth+1); err != nil {
		return false, err.in("operations[0]")
	}
	if _, ok := item["op"]; !ok {
		switch {
		case item["old_text"] != nil:
			item["op"] = "replace"
		case item["content"] != nil:
			item["op"] = "write"
		}
	}
	obj["operations"] = []any{item}
	return true, nil
}

// convert returns v as field target wants it.
func convert(v any, target aliasTarget, field *jsonschema.Schema) (any, *aliasError) {
	switch target.conv {
	case msToS:
		if f, ok := v.(float64); ok {
			return math.Ceil(f / 1000), nil
		}
	case sToMs:
		if f, ok := v.(float64); ok {
			if math.Abs(f) > math.MaxInt32 {
				return nil, &aliasError{field: target.field, msg: fmt.Sprintf("%v seconds is out of range", f)}
			}
			return f * 1000, nil
		}
	case list:
		if s, ok := v.(string); ok && field != nil && (field.Type == "array" || slices.Contains(field.Types, "array")) {
			return []any{s}, nil
		}
	case words:
		if s, ok := v.(string); ok {
			argv, why := splitCommand(s)
			if why != "" {
				return nil, &aliasError{field: target.field, msg: fmt.Sprintf(
					"command %q is %s, not a plain command: pass argv as a list of words, e.g. argv: [\"go\",\"test\",\"./...\"]; "+
						"for shell syntax pass argv: [\"bash\",\"-c\",%q] (the script is parsed, never trusted: each of its commands is classified as an argv would be, "+
						"and what hides the commands it runs, such as $(...), eval or source, makes it shell class, refused on the Fast Path unless the sandbox confines it)",
					s, why, s)}
			}
			out := make([]any, len(argv))
			for i, w := range argv {
				out[i] = w
			}
			return out, nil
		}
	}
	return v, nil
}

// splitCommand splits src into the words of a plain simple command:
// words and quotes only. It never evaluates anything: an expansion,
// redirection, pipe, list (&&, ;), glob, brace or tilde expansion,
// assignment or compound command is refused, and why names it.
func splitCommand(src string) (argv []string, why string) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, "not valid shell (" + err.Error() + ")"
	}
	switch {
	case len(f.Stmts) == 0:
		return nil, "empty"
	case len(f.Stmts) > 1:
		return nil, "several commands"
	}
	st := f.Stmts[0]
	switch {
	case st.Background:
		return nil, "shell syntax (&)"
	case st.Negated:
		return nil, "shell syntax (!)"
	case st.Coprocess || st.Disown:
		return nil, "shell syntax (a background job)"
	case len(st.Redirs) > 0:
		return nil, "shell syntax (a redirection)"
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		if b, ok := st.Cmd.(*syntax.BinaryCmd); ok {
			return nil, "shell syntax (" + b.Op.String() + ")"
		}
		return nil, "shell syntax (a compound command)"
	}
	if len(call.Assigns) > 0 {
		return nil, "shell syntax (a variable assignment)"
	}
	for _, w := range call.Args {
		word, why := plainWord(w)
		if why != "" {
			return nil, "shell syntax (" + why + ")"
		}
		argv = append(argv, word)
	}
	if len(argv) == 0 {
		return nil, "empty"
	}
	return argv, ""
}

// plainWord returns the value of a word made of literals and quotes only.
func plainWord(w *syntax.Word) (string, string) {
	if braced := (&syntax.Word{Parts: slices.Clone(w.Parts)}); syntax.SplitBraces(braced) &&
		slices.ContainsFunc(braced.Parts, func(p syntax.WordPart) bool { _, ok := p.(*syntax.BraceExp); return ok }) {
		return "", "a brace expansion"
	}
	var b strings.Builder
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				return "", "a ~ expansion"
			}
			if why := unescape(&b, p.Value, false); why != "" {
				return "", why
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", "$'...' quoting"
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", "$\"...\" quoting"
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", "an expansion ($ or `)"
				}
				if why := unescape(&b, l.Value, true); why != "" {
					return "", why
				}
			}
		case *syntax.ExtGlob:
			return "", "a glob"
		default:
			return "", "an expansion ($ or `)"
		}
	}
	return b.String(), ""
}

// unescape writes a literal's value as the shell reads it: a backslash
// quotes the next character (inside double quotes only $ ` " \ and a
// newline). An unquoted glob character is refused.
func unescape(b *strings.Builder, lit string, quoted bool) string {
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		switch {
		case c == '\\' && i+1 < len(lit):
			n := lit[i+1]
			switch {
			case n == '\n':
			case !quoted || strings.IndexByte("$`\"\\", n) >= 0:
				b.WriteByte(n)
			default:
				b.WriteByte(c)
				b.WriteByte(n)
			}
			i++
		case !quoted && (c == '*' || c == '?' || c == '['):
			return "a glob"
		default:
			b.WriteByte(c)
		}
	}
	return ""
}

// sortedKeys returns obj's member names in order.
func sortedKeys(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// hasUpper reports whether k holds an ASCII capital letter.
func hasUpper(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i] >= 'A' && k[i] <= 'Z' {
			return true
		}
	}
	return false
}

// snake returns the snake_case form of a camelCase name: filePath ->
// file_path, replaceAll -> replace_all, repoID -> repo_id.
func snake(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c >= 'A' && c <= 'Z' {
			prevLower := i > 0 && !(k[i-1] >= 'A' && k[i-1] <= 'Z') && k[i-1] != '_'
			nextLower := i+1 < len(k) && k[i+1] >= 'a' && k[i+1] <= 'z'
			prevUpper := i > 0 && k[i-1] >= 'A' && k[i-1] <= 'Z'
			if prevLower || (prevUpper && nextLower) {
				b.WriteByte('_')
			}
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}
