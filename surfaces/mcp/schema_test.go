package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// toolsAsJSON lists the tools as a client sees them: plain JSON.
func toolsAsJSON(t *testing.T, cs *mcp.ClientSession) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for name, tool := range listTools(t, cs) {
		b, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out[name] = m
	}
	return out
}

// schemaProblems walks an input schema as JSON and reports what a model's
// function-calling API would stumble on.
func schemaProblems(path string, s map[string]any, out *[]string) {
	if ty, ok := s["type"].([]any); ok {
		*out = append(*out, path+": type is a list "+jsonStr(ty)+"; want one plain type")
	}
	props, _ := s["properties"].(map[string]any)
	req := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, x := range r {
			name, _ := x.(string)
			req[name] = true
			if _, ok := props[name]; !ok {
				*out = append(*out, path+": required field "+name+" is not a property")
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		d, _ := p["description"].(string)
		// The Instructions say once where a repo_id comes from and what an
		// approval_id is (CompactInput drops their descriptions).
		statedOnce := !strings.Contains(path, ".") && (n == "repo_id" || n == "approval_id") &&
			strings.Contains(mcpserver.Instructions, n)
		if strings.TrimSpace(d) == "" && !statedOnce {
			*out = append(*out, path+"."+n+": no description")
		}
		if strings.HasPrefix(strings.ToLower(d), "required:") && !req[n] {
			*out = append(*out, path+"."+n+": described as required but missing from required")
		}
		schemaProblems(path+"."+n, p, out)
	}
	if items, ok := s["items"].(map[string]any); ok {
		schemaProblems(path+"[]", items, out)
	}
}

func jsonStr(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestToolSchemasAreBuiltForModels walks tools/list the way a client
// does and fails on what trips models and strict clients: an undescribed
// field, a nullable (list-typed) field, a required field missing from
// required, no title, no outputSchema, unset annotations, open enums.
func TestToolSchemasAreBuiltForModels(t *testing.T) {
	h := openHarness(t)
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test", everySet), nil)
	tools := toolsAsJSON(t, cs)
	var problems []string
	for name, tool := range tools {
		in, _ := tool["inputSchema"].(map[string]any)
		schemaProblems(name, in, &problems)
		if title, _ := tool["title"].(string); title == "" {
			problems = append(problems, name+": no title")
		}
		outS, _ := tool["outputSchema"].(map[string]any)
		if outS == nil || outS["type"] != "object" {
			problems = append(problems, name+": no object outputSchema")
		}
		ann, _ := tool["annotations"].(map[string]any)
		if ann == nil {
			problems = append(problems, name+": no annotations")
			continue
		}
		if ann["openWorldHint"] != false {
			problems = append(problems, name+": openWorldHint not false")
		}
		if ann["readOnlyHint"] != true {
			if _, ok := ann["destructiveHint"].(bool); !ok {
				problems = append(problems, name+": a writing tool without destructiveHint")
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}

	// The contract's required request_id, and the closed sets as enums.
	required := map[string][]string{
		"apply_patch": {"repo_id", "request_id", "operations"}, "git_stage": {"request_id"}, "git_commit": {"request_id"},
		"job_start": {"request_id"}, "patch_proposal_integrate": {"request_id"}, "read_file": {"repo_id", "path"},
	}
	for tool, want := range required {
		in, _ := tools[tool]["inputSchema"].(map[string]any)
		var got []string
		for _, r := range in["required"].([]any) {
			got = append(got, r.(string))
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: %s not required (required: %v)", tool, w, got)
			}
		}
	}
	enums := []struct{ tool, path string }{
		{"apply_patch", "operations[].op"}, {"job_start", "isolation"}, {"job_logs", "stream"}, {"job_list", "state"},
		{"batch", "mode"}, {"batch", "steps[].kind"}, {"read_lanes", "lanes[].kind"}, {"run_stage", "status"},
		{"run_list", "status"}, {"patch_proposal_validate", "proposals[].operations[].op"},
	}
	for _, e := range enums {
		s := at(tools[e.tool]["inputSchema"], e.path)
		if vals, ok := s["enum"].([]any); !ok || len(vals) < 2 {
			t.Errorf("%s %s: no enum (%v)", e.tool, e.path, s)
		}
	}
	if a := tools["apply_patch"]["annotations"].(map[string]any); a["idempotentHint"] != true || a["destructiveHint"] != true {
		t.Errorf("apply_patch annotations %v: want idempotent (request_id) and destructive", a)
	}
	if a := tools["git_status"]["annotations"].(map[string]any); a["idempotentHint"] != true {
		t.Errorf("git_status annotations %v: reads are idempotent", a)
	}
}

// at follows a path such as "steps[].kind" through properties and items.
func at(s any, path string) map[string]any {
	m, _ := s.(map[string]any)
	for _, part := range strings.Split(path, ".") {
		list := strings.HasSuffix(part, "[]")
		part = strings.TrimSuffix(part, "[]")
		props, _ := m["properties"].(map[string]any)
		m, _ = props[part].(map[string]any)
		if list {
			m, _ = m["items"].(map[string]any)
		}
	}
	return m
}

// TestFirstGuessesNameTheRightField makes the guesses a model makes first
// (field names of other tools' APIs) and asserts that each error names the
// field to use.
func TestFirstGuessesNameTheRightField(t *testing.T) {
	h := openHarness(t)
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test", everySet), nil)
	root := testutil.Repo(t, map[string]string{"a.txt": "alpha\n"})
	var reg harness.RegisterResult
	if err := json.Unmarshal(structured(t, call(t, cs, "repository_register", map[string]any{"path": root})), &reg); err != nil {
		t.Fatal(err)
	}
	id := reg.ID
	tests := []struct {
		name, tool string
		args       map[string]any
		code       string
		want       []string // every one must be in the message
	}{
		{"relative path", "repository_register", map[string]any{"path": "."}, "INVALID_ARGUMENT", []string{"relative", "absolute"}},
		// offset, limit, pattern, old_string, new_string are aliases now
		// (harness/op/alias.go): these guesses are not.
		{"read_file lines", "read_file", map[string]any{"repo_id": id, "path": "a.txt", "lines": 3}, "INVALID_ARGUMENT", []string{`"lines"`, `did you mean "max_lines"`}},
		{"run_command timeout", "run_command", map[string]any{"repo_id": id, "argv": []any{"true"}, "timeout": 3}, "INVALID_ARGUMENT", []string{`did you mean "timeout_ms"`}},
		{"search regexp", "search", map[string]any{"repo_id": id, "regexp": "alpha"}, "INVALID_ARGUMENT", []string{`did you mean "query"`}},
		{"replace new", "apply_patch", map[string]any{"repo_id": id, "request_id": "r1",
			"operations": []any{map[string]any{"op": "replace", "path": "a.txt", "old_text": "alpha", "new": "beta"}}},
			"INVALID_ARGUMENT", []string{"operations[0]", `did you mean "new_text"`}},
		{"shell string command", "run_command", map[string]any{"repo_id": id, "command": "git log | head -1"}, "INVALID_ARGUMENT", []string{"argv", `"bash","-c"`}},
		{"create with new_text", "apply_patch", map[string]any{"repo_id": id, "request_id": "r2",
			"operations": []any{map[string]any{"op": "create", "path": "n.txt", "new_text": "x"}}},
			"INVALID_ARGUMENT", []string{"content"}},
		{"apply_patch without request_id", "apply_patch", map[string]any{"repo_id": id,
			"operations": []any{map[string]any{"op": "create", "path": "n.txt", "content": "x"}}},
			"REQUEST_ID_REQUIRED", []string{"request_id"}},
		{"bad op", "apply_patch", map[string]any{"repo_id": id, "request_id": "r3",
			"operations": []any{map[string]any{"op": "edit", "path": "a.txt"}}},
			"INVALID_ARGUMENT", []string{"replace, create, write, delete"}},
		{"job tool with repo_id", "job_status", map[string]any{"repo_id": id, "job_id": "job_x"}, "INVALID_ARGUMENT", []string{"repo_id", "does not take repo_id"}},
		{"batch step with tool", "batch", map[string]any{"repo_id": id, "steps": []any{map[string]any{"tool": "read_file", "args": map[string]any{"path": "a.txt"}}}},
			"INVALID_ARGUMENT", []string{"steps[0]", `did you mean "kind"`}},
		{"route_explain operation", "route_explain", map[string]any{"operation": "read_file"}, "INVALID_ARGUMENT", []string{`did you mean "tool"`}},
		{"job_list state done", "job_list", map[string]any{"state": "done"}, "INVALID_ARGUMENT", []string{`"done"`, "succeeded", "failed"}},
		{"git_stage dot, nothing changed", "git_stage", map[string]any{"repo_id": id, "request_id": "r4", "paths": []any{"."}}, "INVALID_ARGUMENT", []string{"nothing to stage"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := errorOf(t, call(t, cs, tt.tool, tt.args))
			if string(e.Code) != tt.code {
				t.Errorf("code %s, want %s (%s)", e.Code, tt.code, e.Message)
			}
			for _, w := range tt.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not say %q", e.Message, w)
				}
			}
		})
	}
	// git_stage ["."] stages every change but secret files.
	testutil.WriteFile(t, root, "a.txt", "changed\n")
	if res := call(t, cs, "git_stage", map[string]any{"repo_id": id, "request_id": "r5", "paths": []any{"."}}); res.IsError {
		t.Errorf("git_stage [\".\"] with a change: %s", text(t, res))
	}
	// A null optional field is absent, not an error.
	res := call(t, cs, "git_diff", map[string]any{"repo_id": id, "paths": nil, "rev": nil})
	if res.IsError {
		t.Errorf("git_diff with null optional fields: %s", text(t, res))
	}
}

// TestResultsMatchTheirOutputSchemas validates real results against the
// outputSchema each tool advertises: a client that checks (the TypeScript
// SDK does) must never refuse one.
func TestResultsMatchTheirOutputSchemas(t *testing.T) {
	h := openHarness(t)
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test", everySet), nil)
	tools := listTools(t, cs)
	root := testutil.Repo(t, map[string]string{"a.txt": "alpha\nbeta\n", "Makefile": "x:\n\tcmd 2>/dev/null && <y>\n"})
	var reg harness.RegisterResult
	if err := json.Unmarshal(structured(t, call(t, cs, "repository_register", map[string]any{"path": root})), &reg); err != nil {
		t.Fatal(err)
	}
	id := reg.ID
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"repository_list", nil},
		{"read_file", map[string]any{"repo_id": id, "path": "a.txt"}},
		{"search", map[string]any{"repo_id": id, "query": "beta"}},
		{"git_status", map[string]any{"repo_id": id}},
		{"git_diff", map[string]any{"repo_id": id}},
		{"apply_patch", map[string]any{"repo_id": id, "request_id": "w1", "operations": []any{map[string]any{"op": "replace", "path": "a.txt", "old_text": "beta", "new_text": "gamma"}}}},
		{"git_diff", map[string]any{"repo_id": id}},
		{"run_command", map[string]any{"repo_id": id, "argv": []any{"git", "log", "--oneline", "-1"}}},
		{"route_explain", map[string]any{"tool": "run_command", "argv": []any{"make", "test"}}},
		{"batch", map[string]any{"repo_id": id, "steps": []any{map[string]any{"kind": "read_file", "args": map[string]any{"path": "a.txt"}}, map[string]any{"kind": "git_status"}}}},
		{"read_lanes", map[string]any{"repo_id": id, "lanes": []any{map[string]any{"kind": "search", "args": map[string]any{"query": "alpha"}}}}},
		{"job_list", nil},
		{"run_start", map[string]any{"workflow_class": "bugfix"}},
		{"run_status", nil},
		{"run_list", nil},
	}
	calls = append(calls, struct {
		tool string
		args map[string]any
	}{"context_assemble", map[string]any{"repo_id": id, "command": "run_command", "args": map[string]any{"argv": []any{"make", "test"}}}})
	var tg struct {
		TargetID string `json:"target_id"`
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("a & b <c>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(structured(t, call(t, cs, "target_register", map[string]any{"path": dir, "access": "write"})), &tg); err != nil || tg.TargetID == "" {
		t.Fatalf("target_register: %v", err)
	}
	calls = append(calls, []struct {
		tool string
		args map[string]any
	}{
		{"target_list", nil},
		{"target_read_file", map[string]any{"target_id": tg.TargetID, "path": "notes.txt"}},
		{"target_list_dir", map[string]any{"target_id": tg.TargetID}},
		{"target_search", map[string]any{"target_id": tg.TargetID, "query": "b"}},
		{"target_write_file", map[string]any{"target_id": tg.TargetID, "path": "new.txt", "content": "x\n"}},
	}...)
	for _, c := range calls {
		tool := tools[c.tool]
		if tool == nil || tool.OutputSchema == nil {
			t.Errorf("%s: no outputSchema", c.tool)
			continue
		}
		var s jsonschema.Schema
		if err := remarshal(tool.OutputSchema, &s); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: resolve output schema: %v", c.tool, err)
		}
		res := call(t, cs, c.tool, c.args)
		if res.IsError {
			t.Errorf("%s: %s", c.tool, res.Content[0].(*mcp.TextContent).Text)
			continue
		}
		var inst any
		if err := remarshal(res.StructuredContent, &inst); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(inst); err != nil {
			t.Errorf("%s: result does not match its outputSchema: %v", c.tool, err)
		}
	}
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// TestTextIsNotHTMLEscaped: `<`, `>` and `&` reach the model as
// themselves, and read_file's text block is the file's text.
func TestTextIsNotHTMLEscaped(t *testing.T) {
	h := openHarness(t)
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test", everySet), nil)
	body := "check:\n\tgo vet ./... 2>/dev/null && echo '<ok>'\n"
	root := testutil.Repo(t, map[string]string{"Makefile": body})
	var reg harness.RegisterResult
	if err := json.Unmarshal(structured(t, call(t, cs, "repository_register", map[string]any{"path": root})), &reg); err != nil {
		t.Fatal(err)
	}
	res := call(t, cs, "read_file", map[string]any{"repo_id": reg.ID, "path": "Makefile"})
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("read_file: %+v", res)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != body {
		t.Errorf("read_file's text block is %q, want the file's text %q", got, body)
	}
	if len(res.Content) != 2 || !strings.Contains(res.Content[1].(*mcp.TextContent).Text, "lines 1-2 of 2") {
		t.Errorf("read_file's note block: %+v", res.Content[1:])
	}
	res = call(t, cs, "search", map[string]any{"repo_id": reg.ID, "query": "2>/dev/null"})
	txt := text(t, res)
	if strings.Contains(txt, `\u003e`) || strings.Contains(txt, `\u0026`) || !strings.Contains(txt, "2>/dev/null && echo '<ok>'") {
		t.Errorf("search's text block escapes HTML: %s", txt)
	}
}

// TestApprovalInTheClient: a client that declares elicitation gets the
// approval question for its person, with the exact operation; approving
// runs the call at once, and the audit says who decided. A declined
// elicitation denies; without the capability the call answers
// APPROVAL_REQUIRED, and a retry of the same input reuses the pending
// approval instead of filing another.
func TestApprovalInTheClient(t *testing.T) {
	dir := t.TempDir()
	pol := "version: 1\nrules:\n  - id: ask-ls-tree\n    tools: [run_command]\n    argv_prefix: [git, ls-tree]\n    decision: ask\n    justification: \"someone should look first\"\n"
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := harness.Open(context.Background(), harness.Config{DataDir: dir, AllowRoots: []string{os.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	srv := mcpserver.New(mcpserver.Local(h), "test", everySet)
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})

	var asked []string
	answer := "accept"
	elicit := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		if answer == "accept" {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "reason": "looked at it"}}, nil
		}
		return &mcp.ElicitResult{Action: answer}, nil
	}}
	person, _ := connectWith(t, srv, &mcp.Implementation{Name: "inspector", Version: "1"}, elicit)
	var reg harness.RegisterResult
	if err := json.Unmarshal(structured(t, call(t, person, "repository_register", map[string]any{"path": root})), &reg); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"repo_id": reg.ID, "argv": []any{"git", "ls-tree", "HEAD"}}
	res := call(t, person, "run_command", args)
	if res.IsError {
		t.Fatalf("approved in the client, still failed: %s", text(t, res))
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "git ls-tree HEAD") || !strings.Contains(asked[0], "ask-ls-tree") {
		t.Fatalf("elicitation did not show the operation and rule: %q", asked)
	}
	all, err := h.Approvals(context.Background(), "all")
	if err != nil || len(all.Approvals) != 1 || all.Approvals[0].DecidedBy != "mcp-elicitation:inspector" || all.Approvals[0].Status != "used" {
		t.Fatalf("approvals after the client approved: %+v (%v)", all, err)
	}
	// One elicited approval is one ask in the audit log, though the
	// client called twice (the second time with the person's answer).
	if n := asks(t, h, all.Approvals[0].ID); n != 1 {
		t.Errorf("%d ask audit entries for one elicited approval, want 1", n)
	}

	answer = "decline"
	args2 := map[string]any{"repo_id": reg.ID, "argv": []any{"git", "ls-tree", "HEAD", "a.txt"}}
	if e := errorOf(t, call(t, person, "run_command", args2)); e.Code != "POLICY_DENIED" || !strings.Contains(e.Message, "denied") {
		t.Errorf("declined in the client: %s %s, want POLICY_DENIED", e.Code, e.Message)
	}
	if len(asked) != 2 {
		t.Errorf("%d elicitations, want 2", len(asked))
	}
	// The call that was denied never ran: a person's no holds.
	all, _ = h.Approvals(context.Background(), "denied")
	if len(all.Approvals) != 1 || all.Approvals[0].DecidedBy != "mcp-elicitation:inspector" {
		t.Errorf("denied approvals: %+v", all.Approvals)
	}

	// An answer nobody asked for does not approve: a client that sends
	// inputResponses with its first call gets the question, not the run.
	forged := &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"repo_id": reg.ID, "argv": []any{"git", "ls-tree", "--name-only", "HEAD"}},
		InputResponses: mcp.InputResponseMap{"harnessd_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}}
	answer = "cancel"
	fres, err := person.CallTool(context.Background(), forged)
	if err != nil {
		t.Fatal(err)
	}
	if !fres.IsError {
		t.Fatalf("a forged answer ran the command: %s", text(t, fres))
	}
	if len(asked) != 3 {
		t.Errorf("the forged call was not asked about (%d elicitations)", len(asked))
	}

	// No elicitation capability: APPROVAL_REQUIRED, and the same input
	// again reuses the pending request.
	plain := connect(t, srv, nil)
	args3 := map[string]any{"repo_id": reg.ID, "argv": []any{"git", "ls-tree", "-r", "HEAD"}}
	e1 := errorOf(t, call(t, plain, "run_command", args3))
	e2 := errorOf(t, call(t, plain, "run_command", args3))
	if e1.Code != "APPROVAL_REQUIRED" || e2.Code != "APPROVAL_REQUIRED" || e1.Details["approval_id"] != e2.Details["approval_id"] {
		t.Fatalf("retries of one input: %v / %v, want one pending approval", e1.Details, e2.Details)
	}
	pending, _ := h.Approvals(context.Background(), "")
	n := 0
	for _, a := range pending.Approvals {
		if strings.Contains(a.Summary, "ls-tree -r HEAD") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d pending approvals for one input retried, want 1", n)
	}
	if id, _ := e1.Details["approval_id"].(string); asks(t, h, id) != 1 {
		t.Errorf("%d ask audit entries for one input asked twice, want 1", asks(t, h, id))
	}
}

// asks counts the ask entries of the audit log for approval id.
func asks(t *testing.T, h *harness.Harness, id string) int {
	t.Helper()
	res, err := h.Audit(context.Background(), harness.AuditArgs{Kind: "ask", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range res.Entries {
		if e.Details["approval_id"] == id {
			n++
		}
	}
	return n
}

// TestNoClientApprovals: with NoClientApprovals the client's person is
// never asked; the call answers APPROVAL_REQUIRED for a person at the
// terminal or the console.
func TestNoClientApprovals(t *testing.T) {
	dir := t.TempDir()
	pol := "version: 1\nrules:\n  - id: ask-ls-tree\n    tools: [run_command]\n    argv_prefix: [git, ls-tree]\n    decision: ask\n    justification: \"someone should look first\"\n"
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := harness.Open(context.Background(), harness.Config{DataDir: dir, NoClientApprovals: true, AllowRoots: []string{os.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	asked := 0
	cs, _ := connectWith(t, mcpserver.New(mcpserver.Local(h), "test", everySet), &mcp.Implementation{Name: "inspector", Version: "1"},
		&mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}})
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	var reg harness.RegisterResult
	if err := json.Unmarshal(structured(t, call(t, cs, "repository_register", map[string]any{"path": root})), &reg); err != nil {
		t.Fatal(err)
	}
	e := errorOf(t, call(t, cs, "run_command", map[string]any{"repo_id": reg.ID, "argv": []any{"git", "ls-tree", "HEAD"}}))
	if e.Code != "APPROVAL_REQUIRED" || asked != 0 {
		t.Fatalf("with NoClientApprovals: %s, %d elicitations; want APPROVAL_REQUIRED and none", e.Code, asked)
	}
}
