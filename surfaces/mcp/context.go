package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
)

// ContextURITemplate is the MCP resource template of a repository's
// assembled context (context_assemble as JSON):
// harnessd://repo/{repo_id}/context, with optional query parameters.
const ContextURITemplate = "harnessd://repo/{repo_id}/context{?command,token_budget,run_id}"

// ContextPrompt is the name of the MCP prompt of a repository's assembled
// context, rendered for reading.
const ContextPrompt = "repo_context"

// registerContext adds the context resource template and prompt: both
// run context_assemble through ex, so clients that browse resources or
// prompts find what an agent should read first.
func registerContext(s *mcp.Server, ex Backend) {
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "repo_context", Title: "Repository context", URITemplate: ContextURITemplate, MIMEType: "application/json",
		Description: "What to read first in a registered repository (context_assemble): state files, the rules that apply, docs, recent events, within a token budget. " +
			"harnessd://repo/{repo_id}/context, optionally with ?command= (an operation name), &token_budget=, &run_id=.",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		args, err := contextArgsOfURI(uri)
		if err != nil {
			return nil, err
		}
		out, err := ex.Exec(ctx, "context_assemble", args)
		if err != nil {
			if errs.CodeOf(err) == errs.RepositoryNotRegistered {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			return nil, contextErr(err)
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("encode context: %w", err)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{
		Name: ContextPrompt, Title: "Repository context",
		Description: "What to read first before acting in a repository (context_assemble), rendered as markdown.",
		Arguments: []*mcp.PromptArgument{
			{Name: "repo_id", Description: "repository id from repository_register", Required: true},
			{Name: "command", Description: "the operation you are about to call (e.g. apply_patch): rules are chosen for it"},
			{Name: "run_id", Description: "the run whose state and events to include"},
			{Name: "token_budget", Description: "tokens the context may take (default 8000, 500 to 200000)"},
		},
	}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a := req.Params.Arguments
		args := map[string]any{"repo_id": a["repo_id"]}
		if v := a["command"]; v != "" {
			args["command"] = v
		}
		if v := a["run_id"]; v != "" {
			args["run_id"] = v
		}
		if v := a["token_budget"]; v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("%s: token_budget %q is not a number", errs.InvalidArgument, v)
			}
			args["token_budget"] = n
		}
		raw, _ := json.Marshal(args)
		out, err := ex.Exec(ctx, "context_assemble", raw)
		if err != nil {
			return nil, contextErr(err)
		}
		text, err := renderContext(out)
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{
			Description: "Context of repository " + a["repo_id"],
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
		}, nil
	})
}

// contextErr is an operation's error as an MCP error: its code first.
func contextErr(err error) error {
	e := errs.From(err)
	return fmt.Errorf("%s: %s", e.Code, e.Message)
}

// contextArgsOfURI returns the context_assemble arguments of a resource
// URI: harnessd://repo/{repo_id}/context[?command=&token_budget=&run_id=].
func contextArgsOfURI(uri string) (json.RawMessage, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "harnessd" || u.Host != "repo" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	id, ok := strings.CutSuffix(strings.TrimPrefix(u.EscapedPath(), "/"), "/context")
	if !ok || id == "" || strings.Contains(id, "/") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if id, err = url.PathUnescape(id); err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	args := map[string]any{"repo_id": id}
	q := u.Query()
	for _, k := range []string{"command", "run_id"} {
		if v := q.Get(k); v != "" {
			args[k] = v
		}
	}
	if v := q.Get("token_budget"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%s: token_budget %q is not a number", errs.InvalidArgument, v)
		}
		args["token_budget"] = n
	}
	return json.Marshal(args)
}

// contextView is the part of context_assemble's answer the prompt shows.
type contextView struct {
	RunID string `json:"run_id"`
	State struct {
		Run *struct {
			Status          string   `json:"status"`
			CurrentStage    string   `json:"current_stage"`
			CompletedStages []string `json:"completed_stages"`
			Blocked         bool     `json:"blocked"`
			BlockedReason   string   `json:"blocked_reason"`
		} `json:"run"`
		Parts []contextPart `json:"parts"`
	} `json:"state"`
	CommandRoute *struct {
		Decision struct {
			Mode    string   `json:"mode"`
			Reasons []string `json:"reasons"`
		} `json:"decision"`
	} `json:"command_route"`
	Rules        []contextPart `json:"relevant_rules"`
	Docs         []contextPart `json:"relevant_docs"`
	Events       []contextPart `json:"recent_events"`
	Observations []contextPart `json:"observations"`
	Budget       struct {
		Budget, Used, Remaining int
	} `json:"token_budget"`
	Pruned []struct {
		ID, Reason string
	} `json:"pruned"`
	Summarised []struct {
		ID, Reason string
	} `json:"summarised"`
	Trivial bool `json:"is_trivial_chat"`
}

type contextPart struct {
	ID, Title, Text, Why string
}

// renderContext renders context_assemble's answer as markdown.
func renderContext(out any) (string, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode context: %w", err)
	}
	var v contextView
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("decode context: %w", err)
	}
	var w strings.Builder
	w.WriteString("# Repository context\n\n")
	if v.Trivial {
		w.WriteString("This request needs no repository action (trivial chat): the context below is optional.\n\n")
	}
	if r := v.State.Run; r != nil {
		fmt.Fprintf(&w, "Run %s is %s", v.RunID, r.Status)
		if r.CurrentStage != "" {
			fmt.Fprintf(&w, ", in stage %q", r.CurrentStage)
		}
		if len(r.CompletedStages) > 0 {
			fmt.Fprintf(&w, "; completed: %s", strings.Join(r.CompletedStages, ", "))
		}
		if r.Blocked {
			fmt.Fprintf(&w, "; blocked: %s", r.BlockedReason)
		}
		w.WriteString(".\n\n")
	}
	if r := v.CommandRoute; r != nil {
		fmt.Fprintf(&w, "Route of the command: %s (%s).\n\n", r.Decision.Mode, strings.Join(r.Decision.Reasons, "; "))
	}
	section := func(title string, parts []contextPart, asList bool) {
		if len(parts) == 0 {
			return
		}
		w.WriteString("## " + title + "\n\n")
		for _, p := range parts {
			if asList {
				w.WriteString("- " + p.Text + "\n")
				continue
			}
			w.WriteString("### " + p.Title + "\n\n" + strings.TrimRight(p.Text, "\n") + "\n\n")
		}
		if asList {
			w.WriteString("\n")
		}
	}
	section("Recent events", v.Events, true)
	section("State", v.State.Parts, false)
	section("Rules", v.Rules, false)
	section("Observations", v.Observations, true)
	section("Docs", v.Docs, false)
	fmt.Fprintf(&w, "---\nToken budget: %d of %d used, %d remaining.", v.Budget.Used, v.Budget.Budget, v.Budget.Remaining)
	if len(v.Summarised) > 0 {
		w.WriteString(" Summarised:")
		for _, s := range v.Summarised {
			fmt.Fprintf(&w, " %s (%s);", s.ID, s.Reason)
		}
	}
	if len(v.Pruned) > 0 {
		w.WriteString(" Left out:")
		for _, p := range v.Pruned {
			fmt.Fprintf(&w, " %s (%s);", p.ID, p.Reason)
		}
	}
	w.WriteString("\n")
	return w.String(), nil
}
