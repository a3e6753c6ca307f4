package mcpserver_test

import (
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

// TestToolsListBudget fails when the tools of the core toolset, or of all
// sets together, cost more o200k tokens than the budget, naming the
// heaviest tool; it logs the table the README shows.
func TestToolsListBudget(t *testing.T) {
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	bySet := map[op.Toolset][]*mcp.Tool{}
	var all []*mcp.Tool
	for _, o := range harness.Ops() {
		if !o.Agent {
			continue
		}
		tool := mcpserver.ToolOf(o)
		bySet[o.Toolset] = append(bySet[o.Toolset], tool)
		all = append(all, tool)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| set | tools | tools/list bytes | tokens, all (o200k) | tokens a model sees |\n|---|---|---|---|---|\n")
	row := func(name string, c listCost) {
		fmt.Fprintf(&table, "| %s | %d | %d | %d | %d |\n", name, c.tools, c.bytes, c.tokens, c.seen)
	}
	for _, set := range op.Toolsets() {
		c := measure(t, enc, bySet[set])
		row(string(set), c)
		if set == op.Core && c.tokens > coreBudget {
			t.Errorf("tools/list of core costs %d tokens, budget %d: the heaviest tool is %s (%d tokens)", c.tokens, coreBudget, c.heaviest, c.heaviestTokens)
		}
	}
	c := measure(t, enc, all)
	row("all", c)
	if c.tokens > allBudget {
		t.Errorf("tools/list of every set costs %d tokens, budget %d: the heaviest tool is %s (%d tokens)", c.tokens, allBudget, c.heaviest, c.heaviestTokens)
	}
	if n, err := enc.Count(mcpserver.Instructions); err == nil {
		fmt.Fprintf(&table, "\nserver instructions: %d bytes, %d tokens\n", len(mcpserver.Instructions), n)
	}
	t.Log(table.String())
}
