// Package context holds context_assemble (FlowDeck L1): what an agent
// should read first about a repository and its run, fitted to a token
// budget. The mechanism is internal/ctxasm; this package gathers the
// run's state and events, the routing decision and the secrets to redact.
package context

import (
	stdctx "context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/classify"
	"github.com/harnessd/harnessd/internal/ctxasm"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Ops returns context_assemble.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[Args]{Name: "context_assemble", Title: "Assemble context", Output: Result{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Runs, Roles: op.ReadRoles, NoRepo: true,
			Description: "Before working in an unfamiliar repository or taking up a run, get what to read first within a token budget: state files (STATE.md, PLAN.md), " +
				"the rules that apply (AGENTS.md, .cursor/rules, CONTRIBUTING.md), docs, and the run's stages, failures and observations. " +
				"A file you already know: read_file. " +
				"Example: {\"command\":\"apply_patch\",\"token_budget\":4000}",
			Repo: func(a Args) string { return a.RepoID }, Prepare: assemble}),
	}
}

// Args are the arguments of context_assemble.
type Args struct {
	RepoID      string         `json:"repo_id" jsonschema:"from repository_list"`
	RunID       string         `json:"run_id,omitempty" jsonschema:"the run to include; default this session's"`
	Command     string         `json:"command,omitempty" jsonschema:"the tool you will call next, e.g. apply_patch: its rules, and how it would run"`
	CommandArgs map[string]any `json:"args,omitempty" jsonschema:"command's arguments (argv, path, ...)"`
	TokenBudget int            `json:"token_budget,omitempty" jsonschema:"default 8000, 500 to 200000"`
	op.Approval
}

// Result is the result of context_assemble: the AssembledContext.
type Result struct {
	RunID         string             `json:"run_id,omitempty"`
	State         State              `json:"state"`
	CommandRoute  *Route             `json:"command_route,omitempty"`
	RelevantRules []ctxasm.Part      `json:"relevant_rules"`
	RelevantDocs  []ctxasm.Part      `json:"relevant_docs"`
	RecentEvents  []ctxasm.Part      `json:"recent_events"`
	Observations  []ctxasm.Part      `json:"observations"`
	TokenBudget   ctxasm.TokenBudget `json:"token_budget"`
	Pruned        []ctxasm.Pruned    `json:"pruned"`
	Summarised    []ctxasm.Summary   `json:"summarised"`
	IsTrivialChat bool               `json:"is_trivial_chat"`
	Languages     []string           `json:"languages"`
	Tracked       string             `json:"tracked_from,omitempty"`
	// PreviousRun is the summary of the latest other run in the
	// repository (written when it ended or went idle), bounded.
	PreviousRun *messages.RunSummary `json:"previous_run,omitempty"`
	op.Meta
}

// State is the repository's state files and the run's stage state.
type State struct {
	Run   *RunStage     `json:"run,omitempty"`
	Parts []ctxasm.Part `json:"parts"`
}

// RunStage is the stage state of the run.
type RunStage struct {
	RunID           string   `json:"run_id"`
	Status          string   `json:"status"`
	CurrentStage    string   `json:"current_stage,omitempty"`
	CompletedStages []string `json:"completed_stages"`
	Blocked         bool     `json:"blocked"`
	BlockedReason   string   `json:"blocked_reason,omitempty"`
}

// Route is the routing decision of command with args (route_explain's).
type Route struct {
	Decision route.Decision   `json:"decision"`
	Command  *classify.Result `json:"command,omitempty"`
}

// Limits of the inputs.
const (
	maxCommand = 128
	maxArgs    = 64 << 10 // bytes of args, as JSON
	// maxRepoEvents is how many receipts, approvals and failures of the
	// repository are shown without a run (each).
	maxRepoEvents = 5
)

func assemble(_ stdctx.Context, c *op.Call, a Args) (*op.Plan, error) {
	budget, err := ctxasm.CheckBudget(a.TokenBudget)
	if err != nil {
		return nil, err
	}
	if len(a.Command) > maxCommand || strings.ContainsFunc(a.Command, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') }) {
		return nil, errs.New(errs.InvalidArgument, "command %q: an operation name (lower case, digits, _; at most %d), e.g. run_command or apply_patch", a.Command, maxCommand)
	}
	if len(a.CommandArgs) > 0 && a.Command == "" {
		return nil, errs.New(errs.InvalidArgument, "args needs command: name the operation the args are for")
	}
	if len(a.CommandArgs) > 0 {
		if b, err := json.Marshal(a.CommandArgs); err != nil || len(b) > maxArgs {
			return nil, errs.New(errs.InvalidArgument, "args: at most %d bytes of JSON", maxArgs)
		}
	}
	// It reads, like read_file: its descriptor routes it (route.Readonly).
	return &op.Plan{Gate: govern.Input{Args: a}, Run: func(ctx stdctx.Context) (any, error) {
		return run(ctx, c, a, budget)
	}}, nil
}

func run(ctx stdctx.Context, c *op.Call, a Args, budget int) (any, error) {
	root := c.Root.Path()
	now := time.Now
	if c.Env.Now != nil {
		now = c.Env.Now
	}
	req := ctxasm.Request{Command: a.Command, Budget: budget}
	// The command's descriptor says its topics, whether it changes the
	// checkout and whether it touches a repository; a name the registry
	// does not know has none.
	reg := c.Pipeline().Registry()
	if o, ok := reg.Lookup(a.Command); ok {
		req.Op = o.ContextFacts()
	}
	if red := c.Env.RedactorFor(ctx, root); red != nil {
		req.Redact = func(s string) string { out, _ := red.String(s); return out }
	}
	var rt *Route
	if a.Command != "" {
		rr := routeRequest(reg, a.Command, a.CommandArgs)
		req.Argv, req.Paths = rr.Argv, pathsOf(a.CommandArgs)
		rt = &Route{Decision: route.Decide(rr)}
		if len(rr.Argv) > 0 {
			cl := classify.Argv(rr.Argv)
			rt.Command = &cl
		}
	}
	runID := a.RunID
	if runID == "" {
		runID = c.Caller.RunID
	}
	out := &Result{RunID: runID, CommandRoute: rt}
	if runID != "" && c.Env.Runs != nil {
		got, err := c.Env.Runs.Get(ctx, runID, true)
		if err != nil {
			return nil, err
		}
		st := got.State
		req.Run, req.Spans, req.Stage = &st, got.Spans, st.CurrentStage
		out.State.Run = &RunStage{RunID: st.RunID, Status: st.Status, CurrentStage: st.CurrentStage,
			CompletedStages: append([]string{}, st.CompletedStages...), Blocked: st.Blocked, BlockedReason: st.BlockedReason}
		if req.Redact != nil {
			out.State.Run.BlockedReason = req.Redact(st.BlockedReason)
		}
	} else {
		req.Events = repoEvents(ctx, c)
	}
	co := ctxasm.Scan(c.Root, &c.Env.ContextCache, now())
	res := ctxasm.Assemble(co, req)
	out.State.Parts = res.State
	out.RelevantRules, out.RelevantDocs, out.RecentEvents, out.Observations = res.Rules, res.Docs, res.Events, res.Observations
	out.TokenBudget, out.Pruned, out.Summarised, out.Languages, out.Tracked = res.Budget, res.Pruned, res.Summarised, res.Languages, co.TrackedFrom
	out.IsTrivialChat = ctxasm.Trivial(a.Command, len(a.CommandArgs) > 0, req)
	out.PreviousRun = previousRun(c, runID)
	snap := messages.RunTokenBudget{Budget: res.Budget.Budget, Used: res.Budget.Used, Remaining: res.Budget.Remaining,
		Parts: len(res.Budget.Parts), Pruned: len(res.Pruned), Summarised: len(res.Summarised)}
	if runID != "" && c.Env.Runs != nil {
		c.Env.Runs.NoteContext(runID, snap)
	}
	c.FinishIn(op.SegExecution)
	return out, nil
}

// NoteSpan counts the assembled text as the call's output.
func (r *Result) NoteSpan(s *messages.RunSpan) {
	var n int
	for _, l := range [][]ctxasm.Part{r.State.Parts, r.RelevantRules, r.RelevantDocs, r.RecentEvents, r.Observations} {
		for _, p := range l {
			n += len(p.Title) + len(p.Text)
		}
	}
	if r.PreviousRun != nil {
		n += len(r.PreviousRun.Text)
	}
	s.OutputBytes = int64(n)
}

// previousRun returns the newest summary of a run other than runID in the
// call's repository, nil without one.
func previousRun(c *op.Call, runID string) *messages.RunSummary {
	if c.Env.Store == nil {
		return nil
	}
	var last *messages.RunSummary
	_ = c.Env.Store.Scan(persistence.RunSummaryPrefix(c.Repo.Repo.ID), func(_ []byte, decode func(any) error) error {
		var s messages.RunSummary
		if decode(&s) == nil && s.RunID != runID {
			last = &s
		}
		return nil
	})
	return last
}

// routeRequest builds the router's request of command with args, each
// operation with its descriptor's route class.
func routeRequest(reg *op.Registry, command string, args map[string]any) route.Request {
	r := route.Request{Tool: command, Kind: reg.RouteKind(command), Argv: strs(args["argv"]), TimeoutMs: num(args["timeout_ms"]), Writes: boolean(args["writes"]),
		Deliverables: num(args["deliverables"])}
	if steps, ok := args["steps"].([]any); ok {
		for _, s := range steps {
			m, _ := s.(map[string]any)
			if m == nil {
				continue
			}
			tool, _ := m["tool"].(string)
			sa, _ := m["args"].(map[string]any)
			if sa == nil {
				sa = m
			}
			r.Steps = append(r.Steps, route.Request{Tool: tool, Kind: reg.RouteKind(tool), Argv: strs(sa["argv"]), TimeoutMs: num(sa["timeout_ms"]), Writes: boolean(sa["writes"])})
		}
	}
	return r
}

// pathsOf returns the paths args name: path, paths, allowed_paths and the
// paths of apply_patch's ops.
func pathsOf(args map[string]any) []string {
	var out []string
	if p, ok := args["path"].(string); ok && p != "" {
		out = append(out, p)
	}
	out = append(out, strs(args["paths"])...)
	out = append(out, strs(args["allowed_paths"])...)
	if ops, ok := args["ops"].([]any); ok {
		for _, o := range ops {
			if m, ok := o.(map[string]any); ok {
				if p, ok := m["path"].(string); ok && p != "" {
					out = append(out, p)
				}
			}
		}
	}
	for i, p := range out {
		out[i] = strings.TrimPrefix(p, "./")
	}
	return out
}

func strs(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func num(v any) int {
	switch n := v.(type) {
	case float64:
		if n > 0 && n < 1e9 {
			return int(n)
		}
	case json.Number:
		i, _ := n.Int64()
		return int(i)
	}
	return 0
}

func boolean(v any) bool { b, _ := v.(bool); return b }

// repoEvents returns the repository's recent events when the call has no
// run: the last failures of its active runs, its last receipts and its
// approval requests, newest first.
func repoEvents(ctx stdctx.Context, c *op.Call) []ctxasm.Event {
	id := c.Repo.Repo.ID
	var out []ctxasm.Event
	if c.Env.Runs != nil {
		if states, err := c.Env.Runs.List(ctx, messages.RunActive, 100); err == nil {
			n := 0
			for _, st := range states {
				if f := st.LastFailure; st.RepoID == id && f != nil && n < maxRepoEvents {
					out = append(out, ctxasm.Event{Kind: "failure", ID: f.SpanID,
						Text: f.Op + " failed with " + f.ErrorCode + " in run " + st.RunID + " (span " + f.SpanID + ")"})
					n++
				}
			}
		}
	}
	if c.Env.Store != nil {
		prefix := persistence.ReceiptKey(id, 0)
		prefix = prefix[:len(prefix)-8]
		var last [][]byte
		_ = c.Env.Store.Scan(prefix, func(_ []byte, decode func(any) error) error {
			var raw json.RawMessage
			if decode(&raw) == nil {
				last = append(last, raw)
				if len(last) > maxRepoEvents {
					last = last[1:]
				}
			}
			return nil
		})
		for i := len(last) - 1; i >= 0; i-- {
			var r op.Receipt
			if json.Unmarshal(last[i], &r) != nil {
				continue
			}
			paths := make([]string, 0, len(r.Changes))
			for _, ch := range r.Changes {
				paths = append(paths, ch.Path)
			}
			if len(paths) > 5 {
				paths = append(paths[:5], "...")
			}
			out = append(out, ctxasm.Event{Kind: "receipt", ID: r.ReceiptID,
				Text: r.Operation + " wrote receipt " + r.ReceiptID + " (fencing token " + strconv.FormatUint(r.FencingToken, 10) + "): " + strings.Join(paths, ", ")})
		}
	}
	if c.Env.Gov != nil {
		if l, err := c.Env.Gov.Approvals("all"); err == nil {
			n := 0
			for _, ap := range l.Approvals {
				if ap.RepoID == id && n < maxRepoEvents {
					out = append(out, ctxasm.Event{Kind: "approval", ID: ap.ID, Text: ap.Operation + " asked for approval " + ap.ID + " (" + ap.Status + "): " + ap.Summary})
					n++
				}
			}
		}
	}
	return out
}
