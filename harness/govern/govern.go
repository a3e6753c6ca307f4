// Package govern holds the action mediator's state and its one entry
// point, the gate: the loaded policy, approvals (persisted, single use,
// decided only by people), loop memory, recent history for the risk score,
// and the audit append every decision that is not a plain allow goes
// through.
//
// Loop memory and refusal history are per caller (LoopScope: its run,
// else its MCP session), never per repository: a new session starts
// clean, and one agent's refusals or repetitions never count against
// another. Refusals decay with a half-life of mediate.HistoryHalfLife; a
// command that ran and failed is no refusal.
//
// The decision itself is the pure mediate.Decide; this package gathers its
// inputs, turns asks into persisted approval requests, consumes approvals
// and audits. Every operation crosses Gate exactly once, from the request
// pipeline (harness/op).
package govern

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/loop"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/policy"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Config configures New. Zero fields mean "use the default".
type Config struct {
	Store *persistence.Store
	Audit runtime.Audit
	// PolicyPath is the policy file; "" = the default policy (no rules).
	// A missing file is the empty policy; a bad one fails New, naming the
	// rule or example.
	PolicyPath string
	// LoopThreshold is how many identical results count as a loop; 0 = 3,
	// negative = loop detection off.
	LoopThreshold int
	Now           func() time.Time
	Logger        *zap.Logger
	// Deny is the secret-path denylist; nil = the default.
	Deny     *pathsafe.Denylist
	Redactor *redact.Redactor
	// Observe, if set, sees every decision the gate makes, in order (tests
	// count gate crossings with it).
	Observe func(Decision)
	// Verified are the operations a require_verified policy rule may name:
	// the registry's writes whose descriptor says a verified stage applies
	// (op.Registry.Verified). Empty: no rule may require verification.
	Verified []string
}

// Decision is what the gate decided for one operation, as Observe sees it.
type Decision struct {
	Tool    string
	Outcome string // allow, block, ask or escalate
	Code    string // the error code when not allowed
	RuleID  string
	Risk    int
}

// Governor is the mediator's state. Its methods are safe for concurrent use.
type Governor struct {
	cfg      Config
	store    *persistence.Store
	audit    runtime.Audit
	lg       *zap.Logger
	redactor *redact.Redactor
	deny     *pathsafe.Denylist

	mu       sync.Mutex // protects policy, loops and refusals
	policy   *policy.Policy
	loops    *loop.Detector
	refusals refusals // per caller scope, for the risk score

	// filing serializes filing approval requests (requestApproval): the
	// count of those pending and the new one stored are one step, so
	// concurrent asks of one scope stop at the limit exactly.
	filing sync.Mutex
}

// New loads the policy and returns the Governor.
func New(cfg Config) (*Governor, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Redactor == nil {
		cfg.Redactor = redact.Default()
	}
	if cfg.Deny == nil {
		d, err := pathsafe.NewDenylist(pathsafe.DefaultSecretPatterns())
		if err != nil {
			return nil, err
		}
		cfg.Deny = d
	}
	p, err := loadPolicy(cfg.PolicyPath, cfg.Verified)
	if err != nil {
		return nil, err
	}
	return &Governor{
		cfg: cfg, store: cfg.Store, audit: cfg.Audit, lg: cfg.Logger, redactor: cfg.Redactor, deny: cfg.Deny,
		policy: p, loops: loop.New(loop.Config{Threshold: max(cfg.LoopThreshold, 0)}), refusals: refusals{m: map[refusalKey]decayed{}},
	}, nil
}

func (g *Governor) now() time.Time { return g.cfg.Now() }

func loadPolicy(path string, verified []string) (*policy.Policy, error) {
	if path == "" {
		return policy.Default(), nil
	}
	return policy.Load(path, policy.Verified(verified...))
}

// LoadedPolicy returns the policy in force (its roots and secret
// exceptions are read by the authority and the denylist).
func (g *Governor) LoadedPolicy() *policy.Policy { return g.currentPolicy() }

func (g *Governor) currentPolicy() *policy.Policy {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.policy
}

// PolicyInfo describes the loaded policy.
type PolicyInfo struct {
	Source string `json:"source"`
	Digest string `json:"digest"`
	Rules  int    `json:"rules"`
}

// MaxRetries is the loaded policy's max_retries (nil = the runs' default).
func (g *Governor) MaxRetries() *int { return g.currentPolicy().MaxRetries() }

// Policy reports the loaded policy.
func (g *Governor) Policy() PolicyInfo {
	p := g.currentPolicy()
	return PolicyInfo{Source: p.Source(), Digest: p.Digest(), Rules: p.Len()}
}

// ReloadPolicy loads the policy file again. On error the previous policy
// stays in force and the error names the bad rule or example. People reload
// (SIGHUP, `harness policy reload`); no agent-facing tool can.
func (g *Governor) ReloadPolicy() (PolicyInfo, error) {
	p, err := loadPolicy(g.cfg.PolicyPath, g.cfg.Verified)
	if err != nil {
		g.AuditAppend(audit.Entry{Kind: audit.KindPolicyLoad, Outcome: "failed", Reason: errs.From(err).Message, Actor: "person"})
		return PolicyInfo{}, err
	}
	g.mu.Lock()
	g.policy = p
	g.mu.Unlock()
	g.AuditAppend(audit.Entry{Kind: audit.KindPolicyLoad, Outcome: "loaded", Reason: fmt.Sprintf("%d rules from %s", p.Len(), p.Source()), Actor: "person"})
	g.lg.Info("policy loaded", zap.String("source", p.Source()), zap.String("digest", p.Digest()), zap.Int("rules", p.Len()))
	return g.Policy(), nil
}

// AuditAppend appends an entry to the hash-chained audit log without
// waiting: a failure to audit never turns a success into a failure. The
// loaded policy's digest is recorded in every entry.
func (g *Governor) AuditAppend(e audit.Entry) {
	g.audit.Append(messages.AuditEntry(g.stamp(e)))
}

// AuditAppendDurable appends an entry and returns a wait that answers once
// it is durable: a mutation waits for its entry before it answers, so
// after a kill -9 every acknowledged write has its audit entry. with are
// records written in the entry's synced transaction (a mutation's ledger
// completion and receipt: one group commit).
func (g *Governor) AuditAppendDurable(e audit.Entry, with ...messages.StoreRecord) func() error {
	return g.audit.AppendDurable(messages.AuditEntry(g.stamp(e)), with...)
}

func (g *Governor) stamp(e audit.Entry) audit.Entry {
	if e.PolicyDigest == "" {
		e.PolicyDigest = g.currentPolicy().Digest()
	}
	if e.Actor == "" {
		e.Actor = "agent"
	}
	return e
}

// History returns the caller's recent refusals of an operation (tool,
// argv and paths, see mediate.Subject), decayed, for the risk score. It
// is per caller scope (LoopScope: its run, else its MCP session): a new
// session starts with none, and one agent's refusals never raise another's
// risk.
func (g *Governor) History(c messages.Caller, tool string, argv, paths []string) mediate.History {
	command, program := mediate.Subject(tool, argv, paths)
	scope := LoopScope(c)
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	h := mediate.History{Command: g.refusals.get(scope, kindCommand, command, now)}
	if program != "" {
		h.Program, h.ProgramName = max(g.refusals.get(scope, kindProgram, program, now)-h.Command, 0), program
	}
	return h
}

// noteRefusal counts a refusal of in (a block) into its caller's history.
func (g *Governor) noteRefusal(in Input) {
	command, program := mediate.Subject(in.Tool, in.Argv, in.Paths)
	scope := LoopScope(in.Caller)
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refusals.note(scope, kindCommand, command, now)
	if program != "" {
		g.refusals.note(scope, kindProgram, program, now)
	}
}

// Score returns the risk score the gate would give in now, with its parts
// and the caller's history (route_explain shows it). Paths are not
// checked and no loop is looked for.
func (g *Governor) Score(in Input) mediate.Score {
	return mediate.Explain(mediate.Input{Tool: in.Tool, Kind: in.Kind, Argv: in.Argv, Paths: in.Paths, TimeoutMs: in.TimeoutMs, Writes: in.Writes,
		Route: in.Route, Confined: in.Confined, History: g.History(in.Caller, in.Tool, in.Argv, in.Paths)})
}

// The kinds of refusal subjects.
const (
	kindCommand = 'c'
	kindProgram = 'p'
)

// maxRefusals bounds the subjects remembered over all scopes.
const maxRefusals = 10_000

type refusalKey struct {
	scope   string
	kind    byte
	subject string
}

// decayed is a count of refusals as it was at at; it halves every
// mediate.HistoryHalfLife after.
type decayed struct {
	v  float64
	at time.Time
}

func (d decayed) now(now time.Time) float64 { return mediate.Decay(d.v, now.Sub(d.at)) }

// refusals remembers refusals per caller scope and subject, decayed.
type refusals struct {
	m map[refusalKey]decayed
}

func (r *refusals) get(scope string, kind byte, subject string, now time.Time) float64 {
	d, ok := r.m[refusalKey{scope, kind, subject}]
	if !ok {
		return 0
	}
	return d.now(now)
}

func (r *refusals) note(scope string, kind byte, subject string, now time.Time) {
	k := refusalKey{scope, kind, subject}
	d, ok := r.m[k]
	if !ok && len(r.m) >= maxRefusals {
		r.shrink(now)
	}
	r.m[k] = decayed{v: d.now(now) + 1, at: now}
}

// forgotten is the weight below which a subject is dropped when memory is
// full (a single refusal about 66 minutes old).
const forgotten = 0.01

// shrink drops faded subjects, and the faintest one when none has faded.
func (r *refusals) shrink(now time.Time) {
	var faintest refusalKey
	least := -1.0
	for k, d := range r.m {
		v := d.now(now)
		if v < forgotten {
			delete(r.m, k)
			continue
		}
		if least < 0 || v < least {
			faintest, least = k, v
		}
	}
	if len(r.m) >= maxRefusals {
		delete(r.m, faintest)
	}
}

// CommandFailed says whether a finished command failed, for loop
// detection: a timeout, or a non-zero exit that is not an answer. Exit 1
// of a search (grep, egrep, fgrep, zgrep, rg, ag, ack, git grep: no match),
// of a comparison (diff, cmp, git diff: the inputs differ) or of test / [
// (false) answers the question asked; any other non-zero exit (grep's 2, a
// failing test) is a failure. A failure never raises the risk score: only
// refusals do (History).
func CommandFailed(argv []string, exit int, timedOut bool) bool {
	switch {
	case timedOut:
		return true
	case exit == 0:
		return false
	case exit != 1 || len(argv) == 0:
		return true
	}
	prog := filepath.Base(argv[0])
	if prog == "git" {
		prog = "git " + gitSubcommand(argv[1:])
	}
	switch prog {
	case "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "git grep", "diff", "cmp", "git diff", "test", "[":
		return false
	}
	return true
}

// gitSubcommand returns the first argument after git's global options.
func gitSubcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-C" || a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// LoopScope is whose repetitions loop detection counts together for a
// caller: its run, else its MCP session, else (a caller that says who it
// is in no way, such as the embedded library called without one) the
// global scope "". Agent B running what agent A ran is not a loop.
func LoopScope(c messages.Caller) string {
	switch {
	case c.RunID != "":
		return "run:" + c.RunID
	case c.Session != "":
		return "session:" + c.Session
	}
	return ""
}

// loopCall notes a call of scope for loop detection (Touch) and, when tree
// is known, first checks it (Check).
func (g *Governor) loopCall(scope, op, inputHash, tree string) loop.Verdict {
	if g.cfg.LoopThreshold < 0 {
		return loop.Verdict{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	var v loop.Verdict
	if tree != "" {
		v = g.loops.Check(scope, op, inputHash, tree, now)
	}
	g.loops.Touch(scope, op, inputHash, now)
	return v
}

func (g *Governor) loopCheck(scope, op, inputHash, tree string) loop.Verdict {
	if g.cfg.LoopThreshold < 0 {
		return loop.Verdict{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.loops.Check(scope, op, inputHash, tree, g.now())
}

// LoopRecord records the result of a run for loop detection, in the
// scope o.Scope (LoopScope of the caller).
func (g *Governor) LoopRecord(o loop.Observation) {
	g.mu.Lock()
	defer g.mu.Unlock()
	o.At = g.now()
	g.loops.Record(o)
}

// Audit lists audit entries, oldest first.
func (g *Governor) Audit(ctx context.Context, q messages.AuditQuery) (messages.AuditEntries, error) {
	return g.audit.Query(ctx, q)
}

// AuditVerify checks the whole hash chain and names the first broken entry.
func (g *Governor) AuditVerify(ctx context.Context) (messages.AuditVerified, error) {
	return g.audit.Verify(ctx)
}

// Digest returns a short sha256 of s, for audit details and loop results.
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}
