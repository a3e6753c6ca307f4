package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/messages"
)

// Checkouts stay home (docs/fleet.md): a repository's checkout lives on
// the node it is registered on, whose name etcd keeps (fleet.Home). A
// call through CallOp that names a repository this node does not have
// is forwarded to its home node, which runs it as an agent's call under
// its own gate, policy, ledger and receipts; the answer comes back
// unchanged but for "forwarded_to".

// claimHomes records this node as the home of every repository it has
// registered (at join): create-if-absent, so a repository already homed
// elsewhere stays there (and is logged).
func (h *Harness) claimHomes(ctx context.Context) {
	if h.fleet == nil {
		return
	}
	h.tokens().run()
	repos, err := h.rt.Registry.List(ctx)
	if err != nil {
		h.lg.Warn("fleet: list the repositories to record their home", zap.Error(err))
		return
	}
	for _, r := range repos {
		h.claimHome(ctx, r.ID, r.Root, r.CheckoutID, r.Registered)
	}
}

// claimHome records this node as the home of one repository.
func (h *Harness) claimHome(ctx context.Context, repoID, root, checkoutID string, at time.Time) {
	got, _, err := h.fleet.ClaimHome(ctx, fleet.Home{RepoID: repoID, Root: root, CheckoutID: checkoutID, RegisteredAt: at})
	switch {
	case err != nil:
		h.lg.Warn("fleet: record the home of a repository", zap.String("repo_id", repoID), zap.Error(err))
	case got.Node != h.fleet.Name():
		h.lg.Warn("fleet: the repository is registered here too, but its home is another node: other nodes forward its operations there",
			zap.String("repo_id", repoID), zap.String("home", got.Node))
	default:
		h.tokens().add(ctx, repoID) // the home reserves its checkout's fencing tokens
	}
}

// noteHome keeps the home records in step with a registration this
// node's pipeline just made or removed (op is the canonical name).
func (h *Harness) noteHome(ctx context.Context, name string, out any) {
	if name != "repository_register" && name != "repository_unregister" {
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		return
	}
	var r messages.Repository
	if json.Unmarshal(b, &r) != nil || r.ID == "" {
		return
	}
	if name == "repository_register" {
		h.claimHome(ctx, r.ID, r.Root, r.CheckoutID, r.Registered)
		return
	}
	h.tokens().remove(r.ID)
	if _, err := h.fleet.ReleaseHome(ctx, r.ID); err != nil {
		h.lg.Warn("fleet: release the home of an unregistered repository", zap.String("repo_id", r.ID), zap.Error(err))
	}
}

// callOrForward runs the named operation here, and forwards it to the
// repository's home node when this node does not have the repository and
// the fleet names another home: at once when the arguments' repo_id is
// not registered here (so this node's run records no failed call), else
// on REPOSITORY_NOT_REGISTERED (raised before anything is recorded; a
// repo_id spelled by an alias).
func (h *Harness) callOrForward(ctx context.Context, name string, args json.RawMessage) (any, error) {
	o, known := h.pipe.Registry().Lookup(name)
	if !known {
		return h.pipe.Call(ctx, name, args)
	}
	if id := repoIDOf(args); id != "" {
		if _, local := h.rt.Registry.Lookup(id); !local {
			if home, ok := h.homeElsewhere(ctx, id); ok {
				return h.forward(ctx, home, o.Name, args)
			}
		}
	}
	out, err := h.pipe.Call(ctx, name, args)
	if err == nil {
		h.noteHome(ctx, o.Name, out)
		return out, nil
	}
	if node := heldBy(err); node != "" {
		return h.forwardRequest(ctx, node, repoIDOf(args), o.Name, args) // its request id is another node's
	}
	if errs.CodeOf(err) != errs.RepositoryNotRegistered {
		return nil, err
	}
	id, _ := errs.From(err).Details["repo_id"].(string)
	if home, ok := h.homeElsewhere(ctx, id); ok {
		return h.forward(ctx, home, o.Name, args)
	}
	return nil, err // no home elsewhere (or etcd did not answer): the local answer stands
}

// repoIDOf answers the repo_id of raw arguments ("" when they name none
// under that key).
func repoIDOf(args json.RawMessage) string {
	if !bytes.Contains(args, []byte(`"repo_id"`)) {
		return ""
	}
	var probe struct {
		RepoID string `json:"repo_id"`
	}
	_ = json.Unmarshal(args, &probe)
	return probe.RepoID
}

// homeElsewhere answers the home of repoID when it is another node's.
func (h *Harness) homeElsewhere(ctx context.Context, repoID string) (fleet.Home, bool) {
	if repoID == "" {
		return fleet.Home{}, false
	}
	home, ok, err := h.fleet.Owner(ctx, repoID)
	if err != nil || !ok || home.Node == h.fleet.Name() {
		return fleet.Home{}, false
	}
	return home, true
}

// forward sends the call to home's node and answers its answer.
func (h *Harness) forward(ctx context.Context, home fleet.Home, name string, args json.RawMessage) (any, error) {
	fargs, dropped := dropRunID(args)
	ans, err := h.fleet.Forward(ctx, home, name, fargs, forwardedFor(ctx))
	if node := heldBy(err); node != "" && node != home.Node {
		return h.forwardRequest(ctx, node, home.RepoID, name, args) // the home node found the request id another node's
	}
	if err != nil {
		if e, ok := err.(*errs.Error); ok && e.Code != errs.Unavailable {
			return nil, e.With("forwarded_to", home.Node)
		}
		return nil, err
	}
	return forwardedAnswer(ans, home.Node, dropped)
}

// forwardedFor answers who a forwarded call is made for: the caller ctx
// carries (its client, session and role); "unnamed" without one.
func forwardedFor(ctx context.Context) fleet.Forwarded {
	c, _ := op.CallerFrom(ctx)
	who := fleet.Forwarded{Client: govern.ClientString(c.Client), Session: c.Session, Role: c.Role}
	if who.Client == "" {
		who.Client = "unnamed"
	}
	return who
}

// dropRunID removes run_id from forwarded arguments (a run is
// node-local: the home node does not know it) and reports whether there
// was one.
func dropRunID(args json.RawMessage) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args, false
	}
	if _, ok := m["run_id"]; !ok {
		return args, false
	}
	delete(m, "run_id")
	b, err := json.Marshal(m)
	if err != nil {
		return args, false
	}
	return b, true
}

// forwardedAnswer is the home node's answer with "forwarded_to" (and a
// warning when run_id was dropped).
func forwardedAnswer(ans json.RawMessage, node string, dropped bool) (any, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(ans, &m); err != nil {
		return nil, errs.New(errs.Unavailable, "node %s answered the forwarded call with something not a JSON object", node).With("node", node)
	}
	m["forwarded_to"], _ = json.Marshal(node)
	if dropped {
		m["forwarded_warning"], _ = json.Marshal("run_id is node-local: the call ran on node " + node + " outside the run")
	}
	return m, nil
}

// maxForwardName bounds the node, client, session and role names of a
// forwarded call.
const maxForwardName = 256

// printable reports whether s is 1..maxForwardName printable characters.
func printable(s string) bool {
	if s == "" || len(s) > maxForwardName {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// CallForwarded runs an operation another node of the fleet forwarded
// (the HTTP surface checked the fleet secret): as an agent's call, never
// a person's, so what needs a person (granting a root, the human-token
// routes) it cannot do; only the operations agents may call; never
// forwarded again. Its caller names the forwarding node and the client
// there (the audit entry's client is "forwarded from node X for Y"); its
// gate, policy, approvals, ledger and receipts are this node's.
func (h *Harness) CallForwarded(ctx context.Context, from string, who fleet.Forwarded, name string, args json.RawMessage) (any, error) {
	if h.fleet == nil {
		return nil, errs.New(errs.Unavailable, "this node is not in a fleet; nothing may be forwarded to it")
	}
	if !printable(from) {
		return nil, errs.New(errs.InvalidArgument, "a forwarded call must name the forwarding node in %s (1-%d printable characters)", fleet.HeaderForwardedFrom, maxForwardName)
	}
	for _, v := range []string{who.Client, who.Session, who.Role} {
		if v != "" && !printable(v) {
			return nil, errs.New(errs.InvalidArgument, "a forwarded call's client, session and role must be at most %d printable characters", maxForwardName)
		}
	}
	o, ok := h.pipe.Registry().Lookup(name)
	if !ok {
		return nil, errs.New(errs.NotFound, "unknown operation %q: only operations are forwarded (approvals and policy are a person's, on their node)", name).With("operation", name)
	}
	if !o.Agent {
		return nil, errs.New(errs.RoleDenied, "%s is a person's operation; a call forwarded from node %s acts as an agent and may not call it", o.Name, from).
			With("operation", o.Name)
	}
	client := "unnamed"
	if who.Client != "" {
		client = who.Client
	}
	ctx = op.WithCaller(ctx, messages.Caller{Session: "fleet:" + from + "/" + who.Session, Role: who.Role,
		Client: messages.Client{Name: "forwarded from node " + from + " for " + client}})
	out, err := h.pipe.Call(ctx, name, args)
	if err != nil {
		return nil, err
	}
	h.noteHome(ctx, o.Name, out)
	return out, nil
}

// Fleet-wide request ids (docs/fleet.md): in a fleet, a request id's
// ledger begin first records it in etcd (fleet.Node.ReserveRequest), so
// the same id is one request fleet-wide. A request id another node holds
// is answered there: callOrForward forwards the call to that node, whose
// ledger replays (or refuses) it; it never runs twice.

// detailHeldBy names, in the error of a ledger begin, the node that
// holds the request id.
const detailHeldBy = "request_held_by"

// fleetLedger is the ledger of a fleet node: Begin records the request
// id fleet-wide first (one etcd round trip). A job_start's request id is
// the fleet job's record (fleetjobs.go), not recorded here. It also
// carries the node's token keeper (fleet.go), as op.Env holds no other
// fleet state.
type fleetLedger struct {
	runtime.Ledger
	n    *fleet.Node
	toks *tokenKeeper
}

// Begin records m's request id fleet-wide, then begins it in the local
// ledger when this node holds it; a request id another node holds is
// the error heldBy finds (nothing recorded here).
func (l fleetLedger) Begin(ctx context.Context, m messages.LedgerBegin) (messages.LedgerBegun, error) {
	if m.Operation == "job_start" {
		return l.Ledger.Begin(ctx, m)
	}
	rec, err := l.n.ReserveRequest(ctx, fleet.Request{RequestID: m.RequestID, Op: m.Operation, InputHash: m.InputHash})
	if err != nil {
		return messages.LedgerBegun{}, err
	}
	if rec.Node != l.n.Name() {
		return messages.LedgerBegun{}, errs.New(errs.Unavailable,
			"request_id %q is node %s's (its %s ran or runs there), and this call could not be forwarded to it: retry through the API or MCP of any node, which forward it to %s",
			m.RequestID, rec.Node, rec.Op, rec.Node).With(detailHeldBy, rec.Node).With("request_id", m.RequestID)
	}
	return l.Ledger.Begin(ctx, m)
}

// heldBy answers the node an error says holds the call's request id ("" if none).
func heldBy(err error) string {
	if err == nil {
		return ""
	}
	node, _ := errs.From(err).Details[detailHeldBy].(string)
	return node
}

// forwardRequest sends a call whose request id node holds to node, whose
// ledger answers it (a replay, a refusal, or the run of a request it
// recorded but never began). A node that is down is UNAVAILABLE naming
// it: the call is never run elsewhere.
func (h *Harness) forwardRequest(ctx context.Context, node, repoID, name string, args json.RawMessage) (any, error) {
	fargs, dropped := dropRunID(args)
	ans, err := h.fleet.Forward(ctx, fleet.Home{RepoID: repoID, Node: node}, name, fargs, forwardedFor(ctx))
	if err != nil {
		e := errs.From(err)
		if e.Code == errs.Unavailable && heldBy(err) == "" {
			return nil, errs.Wrap(errs.Unavailable, err, "request_id %q is node %s's, which did not answer (%s): it is never run on another node; retry with the same request_id once %s is back",
				requestIDOf(args), node, e.Message, node).With("node", node).With("request_id", requestIDOf(args))
		}
		return nil, e.With("forwarded_to", node)
	}
	return forwardedAnswer(ans, node, dropped)
}

// requestIDOf answers the request_id of raw arguments ("" when none).
func requestIDOf(args json.RawMessage) string {
	var probe struct {
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(args, &probe)
	return probe.RequestID
}
