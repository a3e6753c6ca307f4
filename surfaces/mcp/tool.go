package mcpserver

import (
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness"
)

// Instructions are the server instructions a client shows its model once:
// the workflow, how to see more tools, the error shape, and the
// parameters every tool takes, which the tools' own schemas leave out
// (see ToolOf).
const Instructions = `harnessd does your repository work (reads, edits, commands, checks, commits) under policy, and records it.
Workflow: repository_list gives the repo_id the tools take (repository_register, admin set, adds a checkout). Read with read_file and search; edit with apply_patch; verify with run_check (a named test or build); commit with git_commit. Work longer than ~15 s, or that must survive a restart: job_start, then job_status with wait_s.
Only core tools are listed at first: call toolsets to enable more (git, jobs, runs, targets, undo, provenance, admin).
Every tool also takes run_id (the run the call belongs to; default: this session's run) and include_latency_breakdown (true adds each segment's latency to the result). Writes take request_id (a retry with the same one replays the first result) and wait_ms (wait for a busy file instead of MUTATION_BUSY; max 30000); apply_patch, git_stage and git_commit take on_busy "durable" (still busy: queued as a job, see queued.job_id).
A failed call is isError with structuredContent.error.code (stable) and a message that names the fix. APPROVAL_REQUIRED carries an approval_id: once a person approves, repeat the call with approval_id.`

// ToolOf is the MCP tool of an operation as a model and a client see it:
// its title, description, input schema without the common parameters
// (CompactInput), compact output schema (CompactOutput), and the
// annotations the op table says (read-only, destructive, idempotent;
// never open-world: harnessd acts on the registered checkouts only). The
// registry's full schemas are left as they are (the HTTP API and the
// docs use them).
func ToolOf(o harness.Op) *mcp.Tool {
	t := &mcp.Tool{
		Name:        o.Name,
		Title:       o.Title,
		Description: o.Description,
		InputSchema: CompactInput(o.InputSchema, o.ReadOnly),
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:   o.ReadOnly,
			IdempotentHint: o.Idempotent,
			OpenWorldHint:  new(false),
		},
	}
	if !o.ReadOnly {
		t.Annotations.DestructiveHint = new(o.Destructive)
	}
	if o.OutputSchema != nil {
		t.OutputSchema = CompactOutput(o.OutputSchema)
	}
	return t
}

// commonRunID begins the description the registry gives the run_id every
// agent operation takes (op.Def); an operation's own run_id field (the
// run to show, end or undo) says something else and stays.
const commonRunID = "the run this call belongs to"

// CompactInput returns s without the parameters every tool takes, which
// the Instructions state once: include_latency_breakdown, the common
// run_id, every write's wait_ms and on_busy, and approval_id on a read-only tool (a
// person is asked to approve only work that is not read-only); repo_id and
// approval_id keep no description the Instructions give (statedOnce). Its top level stays open
// (no additionalProperties: false), so a call that passes them is still
// valid; the server decodes them as before. s itself is not changed.
func CompactInput(s *jsonschema.Schema, readOnly bool) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	drop := func(name string, p *jsonschema.Schema) bool {
		if slices.Contains(s.Required, name) {
			return false
		}
		switch name {
		case "include_latency_breakdown", "wait_ms", "on_busy":
			return true
		case "run_id":
			return strings.HasPrefix(p.Description, commonRunID)
		case "approval_id":
			return readOnly
		}
		return false
	}
	c := *s
	c.AdditionalProperties = nil
	c.Properties = maps.Clone(s.Properties)
	c.PropertyOrder = slices.Clone(s.PropertyOrder)
	for name, p := range s.Properties {
		if drop(name, p) {
			delete(c.Properties, name)
			c.PropertyOrder = slices.DeleteFunc(c.PropertyOrder, func(n string) bool { return n == name })
			continue
		}
		if d, ok := statedOnce[name]; ok && p.Description == d {
			q := *p
			q.Description = ""
			c.Properties[name] = &q
		}
	}
	return &c
}

// statedOnce are the descriptions of parameters the Instructions explain
// once (where the repo_id comes from, what an approval_id is): a tool's
// schema keeps the parameter and drops the description, unless the tool
// says something else of it.
var statedOnce = map[string]string{
	"repo_id":     "from repository_list",
	"approval_id": "from APPROVAL_REQUIRED, once a person approved it",
}

// commonResult are the fields every result carries (op.Meta), and the
// record of the call every receipt carries (when it was, in which run and
// span, how long it took): the docs state them once (docs/mcp.md), as the
// Instructions state the common parameters, so no output schema repeats
// them.
var commonResult = []string{"route", "latency", "at", "run_id", "span_id", "latency_ms"}

// CompactOutput returns the output schema a client validates structured
// content against, without what costs tokens and tells it nothing: the
// top-level properties keep their one type, nested objects and arrays
// are only {"type":"object"} and {"type":"array"}, and a property that
// may be null (["null","array"]: a nil list or map) or has no one type
// (any JSON value) is left out, as are the fields every result carries
// (commonResult): the object stays open to fields it does not list. No
// descriptions, bounds, enums, required lists or additionalProperties:
// every result the full schema accepts, the compact one accepts too. s
// itself is not changed.
func CompactOutput(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	c := &jsonschema.Schema{Type: s.Type, Types: slices.Clone(s.Types)}
	for name, p := range s.Properties {
		if slices.Contains(commonResult, name) {
			continue
		}
		if t := typeOnly(p, s.Defs); t != nil {
			if c.Properties == nil {
				c.Properties = map[string]*jsonschema.Schema{}
			}
			c.Properties[name] = t
		}
	}
	return c
}

// typeOnly is p reduced to its one type, following a reference into
// defs; nil when p has no one type.
func typeOnly(p *jsonschema.Schema, defs map[string]*jsonschema.Schema) *jsonschema.Schema {
	for seen := 0; p != nil && p.Ref != "" && seen < 8; seen++ {
		p = defs[strings.TrimPrefix(p.Ref, "#/$defs/")]
	}
	if p == nil || p.Type == "" {
		return nil
	}
	return &jsonschema.Schema{Type: p.Type}
}
