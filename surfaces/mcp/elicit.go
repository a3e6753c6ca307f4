package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/textsafe"
)

// Approvals in the client: when a call answers APPROVAL_REQUIRED and the
// client declared the elicitation capability (MCP 2025-06), the server
// asks the client's person — not the model — through an elicitation that
// shows the exact operation (the patch's text or the argv, the risk and
// the rule). Accept with approve true grants the approval and the call is
// retried with it at once; decline denies it; cancel (or a client that
// cannot answer) leaves it pending and the agent gets APPROVAL_REQUIRED as
// without elicitation. The decision is audited with who decided:
// "mcp-elicitation:<client name>".

// approver is a Backend whose approvals the client's person may decide.
type approver interface {
	Approval(ctx context.Context, id string) (*harness.Approval, error)
	DecideApproval(ctx context.Context, id string, approve bool, by, reason string) (*harness.Approval, error)
}

func (l local) Approval(ctx context.Context, id string) (*harness.Approval, error) {
	if !l.h.ClientApprovals() {
		return nil, errs.New(errs.PolicyDenied, "approvals in the client are off (harnessd serve --no-client-approvals)")
	}
	return l.h.Approval(ctx, id)
}

func (l local) DecideApproval(ctx context.Context, id string, approve bool, by, reason string) (*harness.Approval, error) {
	return l.h.DecideApproval(ctx, id, approve, by, reason)
}

// inputKey names harnessd's input request in a tool result.
const inputKey = "harnessd_approval"

// askedTTL is how long an elicitation stays answerable.
const askedTTL = 15 * time.Minute

// maxAsked bounds the elicitations remembered at once.
const maxAsked = 1024

// maxElicitDetail caps the operation text shown in an elicitation.
const maxElicitDetail = 8 << 10

// elicitor asks the client's person through the MCP multi-round-trip
// input requests (SEP-2322): the tool result asks for input, the client
// (or, for clients of older protocol versions, the SDK on the server's
// side) elicits it from its person and calls again with the answer. An
// answer counts only for an approval this server asked this session
// about: a client cannot approve by sending an answer nobody asked for.
type elicitor struct {
	ap    approver
	mu    sync.Mutex
	asked map[string]askedEntry // approval id → who was asked
}

type askedEntry struct {
	ss *mcp.ServerSession
	at time.Time
}

func (e *elicitor) markAsked(id string, ss *mcp.ServerSession) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	for k, v := range e.asked {
		if now.Sub(v.at) > askedTTL {
			delete(e.asked, k)
		}
	}
	if len(e.asked) >= maxAsked {
		return // the call answers APPROVAL_REQUIRED as without elicitation
	}
	e.asked[id] = askedEntry{ss: ss, at: now}
}

// takeAsked reports whether id was asked of ss (and forgets it).
func (e *elicitor) takeAsked(id string, ss *mcp.ServerSession) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	a, ok := e.asked[id]
	if !ok || a.ss != ss || time.Since(a.at) > askedTTL {
		return false
	}
	delete(e.asked, id)
	return true
}

// approve handles an APPROVAL_REQUIRED answer of a call (see the package
// comment above): it returns the tool result to send and true, or false
// to answer err as it is.
func (e *elicitor) approve(ctx context.Context, ex Backend, req *mcp.CallToolRequest, name string, err error) (*mcp.CallToolResult, bool) {
	ce := errs.From(err)
	ss := req.Session
	if ce.Code != errs.ApprovalRequired || ss == nil {
		return nil, false
	}
	id, _ := ce.Details["approval_id"].(string)
	if id == "" {
		return nil, false
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return nil, false
	}
	a, aerr := e.ap.Approval(ctx, id)
	if aerr != nil || a == nil || a.Status != "pending" {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(normRaw(req.Params.Arguments), &m) != nil {
		return nil, false
	}
	resp, answered := req.Params.InputResponses[inputKey].(*mcp.ElicitResult)
	if !answered || !e.takeAsked(id, ss) {
		e.markAsked(id, ss)
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			inputKey: &mcp.ElicitParams{Message: elicitMessage(a), RequestedSchema: elicitSchema()},
		}}, true
	}
	by := "mcp-elicitation"
	if p.ClientInfo != nil && p.ClientInfo.Name != "" {
		by += ":" + p.ClientInfo.Name
	}
	reason, _ := resp.Content["reason"].(string)
	approve, _ := resp.Content["approve"].(bool)
	switch {
	case resp.Action == "accept" && approve:
		if _, derr := e.ap.DecideApproval(ctx, id, true, by, reason); derr != nil {
			return ErrorResult(derr), true
		}
	case resp.Action == "accept" || resp.Action == "decline":
		if strings.TrimSpace(reason) == "" {
			reason = "declined in " + by
		}
		if _, derr := e.ap.DecideApproval(ctx, id, false, by, reason); derr != nil {
			return ErrorResult(derr), true
		}
		return ErrorResult(errs.New(errs.PolicyDenied, "the person at the client denied %s (approval %s): %s", name, id, reason).With("approval_id", id)), true
	default: // cancel: no decision; the approval stays pending
		return nil, false
	}
	m["approval_id"] = id
	b, merr := json.Marshal(m)
	if merr != nil {
		return ErrorResult(errs.Wrap(errs.Internal, merr, "re-encode arguments: %v", merr)), true
	}
	out, err := ex.Exec(ctx, name, b)
	if err != nil {
		return ErrorResult(err), true
	}
	res, _ := Result(out)
	return res, true
}

func normRaw(b json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(b))) == 0 || string(b) == "null" {
		return json.RawMessage("{}")
	}
	return b
}

// elicitMessage is what the person reads: the operation, why it needs
// approval, and the exact input. Every agent-supplied part is escaped
// (textsafe): a carriage return, an escape sequence, a bidi override or a
// line break in an argv or a path would otherwise show the person another
// operation than the one approved ("\nOperation: ls" as a line of its
// own). The exact input is JSON, escaped the JSON way and indented under
// its heading.
func elicitMessage(a *harness.Approval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "harnessd: an agent asks to run %s", textsafe.Line(a.Operation))
	if a.RepoID != "" {
		fmt.Fprintf(&b, " on %s", textsafe.Line(a.RepoID))
	}
	fmt.Fprintf(&b, ".\nWhy approval is needed: %s (risk %d", textsafe.Line(a.Reason), a.Risk)
	if a.RuleID != "" {
		fmt.Fprintf(&b, ", rule %s", textsafe.Line(a.RuleID))
	}
	b.WriteString(").\n")
	if a.Client != "" || a.RunID != "" {
		b.WriteString("Asked by:")
		if a.Client != "" {
			fmt.Fprintf(&b, " %s", textsafe.Line(a.Client))
		}
		if a.RunID != "" {
			fmt.Fprintf(&b, " (run %s)", textsafe.Line(a.RunID))
		}
		b.WriteString("\n")
	}
	if a.Summary != "" {
		fmt.Fprintf(&b, "Operation: %s\n", textsafe.Line(a.Summary))
	}
	if d := a.Detail; d != "" {
		if len(d) > maxElicitDetail {
			d = strings.ToValidUTF8(d[:maxElicitDetail], "") + "\n…"
		}
		// JSON's own line breaks are the only ones left: each line of it
		// is indented under the heading.
		fmt.Fprintf(&b, "Exact input:\n  %s\n", strings.ReplaceAll(textsafe.JSON(d), "\n", "\n  "))
	}
	fmt.Fprintf(&b, "Approving allows exactly this input once (approval %s, expires %s).", textsafe.Line(a.ID), a.ExpiresAt.Format(time.RFC3339))
	return b.String()
}

// elicitSchema is the form: approve, and an optional reason.
func elicitSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "allow exactly this operation once"},
			"reason":  map[string]any{"type": "string", "title": "Reason", "description": "why (recorded in the audit log)"},
		},
		"required": []string{"approve"},
	}
}
