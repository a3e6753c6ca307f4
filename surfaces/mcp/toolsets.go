package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/suggest"
)

// Toolsets and roles of a session.
//
// A server lists the tools of its session's toolsets: core always, the
// opt-in sets its Options name (default: core only). The `toolsets` tool
// (in core) lists the sets and enables or disables them in the session;
// the server then changes its tool list and the client gets
// notifications/tools/list_changed. Each stateful session has a server of
// its own (Factory.Session), so a change reaches that session only;
// stateless requests share one server per Options (Factory.Shared) and
// choose their sets with the request (OptionsFromRequest).
//
// The role decides what the session may call, not what it sees: every call
// carries the role in its Caller and the pipeline refuses an operation the
// role may not call (ROLE_DENIED, audited: harness/op/role.go). Toolsets
// are visibility only; nothing an agent sends changes its role.

// Options is what a session is served with: its toolsets and its role.
type Options struct {
	Toolsets []op.Toolset // nil = core only
	Role     op.Roles     // 0 = the default role (operator)
}

// ToolsetsTool is the name of the tool that lists and switches toolsets.
const ToolsetsTool = "toolsets"

// The request parameters and headers that choose a request's Options over
// HTTP (OptionsFromRequest).
const (
	ToolsetsParam  = "toolsets"
	RoleParam      = "role"
	ToolsetsHeader = "Harnessd-Toolsets"
	RoleHeader     = "Harnessd-Role"
)

// ParseToolsets parses a list of toolsets separated by commas (or spaces):
// "core,runs", "all" for every set. Core is always among them. An empty
// list is nil (core only); an unknown name is INVALID_ARGUMENT naming the
// sets there are.
func ParseToolsets(s string) ([]op.Toolset, error) {
	names := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	if len(names) == 0 {
		return nil, nil
	}
	var out []op.Toolset
	for _, n := range names {
		if n == "all" {
			return op.Toolsets(), nil
		}
		t := op.Toolset(strings.ToLower(n))
		if !t.Valid() {
			return nil, errs.New(errs.InvalidArgument, "unknown toolset %q: the toolsets are %s, or all", n, setNames(op.Toolsets())).
				With("toolset", n).With("valid_values", setNames(op.Toolsets()))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return normSets(out), nil
}

// ParseRole parses a role name ("" = the default role, 0).
func ParseRole(s string) (op.Roles, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return 0, nil
	}
	return op.ParseRole(s)
}

// OptionsFromRequest returns the Options an HTTP request to the MCP
// endpoint asks for: ?toolsets=core,runs&role=editor on the URL, or the
// headers Harnessd-Toolsets and Harnessd-Role (the URL wins). Bad values
// are INVALID_ARGUMENT naming the valid ones.
func OptionsFromRequest(r *http.Request) (Options, error) {
	q := r.URL.Query()
	pick := func(param, header string) string {
		if v := q.Get(param); v != "" {
			return v
		}
		return r.Header.Get(header)
	}
	var o Options
	var err error
	if o.Toolsets, err = ParseToolsets(pick(ToolsetsParam, ToolsetsHeader)); err != nil {
		return Options{}, err
	}
	if o.Role, err = ParseRole(pick(RoleParam, RoleHeader)); err != nil {
		return Options{}, err
	}
	return o, nil
}

// check validates o: known toolsets, at most one role.
func (o Options) check() error {
	for _, t := range o.Toolsets {
		if !t.Valid() {
			return errs.New(errs.InvalidArgument, "unknown toolset %q: the toolsets are %s", t, setNames(op.Toolsets()))
		}
	}
	if o.Role != 0 && len(o.Role.Names()) != 1 {
		return errs.New(errs.InvalidArgument, "role %s: a session acts as one role (%s)", o.Role, strings.Join(op.RoleNames(), ", "))
	}
	return nil
}

// sets returns o's toolsets, core first, each once, in op.Toolsets order.
func (o Options) sets() []op.Toolset { return normSets(o.Toolsets) }

// RoleName is the role a Caller names for o ("" = operator).
func (o Options) RoleName() string {
	if o.Role == 0 {
		return ""
	}
	return o.Role.String()
}

// key names o for the cache of shared servers.
func (o Options) key() string {
	return setNames(o.sets()) + "|" + o.RoleName()
}

// normSets returns core and ts, each once, in op.Toolsets order.
func normSets(ts []op.Toolset) []op.Toolset {
	out := []op.Toolset{op.Core}
	for _, t := range op.Toolsets()[1:] {
		if slices.Contains(ts, t) {
			out = append(out, t)
		}
	}
	return out
}

func setNames(ts []op.Toolset) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = string(t)
	}
	return strings.Join(names, ",")
}

// toolsetsArgs is the input of the toolsets tool.
type toolsetsArgs struct {
	Enable  []string `json:"enable,omitempty"`
	Disable []string `json:"disable,omitempty"`
}

// ToolsetInfo is one toolset as the toolsets tool lists it.
type ToolsetInfo struct {
	Name    string   `json:"name"`
	Enabled bool     `json:"enabled"`
	Tools   []string `json:"tools"`
}

// ToolsetsResult is what the toolsets tool answers: every set, whether
// this session has it enabled, and its tools; the session's role.
type ToolsetsResult struct {
	Toolsets []ToolsetInfo `json:"toolsets"`
	Role     string        `json:"role"`
}

// toolsetsTool is the MCP tool of the toolsets: its input names the opt-in
// sets.
func toolsetsTool() *mcp.Tool {
	var opt []any
	for _, t := range op.Toolsets()[1:] {
		opt = append(opt, string(t))
	}
	list := func(desc string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "array", Description: desc, Items: &jsonschema.Schema{Type: "string", Enum: opt}}
	}
	return &mcp.Tool{
		Name:  ToolsetsTool,
		Title: "Toolsets",
		Description: "List the toolsets (core is always on) and enable or disable sets in this session when you need a tool you do not see, " +
			`e.g. {"enable":["runs"]}. It changes what you see, not what your role may call.`,
		InputSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
			"enable":  list("sets to add to this session's tools"),
			"disable": list("sets to remove"),
		}},
		OutputSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
			"toolsets": {Type: "array"}, "role": {Type: "string"},
		}},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}
}

// decodeToolsetsArgs decodes the toolsets tool's input strictly.
func decodeToolsetsArgs(raw json.RawMessage) (toolsetsArgs, []op.Toolset, []op.Toolset, error) {
	var a toolsetsArgs
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&a); err != nil {
			return a, nil, nil, errs.New(errs.InvalidArgument, "toolsets: %v (fields: enable, disable: lists of %s)", err, setNames(op.Toolsets()[1:]))
		}
	}
	parse := func(names []string) ([]op.Toolset, error) {
		var out []op.Toolset
		for _, n := range names {
			if n == "all" {
				return op.Toolsets()[1:], nil
			}
			t := op.Toolset(n)
			if t == op.Core {
				return nil, errs.New(errs.InvalidArgument, "toolsets: core is always enabled").With("toolset", n)
			}
			if !t.Valid() {
				return nil, errs.New(errs.InvalidArgument, "toolsets: unknown toolset %q: the sets are %s (core is always on)", n, setNames(op.Toolsets()[1:])).
					With("toolset", n).With("valid_values", setNames(op.Toolsets()[1:]))
			}
			out = append(out, t)
		}
		return out, nil
	}
	en, err := parse(a.Enable)
	if err != nil {
		return a, nil, nil, err
	}
	dis, err := parse(a.Disable)
	if err != nil {
		return a, nil, nil, err
	}
	for _, t := range en {
		if slices.Contains(dis, t) {
			return a, nil, nil, errs.New(errs.InvalidArgument, "toolsets: %s is both enabled and disabled", t).With("toolset", string(t))
		}
	}
	return a, en, dis, nil
}

// hiddenError is the answer to a call of a tool whose set the session has
// not enabled: it names the set and how to enable it.
func hiddenError(name string, set op.Toolset, stateless bool) error {
	how := `call toolsets with {"enable":["` + string(set) + `"]}`
	if stateless {
		how = "add " + string(set) + " to ?toolsets= on the MCP URL (or the Harnessd-Toolsets header)"
	}
	return errs.New(errs.NotFound, "tool %s is in the toolset %s, which this session has not enabled: %s, then call it again", name, set, how).
		With("tool", name).With("toolset", string(set))
}

// maxSuggestedTools is how many tool names an unknown tool's error offers.
const maxSuggestedTools = 3

// unknownTool is the answer to a call of a tool there is not: the
// JSON-RPC error the SDK would answer (-32602, invalid params), with the
// nearest tool names (of every toolset: a hidden one answers how to
// enable it) and where the list is. Its data carries them as
// {"tool", "did_you_mean"}.
func (f *Factory) unknownTool(name string) *jsonrpc.Error {
	names := make([]string, 0, len(f.tools)+1)
	names = append(names, ToolsetsTool)
	for _, t := range f.tools {
		names = append(names, t.tool.Name)
	}
	near := suggest.Nearest(name, names, maxSuggestedTools)
	msg := fmt.Sprintf("unknown tool %q", name)
	if len(near) > 0 {
		msg += ": did you mean " + strings.Join(near, ", ") + "?"
	}
	msg += " (tools/list shows this session's tools; call toolsets to see every set)"
	e := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
	if near == nil {
		near = []string{}
	}
	if data, err := json.Marshal(map[string]any{"tool": name, "did_you_mean": near}); err == nil {
		e.Data = data
	}
	return e
}
