package mcpserver

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/jsonx"
)

// Texter is a result whose text block is not its JSON: read_file's is the
// file's text itself, so a client that shows the model only text blocks
// shows the code as it is. The note (may be empty) is a second text block
// with what the text omits (the window, truncation, redactions).
type Texter interface {
	TextBlock() (text, note string, ok bool)
}

// TextOnce is a Texter whose text block is content its JSON holds too:
// the structured content is then WithoutText, the result without that
// content (its metadata), so the content crosses the wire once.
type TextOnce interface {
	Texter
	WithoutText() any
}

// Result wraps an operation result as a tool result: structured content
// plus the same JSON as text for clients that read only text (or the
// result's own text, see Texter; with TextOnce the structured content
// leaves that text out). JSON is written without HTML escaping:
// `2>/dev/null && x` stays itself in the text block.
func Result(out any) (*mcp.CallToolResult, error) {
	var content []mcp.Content
	structured := out
	if t, ok := out.(Texter); ok {
		if text, note, ok := t.TextBlock(); ok {
			content = []mcp.Content{&mcp.TextContent{Text: text}}
			if note != "" {
				content = append(content, &mcp.TextContent{Text: note})
			}
			if once, ok := out.(TextOnce); ok {
				structured = once.WithoutText()
			}
		}
	}
	b, err := jsonx.Marshal(structured)
	if err != nil {
		return ErrorResult(errs.Wrap(errs.Internal, err, "encode result: %v", err)), nil
	}
	if content == nil {
		content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
	}
	return &mcp.CallToolResult{Content: content, StructuredContent: json.RawMessage(b)}, nil
}

// ErrorBody is the structured content of a tool error.
type ErrorBody struct {
	Error *errs.Error `json:"error"`
}

// ErrorResult wraps err as an isError tool result whose structured content
// is {"error": {"code", "message", "details"}}.
func ErrorResult(err error) *mcp.CallToolResult {
	body := ErrorBody{Error: errs.From(err)}
	b, _ := jsonx.Marshal(body)
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}
}
