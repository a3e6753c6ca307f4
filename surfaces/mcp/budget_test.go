package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tiktoken-go/tokenizer"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/op"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// The token budget of tools/list (issue #30, DESIGN §15), counted with
// o200k over the JSON the tools go out as.
const (
	coreBudget = 4000  // the core toolset
	allBudget  = 20000 // every toolset together
)

// listCost is what one list of tools costs a client and its model.
type listCost struct {
	tools  int
	bytes  int // tools/list result, {"tools":[...]}
	tokens int // o200k tokens of those bytes
	seen   int // o200k tokens of name, description and input schema: what a model is shown
	// heaviest is the tool with the most tokens of its own, and them.
	heaviest       string
	heaviestTokens int
}

// measure marshals tools as tools/list sends them and counts their tokens.
func measure(t *testing.T, enc tokenizer.Codec, tools []*mcp.Tool) listCost {
	t.Helper()
	count := func(v any) (int, int) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		n, err := enc.Count(string(b))
		if err != nil {
			t.Fatal(err)
		}
		return len(b), n
	}
	c := listCost{tools: len(tools)}
	c.bytes, c.tokens = count(map[string]any{"tools": tools})
	type seen struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema any    `json:"inputSchema"`
	}
	var shown []seen
	for _, tool := range tools {
		shown = append(shown, seen{tool.Name, tool.Description, tool.InputSchema})
		if _, n := count(tool); n > c.heaviestTokens {
			c.heaviest, c.heaviestTokens = tool.Name, n
		}
	}
	_, c.seen = count(shown)
	return c
}

// served lists the tools a session with the toolsets o names sees, as
// the server sends them (tools/list through a client, in list order).
func served(t *testing.T, h *harness.Harness, o mcpserver.Options) []*mcp.Tool {
	t.Helper()
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test", o), nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// TestToolsListBudget fails when tools/list of a session with the core
// toolset, or with every set, costs more o200k tokens than the budget,
// naming the heaviest tool; it logs the table docs/clients.md shows. Each
// set's row counts its own tools (a session enabling it lists core too).
func TestToolsListBudget(t *testing.T) {
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	h := openHarness(t)
	core := served(t, h, mcpserver.Options{})
	inCore := map[string]bool{}
	for _, tool := range core {
		inCore[tool.Name] = true
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| set | tools | tools/list bytes | tokens, all (o200k) | tokens a model sees |\n|---|---|---|---|---|\n")
	row := func(name string, c listCost) {
		fmt.Fprintf(&table, "| %s | %d | %d | %d | %d |\n", name, c.tools, c.bytes, c.tokens, c.seen)
	}
	c := measure(t, enc, core)
	row(string(op.Core), c)
	if c.tokens > coreBudget {
		t.Errorf("tools/list of core costs %d tokens, budget %d: the heaviest tool is %s (%d tokens)", c.tokens, coreBudget, c.heaviest, c.heaviestTokens)
	}
	for _, set := range op.Toolsets()[1:] {
		var own []*mcp.Tool
		for _, tool := range served(t, h, mcpserver.Options{Toolsets: []op.Toolset{set}}) {
			if !inCore[tool.Name] {
				own = append(own, tool)
			}
		}
		if len(own) == 0 {
			t.Errorf("a session enabling %s lists no tool beyond core", set)
		}
		row(string(set), measure(t, enc, own))
	}
	all := served(t, h, mcpserver.Options{Toolsets: op.Toolsets()})
	if agent := len(harness.Ops()); len(all) < len(core) || len(all) > agent+1 {
		t.Errorf("a session with every set lists %d tools, want the agent operations and the toolsets tool", len(all))
	}
	c = measure(t, enc, all)
	row("all", c)
	if c.tokens > allBudget {
		t.Errorf("tools/list of every set costs %d tokens, budget %d: the heaviest tool is %s (%d tokens)", c.tokens, allBudget, c.heaviest, c.heaviestTokens)
	}
	if n, err := enc.Count(mcpserver.Instructions); err == nil {
		fmt.Fprintf(&table, "\nserver instructions: %d bytes, %d tokens\n", len(mcpserver.Instructions), n)
	}
	t.Log(table.String())
}
