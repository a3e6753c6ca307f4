package mcpserver_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// schemaJSON is s as a client reads it.
func schemaJSON(t *testing.T, s *jsonschema.Schema) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCompactOutput(t *testing.T) {
	str := &jsonschema.Schema{Type: "string", Description: "a name"}
	tests := []struct {
		name string
		in   *jsonschema.Schema
		want string
	}{
		{"scalars keep their type, lose the rest",
			&jsonschema.Schema{Type: "object", Description: "result", Properties: map[string]*jsonschema.Schema{
				"path": str, "n": {Type: "integer", Minimum: new(0.0), Description: "count"}, "ok": {Type: "boolean"}}},
			`{"type":"object","properties":{"n":{"type":"integer"},"ok":{"type":"boolean"},"path":{"type":"string"}}}`},
		{"nested objects and arrays are their type only",
			&jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
				"run":  {Type: "object", Properties: map[string]*jsonschema.Schema{"id": str}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}},
				"tags": {Type: "array", Items: str},
				"meta": {Type: "object", AdditionalProperties: str}}},
			`{"type":"object","properties":{"meta":{"type":"object"},"run":{"type":"object"},"tags":{"type":"array"}}}`},
		{"a property that may be null, or of no one type, is left out",
			&jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
				"matches": {Types: []string{"null", "array"}, Items: str}, "value": {Description: "any JSON value"}, "path": str}},
			`{"type":"object","properties":{"path":{"type":"string"}}}`},
		{"the fields every result carries are left out",
			&jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
				"route": str, "latency": {Type: "object"}, "path": str}},
			`{"type":"object","properties":{"path":{"type":"string"}}}`},
		{"a reference is followed to its type",
			&jsonschema.Schema{Type: "object", Defs: map[string]*jsonschema.Schema{"Run": {Type: "object", Properties: map[string]*jsonschema.Schema{"id": str}}},
				Properties: map[string]*jsonschema.Schema{"run": {Ref: "#/$defs/Run"}, "gone": {Ref: "#/$defs/Missing"}}},
			`{"type":"object","properties":{"run":{"type":"object"}}}`},
		{"no properties", &jsonschema.Schema{Type: "object", AdditionalProperties: str}, `{"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := schemaJSON(t, tt.in)
			if got := schemaJSON(t, mcpserver.CompactOutput(tt.in)); got != tt.want {
				t.Errorf("CompactOutput = %s\nwant %s", got, tt.want)
			}
			if after := schemaJSON(t, tt.in); after != before {
				t.Errorf("CompactOutput changed its input: %s, was %s", after, before)
			}
		})
	}
	if mcpserver.CompactOutput(nil) != nil {
		t.Error("CompactOutput(nil) is not nil")
	}
}

func TestCompactInput(t *testing.T) {
	common := map[string]*jsonschema.Schema{
		"repo_id":                   {Type: "string", Description: "from repository_list"},
		"include_latency_breakdown": {Type: "boolean", Description: "segments"},
		"wait_ms":                   {Type: "integer", Description: "wait"},
		"approval_id":               {Type: "string", Description: "from APPROVAL_REQUIRED"},
		"run_id":                    {Type: "string", Description: "the run this call belongs to (from run_start)"},
	}
	schema := func(props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
		s := &jsonschema.Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
		for name := range props {
			s.PropertyOrder = append(s.PropertyOrder, name)
		}
		slices.Sort(s.PropertyOrder)
		return s
	}
	tests := []struct {
		name     string
		in       *jsonschema.Schema
		readOnly bool
		want     []string // the properties left, sorted
	}{
		{"a read-only tool loses every common parameter", schema(common, "repo_id"), true, []string{"repo_id"}},
		{"a write keeps approval_id", schema(common, "repo_id"), false, []string{"approval_id", "repo_id"}},
		{"an operation's own run_id stays", schema(map[string]*jsonschema.Schema{
			"run_id": {Type: "string", Description: "only receipts of this run"}}), true, []string{"run_id"}},
		{"a required run_id stays", schema(map[string]*jsonschema.Schema{
			"run_id": {Type: "string", Description: "the run this call belongs to"}}, "run_id"), false, []string{"run_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := schemaJSON(t, tt.in)
			got := mcpserver.CompactInput(tt.in, tt.readOnly)
			var names []string
			for name := range got.Properties {
				names = append(names, name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.want) || !slices.Equal(got.PropertyOrder, tt.want) {
				t.Errorf("properties %v (order %v), want %v", names, got.PropertyOrder, tt.want)
			}
			if got.AdditionalProperties != nil {
				t.Errorf("additionalProperties %s: the common parameters must stay legal", schemaJSON(t, got.AdditionalProperties))
			}
			if !slices.Equal(got.Required, tt.in.Required) {
				t.Errorf("required %v, want %v", got.Required, tt.in.Required)
			}
			if after := schemaJSON(t, tt.in); after != before {
				t.Errorf("CompactInput changed its input: %s, was %s", after, before)
			}
		})
	}
}

// TestToolOfLeavesTheCommonParametersToTheInstructions: the tools as the
// registry makes them, through ToolOf.
func TestToolOfLeavesTheCommonParametersToTheInstructions(t *testing.T) {
	tools := map[string]*mcp.Tool{}
	ops := map[string]harness.Op{}
	for _, o := range harness.Ops() {
		if o.Agent {
			tools[o.Name], ops[o.Name] = mcpserver.ToolOf(o), o
		}
	}
	props := func(name string) map[string]*jsonschema.Schema {
		return tools[name].InputSchema.(*jsonschema.Schema).Properties
	}
	for name, tool := range tools {
		in := props(name)
		for _, common := range []string{"include_latency_breakdown", "wait_ms", "on_busy"} {
			if in[common] != nil {
				t.Errorf("%s: the tool lists %s", name, common)
			}
		}
		if ops[name].ReadOnly && in["approval_id"] != nil {
			t.Errorf("%s: a read-only tool lists approval_id", name)
		}
		if tool.Annotations.Title != "" {
			t.Errorf("%s: annotations.title %q repeats the title", name, tool.Annotations.Title)
		}
		if full := ops[name].InputSchema; full.Properties["include_latency_breakdown"] == nil && full.Properties["run_id"] == nil {
			t.Errorf("%s: the registry's own schema lost its common parameters", name)
		}
	}
	if props("read_file")["run_id"] != nil || props("apply_patch")["run_id"] != nil {
		t.Error("read_file or apply_patch lists the common run_id")
	}
	if props("apply_patch")["approval_id"] == nil {
		t.Error("apply_patch (a write a person may be asked about) lost approval_id")
	}
	if props("run_end")["run_id"] == nil || props("receipt_list")["run_id"] == nil {
		t.Error("an operation's own run_id (run_end's run, receipt_list's filter) was dropped")
	}
}

// TestCompactSchemasAcceptRealResults runs real operations and validates
// each result, as the MCP server sends it (Result), against the compact
// output schema of its tool: a client that validates (the TypeScript SDK
// does) must accept every one.
func TestCompactSchemasAcceptRealResults(t *testing.T) {
	h := openHarness(t)
	ctx := context.Background()
	root := testutil.Repo(t, map[string]string{"a.txt": "alpha\nbeta\n"})
	call := func(name string, args map[string]any) any {
		t.Helper()
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.CallOp(ctx, name, b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return out
	}
	var reg harness.RegisterResult
	remarshalT(t, call("repository_register", map[string]any{"path": root}), &reg)
	id := reg.ID
	var job struct {
		JobID string `json:"job_id"`
	}
	results := map[string]any{}
	results["read_file"] = call("read_file", map[string]any{"repo_id": id, "path": "a.txt"})
	results["search"] = call("search", map[string]any{"repo_id": id, "query": "beta"})
	results["git_status"] = call("git_status", map[string]any{"repo_id": id})
	results["apply_patch"] = call("apply_patch", map[string]any{"repo_id": id, "request_id": "p1",
		"operations": []any{map[string]any{"op": "replace", "path": "a.txt", "old_text": "beta", "new_text": "gamma"}}})
	results["git_commit"] = call("git_commit", map[string]any{"repo_id": id, "request_id": "c1", "message": "gamma", "paths": []any{"a.txt"}})
	var run struct {
		RunID string `json:"run_id"`
	}
	results["run_start"] = call("run_start", map[string]any{"workflow_class": "bugfix"})
	remarshalT(t, results["run_start"], &run)
	results["run_status"] = call("run_status", map[string]any{"run_id": run.RunID})
	results["job_start"] = call("job_start", map[string]any{"repo_id": id, "request_id": "j1", "argv": []any{"git", "status", "--short"}})
	remarshalT(t, results["job_start"], &job)
	results["job_status"] = call("job_status", map[string]any{"job_id": job.JobID, "wait_s": 60})
	for name, out := range results {
		var o harness.Op
		for _, x := range harness.Ops() {
			if x.Name == name {
				o = x
			}
		}
		rs, err := mcpserver.ToolOf(o).OutputSchema.(*jsonschema.Schema).Resolve(nil)
		if err != nil {
			t.Fatalf("%s: resolve the compact schema: %v", name, err)
		}
		res, err := mcpserver.Result(out)
		if err != nil || res.IsError {
			t.Fatalf("%s: Result: %v %v", name, err, res)
		}
		var inst any
		remarshalT(t, res.StructuredContent, &inst)
		if err := rs.Validate(inst); err != nil {
			t.Errorf("%s: the result does not match its compact outputSchema: %v", name, err)
		}
	}
	var st struct {
		State string `json:"state"`
	}
	remarshalT(t, results["job_status"], &st)
	if st.State != "succeeded" {
		t.Errorf("job_status state %q, want succeeded (a finished job's result is validated)", st.State)
	}
}

func remarshalT(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}

// TestReadFileContentOnce reads a 12 KB file over an MCP session: the
// text block is the file, the structured content its metadata, and the
// content crosses the wire once.
func TestReadFileContentOnce(t *testing.T) {
	h := openHarness(t)
	var body strings.Builder
	for i := 0; body.Len() < 12<<10; i++ {
		body.WriteString("func f" + strings.Repeat("x", i%40) + "() { return \"<&>\" }\n")
	}
	root := testutil.Repo(t, map[string]string{"big.go": body.String()})
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test"), nil)
	// A person registers the checkout; the agent finds it in core.
	var reg harness.RegisterResult
	out, err := h.CallOp(context.Background(), "repository_register", json.RawMessage(`{"path":`+strconvQuote(root)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	remarshalT(t, out, &reg)
	if list := text(t, call(t, cs, "repository_list", nil)); !strings.Contains(list, reg.ID) {
		t.Fatalf("repository_list does not show %s: %s", reg.ID, list)
	}

	res := call(t, cs, "read_file", map[string]any{"repo_id": reg.ID, "path": "big.go"})
	if res.IsError {
		t.Fatalf("read_file: %s", text(t, res))
	}
	wire := 0
	for _, c := range res.Content {
		wire += len(c.(*mcp.TextContent).Text)
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	wire += len(sc)
	size := body.Len()
	if limit := size * 13 / 10; wire >= limit {
		t.Errorf("text blocks and structured content are %d bytes for a %d-byte file, want under %d (the content once)", wire, size, limit)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != body.String() {
		t.Errorf("the text block is not the file (%d bytes, want %d)", len(got), size)
	}
	var meta map[string]any
	if err := json.Unmarshal(sc, &meta); err != nil {
		t.Fatal(err)
	}
	if _, ok := meta["content"]; ok {
		t.Error("the structured content carries the content again")
	}
	for _, k := range []string{"path", "sha256", "size_bytes", "start_line", "end_line", "total_lines", "truncated", "route", "latency"} {
		if _, ok := meta[k]; !ok {
			t.Errorf("the structured content lacks %s: %s", k, sc)
		}
	}
	if meta["path"] != "big.go" || meta["size_bytes"] != float64(size) || meta["truncated"] != false {
		t.Errorf("metadata %v, want big.go, %d bytes, not truncated", meta, size)
	}
	if !reflect.DeepEqual(meta["end_line"], meta["total_lines"]) {
		t.Errorf("end_line %v, total_lines %v: the whole file was read", meta["end_line"], meta["total_lines"])
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
