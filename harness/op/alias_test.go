package op_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/ops"
)

// aliasCase is one rewrite: args of op become want (compared as JSON
// values), or fail INVALID_ARGUMENT with a message holding each of errHas.
type aliasCase struct {
	name, op, args, want string
	errHas               []string
}

func aliasCases() []aliasCase {
	return []aliasCase{
		{name: "read_file: Claude Code's Read", op: "read_file",
			args: `{"repo_id":"r","file_path":"a.go","offset":10,"limit":5}`,
			want: `{"repo_id":"r","path":"a.go","offset_line":10,"max_lines":5}`},
		{name: "read_file: camelCase", op: "read_file",
			args: `{"repoId":"r","filePath":"a.go"}`,
			want: `{"repo_id":"r","path":"a.go"}`},
		{name: "read_file: repository, filename, start_line", op: "read_file",
			args: `{"repository":"r","filename":"a.go","start_line":3}`,
			want: `{"repo_id":"r","path":"a.go","offset_line":3}`},
		{name: "canonical names are left alone", op: "read_file",
			args: `{"repo_id":"r","path":"a.go","offset_line":2,"max_lines":1}`,
			want: `{"repo_id":"r","path":"a.go","offset_line":2,"max_lines":1}`},
		{name: "job_logs keeps its own offset", op: "job_logs",
			args: `{"job_id":"j","offset":10}`,
			want: `{"job_id":"j","offset":10}`},
		{name: "job_list keeps its own limit", op: "job_list",
			args: `{"limit":5}`,
			want: `{"limit":5}`},
		{name: "context_assemble keeps its own command", op: "context_assemble",
			args: `{"repo_id":"r","command":"run_command"}`,
			want: `{"repo_id":"r","command":"run_command"}`},
		{name: "search: Grep's pattern, glob flag and head_limit", op: "search",
			args: `{"repo_id":"r","pattern":"func main","-i":true,"head_limit":3,"include":"*.go"}`,
			want: `{"repo_id":"r","query":"func main","case_insensitive":true,"max_results":3,"glob":"*.go"}`},
		{name: "search: limit means max_results", op: "search",
			args: `{"repo_id":"r","q":"x","limit":7}`,
			want: `{"repo_id":"r","query":"x","max_results":7}`},
		{name: "apply_patch: Edit-style is one replace", op: "apply_patch",
			args: `{"repo_id":"r","request_id":"q","file_path":"a.go","old_string":"x","new_string":"y","replace_all":true}`,
			want: `{"repo_id":"r","request_id":"q","operations":[{"op":"replace","path":"a.go","old_text":"x","new_text":"y","all":true}]}`},
		{name: "apply_patch: Write-style is one write", op: "apply_patch",
			args: `{"repo_id":"r","request_id":"q","file_path":"n.go","content":"package n\n"}`,
			want: `{"repo_id":"r","request_id":"q","operations":[{"op":"write","path":"n.go","content":"package n\n"}]}`},
		{name: "apply_patch: OpenCode's camelCase edit", op: "apply_patch",
			args: `{"repo_id":"r","request_id":"q","filePath":"a.go","oldString":"x","newString":"y","replaceAll":false}`,
			want: `{"repo_id":"r","request_id":"q","operations":[{"op":"replace","path":"a.go","old_text":"x","new_text":"y","all":false}]}`},
		{name: "apply_patch: the text editor's names", op: "apply_patch",
			args: `{"repo_id":"r","request_id":"q","path":"a.go","old_str":"x","new_str":"y"}`,
			want: `{"repo_id":"r","request_id":"q","operations":[{"op":"replace","path":"a.go","old_text":"x","new_text":"y"}]}`},
		{name: "apply_patch: aliases inside operations", op: "apply_patch",
			args: `{"repo_id":"r","request_id":"q","operations":[{"op":"replace","file_path":"a.go","old_string":"x","new_string":"y"},{"op":"create","path":"b.go","file_text":"b"}]}`,
			want: `{"repo_id":"r","request_id":"q","operations":[{"op":"replace","path":"a.go","old_text":"x","new_text":"y"},{"op":"create","path":"b.go","content":"b"}]}`},
		{name: "patch_proposal_validate: aliases two levels down", op: "patch_proposal_validate",
			args: `{"repo":"r","proposals":[{"id":"p","operations":[{"op":"replace","file_path":"a.go","old_string":"x","new_string":"y"}]}]}`,
			want: `{"repo_id":"r","proposals":[{"id":"p","operations":[{"op":"replace","path":"a.go","old_text":"x","new_text":"y"}]}]}`},
		{name: "patch_proposal_validate: an Edit-style proposal", op: "patch_proposal_validate",
			args: `{"repo_id":"r","proposals":[{"id":"p","file_path":"a.go","old_string":"x","new_string":"y"}]}`,
			want: `{"repo_id":"r","proposals":[{"id":"p","operations":[{"op":"replace","path":"a.go","old_text":"x","new_text":"y"}]}]}`},
		{name: "run_command: a plain command string, workdir, seconds", op: "run_command",
			args: `{"repo_id":"r","command":"git log --oneline -5","workdir":"src","timeout_seconds":5}`,
			want: `{"repo_id":"r","argv":["git","log","--oneline","-5"],"cwd":"src","timeout_ms":5000}`},
		{name: "run_command: quotes and escapes", op: "run_command",
			args: `{"repo_id":"r","cmd":"grep -n \"a b\" 'c $d' e\\ f \"g\\\"h\""}`,
			want: `{"repo_id":"r","argv":["grep","-n","a b","c $d","e f","g\"h"]}`},
		{name: "run_command: Codex's list command", op: "run_command",
			args: `{"repo_id":"r","command":["go","vet","./..."],"working_directory":"."}`,
			want: `{"repo_id":"r","argv":["go","vet","./..."],"cwd":"."}`},
		{name: "run_command: command and args", op: "run_command",
			args: `{"repo_id":"r","command":"go","args":["test","./..."]}`,
			want: `{"repo_id":"r","argv":["go","test","./..."]}`},
		{name: "run_command: timeout_s is seconds", op: "run_command",
			args: `{"repo_id":"r","argv":["true"],"timeout_s":2}`,
			want: `{"repo_id":"r","argv":["true"],"timeout_ms":2000}`},
		{name: "run_check: directory", op: "run_check",
			args: `{"repo_id":"r","command":"go test ./pkg -run TestX","directory":"sub"}`,
			want: `{"repo_id":"r","argv":["go","test","./pkg","-run","TestX"],"cwd":"sub"}`},
		{name: "job_start: milliseconds become seconds, rounded up", op: "job_start",
			args: `{"repo_id":"r","request_id":"q","command":"make build","timeout_ms":1500}`,
			want: `{"repo_id":"r","request_id":"q","argv":["make","build"],"timeout_s":2}`},
		{name: "job_start: timeout_seconds", op: "job_start",
			args: `{"repo_id":"r","request_id":"q","argv":["make"],"timeout_seconds":60}`,
			want: `{"repo_id":"r","request_id":"q","argv":["make"],"timeout_s":60}`},
		{name: "git_commit: msg and one file", op: "git_commit",
			args: `{"repo_id":"r","request_id":"q","msg":"fix","files":"a.go"}`,
			want: `{"repo_id":"r","request_id":"q","message":"fix","paths":["a.go"]}`},
		{name: "git_diff: cached, commit, path, unified", op: "git_diff",
			args: `{"repo_id":"r","cached":true,"commit":"HEAD~1","path":"a.go","unified":1}`,
			want: `{"repo_id":"r","staged":true,"rev":"HEAD~1","paths":["a.go"],"context":1}`},
		{name: "git_stage: repository_id and file_paths", op: "git_stage",
			args: `{"repository_id":"r","request_id":"q","file_paths":["a.go","b.go"]}`,
			want: `{"repo_id":"r","request_id":"q","paths":["a.go","b.go"]}`},
		{name: "target_read_file: target and file_path", op: "target_read_file",
			args: `{"target":"t","file_path":"a.txt","limit":3}`,
			want: `{"target_id":"t","path":"a.txt","max_lines":3}`},
		{name: "target_list_dir: limit means max_entries", op: "target_list_dir",
			args: `{"target_id":"t","limit":3}`,
			want: `{"target_id":"t","max_entries":3}`},
		{name: "route_explain: a command string", op: "route_explain",
			args: `{"tool":"run_command","command":"make test"}`,
			want: `{"tool":"run_command","argv":["make","test"]}`},
		{name: "batch leaves its steps' args to the step", op: "batch",
			args: `{"repo_id":"r","steps":[{"kind":"read_file","args":{"file_path":"a.go"}}]}`,
			want: `{"repo_id":"r","steps":[{"kind":"read_file","args":{"file_path":"a.go"}}]}`},
		{name: "an unknown name is left for the decoder", op: "read_file",
			args: `{"repo_id":"r","path":"a","lines":3}`,
			want: `{"repo_id":"r","path":"a","lines":3}`},

		{name: "a pipe is shell syntax", op: "run_command",
			args:   `{"repo_id":"r","command":"go test ./... | tail -5"}`,
			errHas: []string{`run_command: command "go test ./... | tail -5" is shell syntax (|)`, "pass argv as a list", `argv: ["bash","-c","go test ./... | tail -5"]`}},
		{name: "&& is shell syntax", op: "run_command",
			args: `{"repo_id":"r","command":"make && make test"}`, errHas: []string{"shell syntax (&&)", "argv"}},
		{name: "a redirection", op: "run_command",
			args: `{"repo_id":"r","command":"go test > out.txt"}`, errHas: []string{"a redirection"}},
		{name: "an expansion", op: "run_command",
			args: `{"repo_id":"r","command":"echo $HOME"}`, errHas: []string{"an expansion"}},
		{name: "a command substitution", op: "run_command",
			args: `{"repo_id":"r","command":"echo \"$(id)\""}`, errHas: []string{"an expansion"}},
		{name: "a glob", op: "run_command",
			args: `{"repo_id":"r","command":"ls *.go"}`, errHas: []string{"a glob"}},
		{name: "a brace expansion", op: "run_command",
			args: `{"repo_id":"r","command":"touch {a,b}.go"}`, errHas: []string{"a brace expansion"}},
		{name: "a tilde", op: "run_command",
			args: `{"repo_id":"r","command":"cat ~/.netrc"}`, errHas: []string{"a ~ expansion"}},
		{name: "an assignment", op: "run_command",
			args: `{"repo_id":"r","command":"GOFLAGS=-v go build"}`, errHas: []string{"a variable assignment"}},
		{name: "several commands", op: "run_command",
			args: `{"repo_id":"r","command":"make; make test"}`, errHas: []string{"several commands"}},
		{name: "empty", op: "run_command",
			args: `{"repo_id":"r","command":"  "}`, errHas: []string{"is empty"}},
		{name: "a shell string inside route_explain's steps", op: "route_explain",
			args:   `{"tool":"batch","steps":[{"tool":"run_command","argv":["ls"]},{"tool":"run_command","command":"a | b"}]}`,
			errHas: []string{"route_explain: steps[1]: command", "shell syntax (|)"}},
		{name: "alias beside its field", op: "read_file",
			args:   `{"repo_id":"r","path":"a","file_path":"b"}`,
			errHas: []string{`read_file: "file_path" and "path" are both given`, `send only "path"`}},
		{name: "alias beside its field in an operation", op: "apply_patch",
			args:   `{"repo_id":"r","request_id":"q","operations":[{"op":"replace","path":"a","old_text":"x","old_string":"y","new_text":"z"}]}`,
			errHas: []string{`apply_patch: operations[0]: "old_string" and "old_text" are both given`}},
		{name: "seconds out of range", op: "run_command",
			args: `{"repo_id":"r","argv":["true"],"timeout_seconds":1e300}`, errHas: []string{"out of range"}},
	}
}

// TestAliases rewrites each first guess to the canonical input (or refuses
// it naming the field), and rewriting the result again changes nothing.
func TestAliases(t *testing.T) {
	reg := ops.Registry()
	for _, tc := range aliasCases() {
		t.Run(tc.name, func(t *testing.T) {
			o, ok := reg.Lookup(tc.op)
			if !ok {
				t.Fatalf("no operation %s", tc.op)
			}
			out, err := o.Alias(json.RawMessage(tc.args))
			if tc.errHas != nil {
				if err == nil {
					t.Fatalf("got %s, want an error", out)
				}
				e := errs.From(err)
				if e.Code != errs.InvalidArgument {
					t.Errorf("code %s, want INVALID_ARGUMENT", e.Code)
				}
				for _, w := range tc.errHas {
					if !strings.Contains(e.Message, w) {
						t.Errorf("message %q does not say %q", e.Message, w)
					}
				}
				if e.Details["field"] == nil {
					t.Errorf("details name no field: %v", e.Details)
				}
				// The decoder answers the same.
				if _, derr := o.Decode(json.RawMessage(tc.args)); derr == nil || errs.From(derr).Message != e.Message {
					t.Errorf("Decode answered %v, want %q", derr, e.Message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, out, []byte(tc.want)) {
				t.Errorf("got  %s\nwant %s", out, tc.want)
			}
			again, err := o.Alias(out)
			if err != nil || !bytes.Equal(again, out) {
				t.Errorf("aliasing twice: %s, %v; want %s", again, err, out)
			}
			if tc.args == tc.want && !bytes.Equal(out, []byte(tc.args)) {
				t.Errorf("nothing to rewrite, but the arguments were re-encoded: %s", out)
			}
		})
	}
}

// TestAliasedInputDecodes: every rewritten case the schema accepts decodes
// to the same typed input as its canonical spelling.
func TestAliasedInputDecodes(t *testing.T) {
	reg := ops.Registry()
	for _, tc := range aliasCases() {
		if tc.errHas != nil || tc.op == "read_file" && strings.Contains(tc.args, "lines") {
			continue
		}
		o, _ := reg.Lookup(tc.op)
		got, err := o.Decode(json.RawMessage(tc.args))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		want, err := o.Decode(json.RawMessage(tc.want))
		if err != nil {
			t.Errorf("%s: canonical: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %+v, canonical %+v", tc.name, got, want)
		}
	}
}

// A field that is no alias keeps failing, and the message names the field
// to use.
func TestUnknownFieldNamesTheField(t *testing.T) {
	reg := ops.Registry()
	for _, tc := range []struct{ op, args, want string }{
		{"run_command", `{"repo_id":"r","argv":["true"],"timeout":5000}`, "timeout_ms"},
		{"job_start", `{"repo_id":"r","request_id":"q","argv":["make"],"timeout":60}`, "timeout_s"},
		{"read_file", `{"repo_id":"r","path":"a","lines":3}`, "max_lines"},
		{"search", `{"repo_id":"r","query":"a","regexp":"a"}`, "query"},
		{"apply_patch", `{"repo_id":"r","request_id":"q","operations":[{"op":"create","path":"a","text":"x"}]}`, "content"},
		// A meaning beats a spelling: state is one edit from stage, but
		// it means the tool's status.
		{"run_stage", `{"run_id":"r","stage":"tests","state":"completed"}`, "status"},
	} {
		o, ok := reg.Lookup(tc.op)
		if !ok {
			t.Fatalf("no %s", tc.op)
		}
		_, derr := o.Decode(json.RawMessage(tc.args))
		e := errs.From(derr)
		if derr == nil || e.Code != errs.InvalidArgument || !strings.Contains(e.Message, `did you mean "`+tc.want+`"`) {
			t.Errorf("%s %s: %v, want INVALID_ARGUMENT naming %q", tc.op, tc.args, derr, tc.want)
		}
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// FuzzAliases feeds untrusted JSON to the rewriting of the operations with
// the most aliases: it never panics, what it returns is valid JSON, and
// rewriting its output again changes nothing.
func FuzzAliases(f *testing.F) {
	for _, tc := range aliasCases() {
		f.Add(tc.args)
	}
	f.Add(`{"file_path":{"file_path":[{"old_string":null}]},"operations":null}`)
	f.Add(`{"FilePath":"a","filePath":"b","file_path":"c"}`)
	f.Add(`{"command":"a\\\nb 'c\\' \"d\\e\""}`)
	f.Add(`[{"file_path":"a"}]`)
	reg := ops.Registry()
	var list []*op.Op
	for _, name := range []string{"apply_patch", "patch_proposal_validate", "read_file", "run_command", "job_start", "search", "git_diff", "route_explain"} {
		o, ok := reg.Lookup(name)
		if !ok {
			f.Fatalf("no %s", name)
		}
		list = append(list, o)
	}
	f.Fuzz(func(t *testing.T, args string) {
		for _, o := range list {
			out, err := o.Alias(json.RawMessage(args))
			if err != nil {
				if e := errs.From(err); e.Code != errs.InvalidArgument {
					t.Fatalf("%s: %s: code %s (%s)", o.Name, args, e.Code, e.Message)
				}
				continue
			}
			if !json.Valid(out) {
				t.Fatalf("%s: %s: invalid JSON %s", o.Name, args, out)
			}
			again, err := o.Alias(out)
			if err != nil || !bytes.Equal(again, out) {
				t.Fatalf("%s: %s: once %s, twice %s (%v)", o.Name, args, out, again, err)
			}
		}
	})
}
