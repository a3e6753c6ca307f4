// Package recovery holds harnessd's pure rules of failure recovery
// (FlowDeck L6): what kind of failure a failed call is (Assess), from its
// error code, the earlier attempts of the same call, the loop detector's
// notes and the run's budget, and what to do about it (Plan): retry,
// retry after a pause, move the work to the Durable Path, ask a person,
// or stop.
//
// Nothing here does I/O, reads a clock or knows about actors: the run
// actor uses it when it refuses a retry past its bound (RETRY_LIMIT), the
// run_assess operation when an agent asks, `harness run explain` to say
// it in sentences.
package recovery

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// Type is the kind of a failure.
type Type string

// The failure types.
const (
	// Loop: the call repeats itself (LOOP_DETECTED); the same input will
	// give the same answer.
	Loop Type = "loop"
	// Deadlock: the call waits for something held by work that waits
	// for it, or waited and the resource stayed busy.
	Deadlock Type = "deadlock"
	// Transient: the call may succeed as it is a little later (a
	// timeout, a busy resource, a part of harnessd unavailable).
	Transient Type = "transient"
	// Contract: the input, the route or the policy refuses the call;
	// retrying it unchanged gives the same answer.
	Contract Type = "contract"
	// Budget: the run's budget (or its retry bound) is used up.
	Budget Type = "budget"
	// Unknown: harnessd cannot tell (an internal error, an outcome it
	// does not know).
	Unknown Type = "unknown"
)

// Action is what a recovery plan does.
type Action string

// The actions.
const (
	Retry           Action = "retry"
	RetryAfter      Action = "retry_after"
	EscalateDurable Action = "escalate_durable"
	AskHuman        Action = "ask_human"
	Abort           Action = "abort"
)

// Thresholds of the rules.
const (
	// WaitedMs is how long a MUTATION_BUSY call must have taken to count
	// as having waited for the lease.
	WaitedMs = 1000
	// WaitsForDeadlock is how many waits in a row that stayed busy make
	// a MUTATION_BUSY a suspected deadlock rather than a busy resource.
	WaitsForDeadlock = 2
	// BackoffMs is the first pause of retry_after; it doubles with every
	// attempt, up to MaxBackoffMs.
	BackoffMs    = 500
	MaxBackoffMs = 30_000
)

// Assessment is what kind of failure a failed call is, and why harnessd
// thinks so.
type Assessment struct {
	Type Type `json:"type"`
	// Code is the failure's error code; Op and SpanID name the call.
	Code   string `json:"code,omitempty"`
	Op     string `json:"operation,omitempty"`
	SpanID string `json:"span_id,omitempty"`
	// Attempts counts the failed attempts of the same call (operation
	// and input) in the run's stage, this one included.
	Attempts int `json:"attempts"`
	// Evidence are the facts the assessment rests on, in sentences.
	Evidence []string `json:"evidence"`
	// Retryable says the same call, unchanged, may succeed.
	Retryable bool `json:"retryable"`
}

// RecoveryPlan is what to do about a failure.
type RecoveryPlan struct {
	Action Action `json:"action"`
	// MaxAttempts is how many more times the plan lets the call be
	// tried: the retries left for retry and retry_after, 1 for
	// escalate_durable (as a job), 0 for ask_human and abort.
	MaxAttempts int `json:"max_attempts"`
	// AfterMs is the pause before the next attempt (retry_after).
	AfterMs int64  `json:"after_ms,omitempty"`
	Reason  string `json:"reason"`
}

// Facts are what Assess looks at.
type Facts struct {
	// Span is the failed call.
	Span messages.RunSpan
	// Attempts are the failed attempts of the same call (operation and
	// input hash) in the same stage since its last success, oldest
	// first, Span's own included; empty counts as one (Span).
	Attempts []messages.RunAttempt
	// Details are the failure's error details, when the caller has the
	// live error (nil from a span).
	Details map[string]any
	// State is the run: its budget and use, and its observations (the
	// loop detector's notes).
	State messages.RunState
}

// class is what a code says on its own.
type class struct {
	typ       Type
	retryable bool
	why       string
}

// classes maps every error code of harness/errs to its failure type.
// A code not here (a newer one, or a command's own) is Unknown.
var classes = map[errs.Code]class{
	errs.InvalidArgument:         {Contract, false, "the arguments are invalid"},
	errs.NotFound:                {Contract, false, "what the call names does not exist"},
	errs.NotAGitRepository:       {Contract, false, "the path is not a git repository"},
	errs.RepositoryNotRegistered: {Contract, false, "the repository is not registered"},
	errs.PathOutsideRoot:         {Contract, false, "the path is outside the repository"},
	errs.SecretPathDenied:        {Contract, false, "the path is a secret harnessd never reads"},
	errs.PathNotAllowed:          {Contract, false, "the path is not allowed"},
	errs.IsDirectory:             {Contract, false, "the path is a directory"},
	errs.RouteRejected:           {Contract, false, "the route policy rejects the call"},
	errs.RouteDurableRequired:    {Contract, false, "the call belongs on the Durable Path"},
	errs.PolicyDenied:            {Contract, false, "a policy rule denies the call"},
	errs.RoleDenied:              {Contract, false, "the session's role may not call the operation"},
	errs.ApprovalRequired:        {Contract, false, "the policy wants a person's approval"},
	errs.LoopDetected:            {Loop, false, "the loop detector refused a repeat"},
	errs.MutationBusy:            {Transient, true, "the resource is leased by other work"},
	errs.LeaseLost:               {Transient, true, "the write's lease was lost before it wrote"},
	errs.RequestIDRequired:       {Contract, false, "a write needs a request_id"},
	errs.RequestConflict:         {Contract, false, "the request_id was used with another input"},
	errs.RequestInProgress:       {Transient, true, "the same request is still running"},
	errs.RequestOutcomeUnknown:   {Unknown, false, "the write's outcome is unknown"},
	errs.PatchConflict:           {Contract, false, "the patch no longer matches the file"},
	errs.PatchRollbackIncomplete: {Unknown, false, "a failed patch could not be rolled back completely"},
	errs.Timeout:                 {Transient, true, "the call ran out of time"},
	errs.Cancelled:               {Transient, true, "the call was cancelled"},
	errs.Unavailable:             {Transient, true, "a part of harnessd was unavailable"},
	errs.Internal:                {Unknown, true, "harnessd failed internally"},
	errs.Unauthenticated:         {Contract, false, "the call lacks the credential it needs"},
	errs.BudgetExceeded:          {Budget, false, "the run's budget is used up"},
	errs.RunEnded:                {Contract, false, "the run has ended"},
	errs.Deadlock:                {Deadlock, true, "the call was failed to break a wait cycle"},
	errs.VerificationRequired:    {Contract, false, "the call needs a verified stage first"},
	errs.RetryLimit:              {Budget, false, "the call was retried past the run's bound"},
	errs.StorageFull:             {Transient, false, "the disk is full"},
	errs.StorageUnavailable:      {Transient, false, "the data dir's disk refuses writes (read-only or failing)"},
	errs.StoreDamaged:            {Unknown, false, "harnessd's store is damaged"},
	errs.RepositoryMoved:         {Contract, false, "the repository was moved or replaced"},
	errs.ConcurrentModification:  {Transient, true, "another writer changed the files while git read them"},
	errs.GitIdentityRequired:     {Contract, false, "git has no author identity configured"},
	errs.JobFailed:               {Contract, false, "the job's command failed"},
	errs.CheckFailed:             {Contract, false, "the check did not pass"},
	errs.TargetMoved:             {Contract, false, "the target's directory was moved or replaced"},
	errs.RevertConflict:          {Contract, false, "later writes changed the files the revert would restore"},
	errs.PushRejected:            {Contract, false, "the remote refused the pushed ref"},
	errs.RemoteAuthFailed:        {Contract, false, "the remote refused the credential or got none"},
}

// Classify returns the failure type a code says on its own, and whether
// the same call may succeed unchanged.
func Classify(code string) (Type, bool) {
	c, ok := classes[errs.Code(code)]
	if !ok {
		return Unknown, false
	}
	return c.typ, c.retryable
}

// Assess says what kind of failure f.Span is.
func Assess(f Facts) Assessment {
	s := f.Span
	code := s.ErrorCode
	c, known := classes[errs.Code(code)]
	if !known {
		c = class{Unknown, false, "harnessd does not know the code " + strconv.Quote(code)}
		if code == "" {
			c.why = "the call failed without an error code"
		}
	}
	n := max(len(f.Attempts), 1)
	a := Assessment{Type: c.typ, Code: code, Op: s.Op, SpanID: s.SpanID, Attempts: n, Retryable: c.retryable}
	what := s.Op
	if what == "" {
		what = "the call"
	}
	first := what + " failed"
	if code != "" {
		first += " with " + code
	}
	if s.SpanID != "" {
		first += " (span " + s.SpanID + ")"
	}
	a.Evidence = append(a.Evidence, first+": "+c.why)
	if n > 1 {
		codes := make([]string, 0, len(f.Attempts))
		for _, at := range f.Attempts {
			codes = append(codes, at.ErrorCode)
		}
		a.Evidence = append(a.Evidence, fmt.Sprintf("the same call (same operation and input) failed %s %s: %s",
			times(n), stageOf(s.Stage), strings.Join(codes, ", ")))
	}

	switch errs.Code(code) {
	case errs.LoopDetected:
		if t := lastNote(f.State, "loop"); t != "" {
			a.Evidence = append(a.Evidence, "the loop detector noted: "+t)
		}
		if h, _ := f.Details["hint"].(string); h != "" {
			a.Evidence = append(a.Evidence, "its hint: "+h)
		}
	case errs.Deadlock:
		if cy := detail(f.Details, "cycle"); cy != "" {
			a.Evidence = append(a.Evidence, "the wait cycle: "+cy)
		}
	case errs.MutationBusy:
		if cy := detail(f.Details, "cycle"); cy != "" {
			a.Type, a.Retryable = Deadlock, true
			a.Evidence = append(a.Evidence, "the wait is part of a cycle: "+cy)
			break
		}
		if w := waits(f); w >= WaitsForDeadlock {
			a.Type = Deadlock
			a.Evidence = append(a.Evidence, fmt.Sprintf("it waited for the lease %s and the resource stayed busy: a wait cycle, or a holder that does not finish", times(w)))
		}
		if h := detail(f.Details, "holder_operation"); h != "" {
			a.Evidence = append(a.Evidence, "the holder is "+h)
		}
	case errs.BudgetExceeded, errs.RetryLimit:
	}
	a.Evidence = append(a.Evidence, budgetEvidence(f.State)...)
	return a
}

// waits counts the attempts (newest first, in a row) that failed
// MUTATION_BUSY after waiting for the lease.
func waits(f Facts) int {
	atts := f.Attempts
	if len(atts) == 0 {
		atts = []messages.RunAttempt{{SpanID: f.Span.SpanID, ErrorCode: f.Span.ErrorCode, DurationMs: f.Span.DurationMs}}
	}
	n := 0
	for i := len(atts) - 1; i >= 0; i-- {
		if atts[i].ErrorCode != string(errs.MutationBusy) || atts[i].DurationMs < WaitedMs {
			break
		}
		n++
	}
	return n
}

// budgetEvidence names the limits of the run that are used up.
func budgetEvidence(st messages.RunState) []string {
	b := st.Budget
	if b == (messages.RunBudget{}) {
		return nil
	}
	// Drawn holds the children's draws on the run as well.
	u := st.Counters
	d := st.Drawn
	var out []string
	for _, r := range []struct {
		name        string
		limit, used int64
	}{
		{"commands", b.Commands, u.Commands + d.Commands},
		{"mutations", b.Mutations, u.Mutations + d.Mutations},
		{"jobs", b.Jobs, u.Jobs + d.Jobs},
		{"approvals", b.Approvals, u.Approvals + d.Approvals},
		{"output_bytes", b.OutputBytes, u.OutputBytes + d.OutputBytes},
	} {
		if r.limit > 0 && r.used >= r.limit {
			out = append(out, fmt.Sprintf("the run's %s budget is used up (%d of %d): a retry that needs it is refused", r.name, r.used, r.limit))
		}
	}
	return out
}

// Plan says what to do about a failure assessed as a, after attempts
// failed attempts of the call (1 = the first try failed) under a bound of
// bound retries.
func Plan(a Assessment, attempts, bound int) RecoveryPlan {
	attempts = max(attempts, 1)
	bound = max(bound, 0)
	left := bound - (attempts - 1) // retries left
	past := fmt.Sprintf("it failed %s, and the run allows %d %s of a failed call", times(attempts), bound, plural(bound, "retry", "retries"))
	switch errs.Code(a.Code) {
	case errs.RouteDurableRequired:
		return RecoveryPlan{Action: EscalateDurable, MaxAttempts: 1,
			Reason: "the call belongs on the Durable Path: start it as a job (job_start, the error's suggested_operation) and follow it with job_status"}
	case errs.ApprovalRequired:
		return RecoveryPlan{Action: AskHuman,
			Reason: "a person must approve the call (harness approve APPROVAL_ID); then retry it with approval_id"}
	case errs.Timeout:
		if commandOp(a.Op) {
			return RecoveryPlan{Action: EscalateDurable, MaxAttempts: 1,
				Reason: "the command ran out of the Fast Path's time: run it as a durable job (job_start) with a longer timeout"}
		}
	case errs.RetryLimit:
		return RecoveryPlan{Action: Abort,
			Reason: "the call was retried past the run's bound: stop repeating it; change the input or the approach, or start a new stage (run_stage)"}
	case errs.BudgetExceeded:
		return RecoveryPlan{Action: AskHuman,
			Reason: "the run's budget is used up: a person can raise it, or end this run and start one with a budget that fits the work (a child run cannot lift a limit)"}
	case errs.RequestOutcomeUnknown, errs.PatchRollbackIncomplete:
		return RecoveryPlan{Action: AskHuman,
			Reason: "the work tree may or may not hold the write: compare the reported digests (git_diff, read_file) before anything else, or ask a person"}
	case errs.RunEnded:
		return RecoveryPlan{Action: Abort, Reason: "the run has ended: start a new run (run_start), or leave run_id out"}
	case errs.StorageFull, errs.StoreDamaged:
		return RecoveryPlan{Action: AskHuman, Reason: "a person must free disk space (or repair the store: harness store verify); the call can then be made again"}
	case errs.StorageUnavailable:
		return RecoveryPlan{Action: AskHuman, Reason: "a person must make the data dir writable again (remount it read-write, or move harnessd to a healthy disk); the call can then be made again"}
	case errs.RepositoryMoved:
		return RecoveryPlan{Action: Abort, Reason: "the registered root is not the directory registered: register its new location (repository_register) and use the new repo_id"}
	case errs.VerificationRequired:
		return RecoveryPlan{Action: Abort, Reason: "verify the stage first (its blockers are in the error's details), then make the call again"}
	}
	switch a.Type {
	case Loop:
		return RecoveryPlan{Action: Abort,
			Reason: "the same call keeps giving the same answer: change the input or the work tree before trying again"}
	case Contract:
		return RecoveryPlan{Action: Abort,
			Reason: "retrying the call unchanged gives the same answer: fix the input (or ask a person to change the policy)"}
	case Budget:
		return RecoveryPlan{Action: AskHuman, Reason: "the run's budget is used up: a person can raise it"}
	}
	if left <= 0 {
		return RecoveryPlan{Action: AskHuman, Reason: past + ": ask a person, or change the approach"}
	}
	switch a.Type {
	case Transient:
		if errs.Code(a.Code) == errs.Cancelled {
			return RecoveryPlan{Action: Retry, MaxAttempts: left, Reason: "the call was cancelled: make it again if it is still wanted"}
		}
		return RecoveryPlan{Action: RetryAfter, MaxAttempts: left, AfterMs: backoff(BackoffMs, attempts),
			Reason: "the failure is likely to pass: retry the same call after the pause"}
	case Deadlock:
		return RecoveryPlan{Action: RetryAfter, MaxAttempts: left, AfterMs: backoff(2*BackoffMs, attempts),
			Reason: "finish or release what the run holds (its other writes and jobs), then retry after the pause"}
	}
	if a.Retryable {
		return RecoveryPlan{Action: Retry, MaxAttempts: min(left, 1),
			Reason: "harnessd cannot tell why the call failed: retry it once, then ask a person"}
	}
	return RecoveryPlan{Action: AskHuman, Reason: "harnessd cannot tell why the call failed or whether a retry is safe: ask a person"}
}

// backoff is base doubled per attempt after the first, capped.
func backoff(base int64, attempts int) int64 {
	d := base
	for i := 1; i < attempts && d < MaxBackoffMs; i++ {
		d *= 2
	}
	return min(d, MaxBackoffMs)
}

func commandOp(op string) bool { return op == "run_command" || op == "run_check" }

func detail(d map[string]any, k string) string {
	switch v := d[k].(type) {
	case string:
		return v
	case nil:
		return ""
	case []string:
		return strings.Join(v, " -> ")
	case []any:
		parts := make([]string, 0, len(v))
		for _, x := range v {
			parts = append(parts, member(x))
		}
		return strings.Join(parts, " -> ")
	case []map[string]any:
		parts := make([]string, 0, len(v))
		for _, x := range v {
			parts = append(parts, member(x))
		}
		return strings.Join(parts, " -> ")
	default:
		return fmt.Sprint(v)
	}
}

// member names one member of a cycle: its run_id when it is an object.
func member(x any) string {
	if m, ok := x.(map[string]any); ok {
		if id, ok := m["run_id"].(string); ok {
			return id
		}
	}
	return fmt.Sprint(x)
}

// lastNote is the text of the run's newest harnessd observation of kind.
func lastNote(st messages.RunState, kind string) string {
	for i := len(st.Observations) - 1; i >= 0; i-- {
		if o := st.Observations[i]; o.Source == "harnessd" && o.Kind == kind {
			return o.Text
		}
	}
	return ""
}

func stageOf(stage string) string {
	if stage == "" {
		return "outside any stage"
	}
	return "in stage " + strconv.Quote(stage)
}

func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Report is the answer of run_assess: a run's failure, the attempts of
// the same call, what kind of failure it is and what to do about it, and
// the run's children (whose blockers are the parent's too).
type Report struct {
	RunID string `json:"run_id"`
	// Span is the failure assessed; nil when the run has none.
	Span *messages.RunSpan `json:"span,omitempty"`
	// Attempts are the failed attempts of the same call in its stage,
	// oldest first (Span's included).
	Attempts []messages.RunAttempt `json:"attempts,omitempty"`
	// MaxRetries is the run's retry bound; RetriesLeft what is left of it
	// for this call.
	MaxRetries  int                 `json:"max_retries"`
	RetriesLeft int                 `json:"retries_left"`
	Assessment  *Assessment         `json:"assessment,omitempty"`
	Plan        *RecoveryPlan       `json:"plan,omitempty"`
	Children    []messages.RunChild `json:"children,omitempty"`
}
