package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

func TestContextResourceAndPrompt(t *testing.T) {
	h := openHarness(t)
	const value = "sk-proj-Zq8Wm3Nx7Vb2Lk5Jh9Gf4Ds1"
	root := testutil.Repo(t, map[string]string{"main.go": "package main\n", ".env": "OPENAI_API_KEY=" + value + "\n",
		"AGENTS.md": "# Agents\n\n## Go style\n\nRun gofmt.\n\n## Python\n\nUse ruff.\n", "README.md": "# Demo\nkey " + value + "\n"})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, mcpserver.New(mcpserver.Local(h), "test", everySet), nil)
	ctx := context.Background()

	found := false
	for tpl, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tpl.URITemplate == mcpserver.ContextURITemplate && tpl.MIMEType == "application/json" {
			found = true
		}
	}
	if !found {
		t.Errorf("resource template %s not listed", mcpserver.ContextURITemplate)
	}

	uri := "harnessd://repo/" + r.ID + "/context?command=apply_patch&token_budget=600"
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" {
		t.Fatalf("contents = %+v", res.Contents)
	}
	text := res.Contents[0].Text
	var got struct {
		Rules []struct {
			ID string `json:"id"`
		} `json:"relevant_rules"`
		Budget struct {
			Budget int `json:"budget"`
			Used   int `json:"used"`
		} `json:"token_budget"`
	}
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("resource text is not JSON: %v\n%s", err, text)
	}
	if got.Budget.Budget != 600 || got.Budget.Used > 600 || len(got.Rules) == 0 {
		t.Errorf("resource = %s, want rules within a budget of 600", text)
	}
	if strings.Contains(text, value) || strings.Contains(text, "Use ruff") {
		t.Errorf("resource holds the secret or an irrelevant rule: %s", text)
	}

	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "harnessd://repo/nope/context"}); err == nil {
		t.Error("reading the context of an unknown repository succeeded")
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "harnessd://repo/" + r.ID + "/context?token_budget=10"}); err == nil ||
		!strings.Contains(err.Error(), "INVALID_ARGUMENT") {
		t.Errorf("token_budget 10 = %v, want INVALID_ARGUMENT", err)
	}

	// The tool answers the same, and its result passes its outputSchema.
	tr, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "context_assemble", Arguments: map[string]any{"repo_id": r.ID, "command": "apply_patch", "token_budget": 600}})
	if err != nil || tr.IsError {
		t.Fatalf("context_assemble tool = %+v, %v", tr, err)
	}
	if b, _ := json.Marshal(tr.StructuredContent); !strings.Contains(string(b), `"relevant_rules"`) || strings.Contains(string(b), value) {
		t.Errorf("tool result = %s", b)
	}

	found = false
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		found = found || p.Name == mcpserver.ContextPrompt
	}
	if !found {
		t.Errorf("prompt %s not listed", mcpserver.ContextPrompt)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: mcpserver.ContextPrompt, Arguments: map[string]string{"repo_id": r.ID, "command": "apply_patch"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Messages) != 1 {
		t.Fatalf("messages = %+v", pr.Messages)
	}
	msg := pr.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{"# Repository context", "### AGENTS.md: Go style", "Run gofmt.", "Token budget:", "Route of the command: fast", "key [REDACTED"} {
		if !strings.Contains(msg, want) {
			t.Errorf("prompt lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, value) {
		t.Errorf("prompt holds the secret value:\n%s", msg)
	}
}
