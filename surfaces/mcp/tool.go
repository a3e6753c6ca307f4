package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness"
)

// Instructions are the server instructions a client shows its model once.
const Instructions = "harnessd mediates repository work: register a repository with repository_register, " +
	"then use its repo_id with the other tools. Errors carry a stable code in structuredContent.error.code."

// ToolOf is the MCP tool of an operation: its title, description, input
// and output schemas, and the annotations the op table says (read-only,
// destructive, idempotent; never open-world: harnessd acts on the
// registered checkouts only).
func ToolOf(o harness.Op) *mcp.Tool {
	t := &mcp.Tool{
		Name:        o.Name,
		Title:       o.Title,
		Description: o.Description,
		InputSchema: o.InputSchema,
		Annotations: &mcp.ToolAnnotations{
			Title:          o.Title,
			ReadOnlyHint:   o.ReadOnly,
			IdempotentHint: o.Idempotent,
			OpenWorldHint:  new(false),
		},
	}
	if !o.ReadOnly {
		t.Annotations.DestructiveHint = new(o.Destructive)
	}
	if o.OutputSchema != nil {
		t.OutputSchema = o.OutputSchema
	}
	return t
}
