package messages

import (
	"encoding/json"
	"time"
)

// Run statuses. A run is active until it ends: ended (run_end), deadline
// (its wall-clock budget ran out), abandoned (its client went away and did
// not come back within the resume window).
const (
	RunActive    = "active"
	RunEnded     = "ended"
	RunDeadline  = "deadline"
	RunAbandoned = "abandoned"
)

// Stage statuses of run_stage.
const (
	StageStarted   = "started"
	StageCompleted = "completed"
	StageBlocked   = "blocked"
)

// Client names the MCP client of a session (its clientInfo).
type Client struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// Caller is who made a call: the run it belongs to, the MCP session and
// the client, and the role the session acts as. Audit entries and
// approvals carry it.
type Caller struct {
	RunID   string `json:"run_id,omitempty"`
	Session string `json:"session,omitempty"`
	Client  Client `json:"client,omitzero"`
	// Role is the role the session acts as (reader, editor, reviewer,
	// operator), set by the person who started the client; "" = operator.
	Role string `json:"role,omitempty"`
}

// RunBudget limits a run. Zero means "no limit" for every field.
type RunBudget struct {
	// WallS is the run's deadline in seconds from its start.
	WallS       int64 `json:"wall_s,omitempty" jsonschema:"seconds until the run is ended and its jobs cancelled"`
	Commands    int64 `json:"commands,omitempty" jsonschema:"commands it may run (run_command, run_check)"`
	Mutations   int64 `json:"mutations,omitempty" jsonschema:"writes it may make (apply_patch, git_commit, ...)"`
	Jobs        int64 `json:"jobs,omitempty" jsonschema:"jobs it may start"`
	OutputBytes int64 `json:"output_bytes,omitempty" jsonschema:"bytes of output it may receive"`
	Approvals   int64 `json:"approvals,omitempty" jsonschema:"approval requests it may raise"`
	// CPUSeconds bounds the CPU time of the processes it runs (jobs,
	// checks): once used, it may start no more commands or jobs.
	CPUSeconds int64 `json:"cpu_seconds,omitempty" jsonschema:"CPU seconds its jobs and checks may use"`
}

// RunCounters are what a run has used and done.
type RunCounters struct {
	Calls        int64 `json:"calls"`
	Reads        int64 `json:"reads"`
	Commands     int64 `json:"commands"`
	Mutations    int64 `json:"mutations"`
	Jobs         int64 `json:"jobs"`
	Checks       int64 `json:"checks"`
	OutputBytes  int64 `json:"output_bytes"`
	Approvals    int64 `json:"approvals"`
	Failures     int64 `json:"failures"`
	Observations int64 `json:"observations"`
	// CPUMs is the CPU time (user+system, ms) of the processes the run
	// started: its checks' (counted with their spans) and its jobs'
	// (charged when each ends, RunUsage).
	CPUMs int64 `json:"cpu_ms,omitempty"`
}

// RunObservation is one note in a run: an agent's (run_observe) or
// harnessd's own (failures, loop hits, escalations, approvals).
type RunObservation struct {
	At time.Time `json:"at"`
	// Source is "agent" or "harnessd".
	Source string `json:"source"`
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	SpanID string `json:"span_id,omitempty"`
}

// Tiers of a run (FlowDeck L7): the scope of work it is declared for, in
// increasing order. They are the route policy's tiers (internal/route).
const (
	TierDirect      = "direct"
	TierBoundedWork = "bounded_work"
	TierCampaign    = "campaign"
)

// RunShape is the work a run declares at run_start; the route policy's
// tier rules choose the run's tier from it.
type RunShape struct {
	// Deliverables is how many independent deliverables the run makes
	// (2 or more: a campaign).
	Deliverables int `json:"deliverables,omitempty" jsonschema:"independent deliverables (2 or more: campaign)"`
	// Writes says the run changes the work tree (patches, commits).
	Writes bool `json:"writes,omitempty" jsonschema:"it will change files"`
	// Durable says the run starts durable jobs.
	Durable bool `json:"durable,omitempty" jsonschema:"it will start jobs (job_start, long commands)"`
}

// RunEscalation is one explicit change of a run's tier (run_escalate).
type RunEscalation struct {
	At     time.Time `json:"at"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
}

// RunAttempt is one failed attempt of a call: a retry streak's entry.
type RunAttempt struct {
	SpanID     string    `json:"span_id"`
	ErrorCode  string    `json:"error_code"`
	At         time.Time `json:"at"`
	DurationMs float64   `json:"duration_ms,omitempty"`
}

// RunRetry is an open retry streak: the failed attempts of one call (same
// operation and input hash) in the run's current stage since its last
// success. The next identical call is a retry; past the run's bound it is
// refused with RETRY_LIMIT.
type RunRetry struct {
	Stage     string       `json:"stage,omitempty"`
	Op        string       `json:"operation"`
	InputHash string       `json:"input_hash"`
	Failures  int          `json:"failures"`
	Attempts  []RunAttempt `json:"attempts"`
}

// RunFailure is a run's latest failed call.
type RunFailure struct {
	SpanID    string    `json:"span_id"`
	Op        string    `json:"operation"`
	ErrorCode string    `json:"error_code"`
	Stage     string    `json:"stage,omitempty"`
	At        time.Time `json:"at"`
}

// RunChild is a child run as its parent's status shows it: its state,
// stage and what blocks it.
type RunChild struct {
	RunID           string      `json:"run_id"`
	Goal            string      `json:"goal,omitempty"`
	Status          string      `json:"status"`
	EndReason       string      `json:"end_reason,omitempty"`
	Tier            string      `json:"tier,omitempty"`
	CompletedStages []string    `json:"completed_stages"`
	CurrentStage    string      `json:"current_stage,omitempty"`
	Blocked         bool        `json:"blocked"`
	BlockedReason   string      `json:"blocked_reason,omitempty"`
	Failures        int64       `json:"failures"`
	LastFailure     *RunFailure `json:"last_failure,omitempty"`
}

// RunState is a run as it is persisted and shown (FlowDeck L4).
type RunState struct {
	RunID         string    `json:"run_id"`
	Goal          string    `json:"goal,omitempty"`
	RepoID        string    `json:"repo_id,omitempty"`
	WorkflowClass string    `json:"workflow_class,omitempty"`
	ParentRunID   string    `json:"parent_run_id,omitempty"`
	Status        string    `json:"status"`
	EndReason     string    `json:"end_reason,omitempty"`
	Implicit      bool      `json:"implicit,omitempty"`
	Caller        Caller    `json:"caller,omitzero"`
	Budget        RunBudget `json:"budget,omitzero"`
	// Counters include the children's draws on this run's budget in
	// Drawn; Counters are the run's own.
	Counters        RunCounters      `json:"counters"`
	Drawn           RunCounters      `json:"drawn,omitzero"`
	CompletedStages []string         `json:"completed_stages"`
	CurrentStage    string           `json:"current_stage,omitempty"`
	Blocked         bool             `json:"blocked"`
	BlockedReason   string           `json:"blocked_reason,omitempty"`
	Observations    []RunObservation `json:"observations"`
	// Jobs are the durable jobs the run started (cancelled at its deadline).
	Jobs       []string  `json:"jobs,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	Deadline   time.Time `json:"deadline,omitzero"`
	EndedAt    time.Time `json:"ended_at,omitzero"`
	DetachedAt time.Time `json:"detached_at,omitzero"`

	// Tier is the scope of work the run is declared for (direct,
	// bounded_work, campaign), chosen from its Shape by the route policy
	// or named by workflow_class; it changes only by run_escalate. ""
	// (an implicit run, or one that declared nothing) is not checked.
	Tier  string   `json:"tier,omitempty"`
	Shape RunShape `json:"shape,omitzero"`
	// Escalations are the run's explicit tier changes, oldest first.
	Escalations []RunEscalation `json:"escalations,omitempty"`
	// MaxRetries bounds the retries of a failed call per stage; nil = the
	// default (internal/runs.DefaultMaxRetries).
	MaxRetries *int `json:"max_retries,omitempty"`
	// Retries are the open retry streaks of the current stage.
	Retries []RunRetry `json:"retries,omitempty"`
	// LastFailure is the run's latest failed call.
	LastFailure *RunFailure `json:"last_failure,omitempty"`
	// Children are the runs started with this one as their parent.
	Children []string `json:"children,omitempty"`
	// TokenBudget is the token budget snapshot of the run's last
	// context_assemble (nil before one).
	TokenBudget *RunTokenBudget `json:"token_budget,omitempty"`
	// StageProgressAt is the run's last progress (a stage change, a call
	// that succeeded, an agent's note): stage-stall detection measures
	// from it (internal/runs.Stalled).
	StageProgressAt time.Time `json:"stage_progress_at,omitzero"`
	// Stuck says its current stage made no progress for the stall window
	// (since StuckSince); progress clears it.
	Stuck      bool      `json:"stuck,omitempty"`
	StuckSince time.Time `json:"stuck_since,omitzero"`
	// Summary is the run's summary, written when it ends or goes idle
	// (nil before).
	Summary *RunSummary `json:"summary,omitempty"`
}

// Span kinds: an operation, or the run itself (the root of its tree).
const (
	SpanOperation = "operation"
	SpanRun       = "run"
)

// RunSpan is one operation in a run (FlowDeck L3). Read-only Fast Path
// spans stay in the run's memory; the others (Persist) are stored.
type RunSpan struct {
	RunID    string `json:"run_id"`
	SpanID   string `json:"span_id"`
	ParentID string `json:"parent_id,omitempty"`
	Kind     string `json:"kind"`
	// Op is the operation's name.
	Op string `json:"operation"`
	// InputHash identifies the arguments without storing them. The
	// pipeline leaves it empty and sends Input; the run actor hashes.
	InputHash string          `json:"input_hash,omitempty"`
	Input     json.RawMessage `json:"-"`
	Route     string          `json:"route,omitempty"`
	// Tier is the route policy's tier of the call (direct, bounded_work,
	// campaign), when the gate decided one.
	Tier string `json:"tier,omitempty"`
	// Stage is the run's current stage when the span was recorded.
	Stage string `json:"stage,omitempty"`
	// Decision is the mediator's: allow, ask, block, escalate.
	Decision  string `json:"decision,omitempty"`
	Outcome   string `json:"outcome"` // ok or error
	ErrorCode string `json:"error_code,omitempty"`
	// Segments are the latency segments in milliseconds.
	Segments    map[string]float64 `json:"segments,omitempty"`
	Start       time.Time          `json:"start"`
	DurationMs  float64            `json:"duration_ms"`
	ReceiptID   string             `json:"receipt_id,omitempty"`
	JobID       string             `json:"job_id,omitempty"`
	CheckID     string             `json:"check_id,omitempty"`
	ApprovalID  string             `json:"approval_id,omitempty"`
	OutputBytes int64              `json:"output_bytes,omitempty"`
	ReadOnly    bool               `json:"read_only,omitempty"`
	Persist     bool               `json:"persisted,omitempty"`
	// RepoID is the repository the call worked on, if one.
	RepoID string `json:"repo_id,omitempty"`
	// Verdict is a check's: pass or fail ("" for other calls).
	Verdict string `json:"verdict,omitempty"`
	// CPUMs is the CPU time of the process tree the call itself ran (a
	// check that ran here, not one reused, joined or run as a job: a
	// job's is charged when it ends).
	CPUMs   int64  `json:"cpu_ms,omitempty"`
	Session string `json:"session,omitempty"`
	Client  Client `json:"client,omitzero"`
}

// RunEvent is published on the actor system's event stream for every
// change of a run: a span, an observation, a new state. SSE streams and
// the OTLP exporter subscribe to it.
type RunEvent struct {
	RunID string `json:"run_id"`
	Seq   uint64 `json:"seq"`
	// Type is span, observation, state (every change) or end (once, when
	// the run ends; State is the final state).
	Type        string          `json:"type"`
	Span        *RunSpan        `json:"span,omitempty"`
	Observation *RunObservation `json:"observation,omitempty"`
	State       *RunState       `json:"state,omitempty"`
}

// RunStart asks the runs supervisor for a new run; answered with RunGot
// once the run is stored. Implicit runs are keyed by their session: a
// second RunStart for the same session answers the run it already has.
type RunStart struct {
	Goal          string
	RepoID        string
	WorkflowClass string
	ParentRunID   string
	Budget        RunBudget
	Caller        Caller
	Implicit      bool
	Now           time.Time
	// Tier and Shape are the run's declared scope (RunState.Tier).
	Tier  string
	Shape RunShape
	// MaxRetries is the run's retry bound; nil = the default.
	MaxRetries *int
}

// RunCharge asks a run to draw on its budget before a call runs (and, for
// a child run, the client draws on each ancestor too, refunding on a refusal).
// Answered with RunCharged or a Failed BUDGET_EXCEEDED naming the figures.
type RunCharge struct {
	RunID     string
	Commands  int64
	Mutations int64
	Jobs      int64
	Approvals int64
	// Child is set when a child run draws on this one.
	Child string
	// Op and Input, when Op is set, ask whether the call (Op with Input)
	// is a retry past the run's bound: RETRY_LIMIT with the history and
	// the recovery plan. The run hashes Input as it hashes spans.
	Op    string
	Input json.RawMessage
}

// RunCharged answers RunCharge.
type RunCharged struct{}

// RunRefund returns a charge a call did not use (a refused descendant).
type RunRefund struct {
	RunID     string
	Child     string
	Commands  int64
	Mutations int64
	Jobs      int64
	Approvals int64
}

// RunUsage charges CPU time a run's processes used after their call
// answered: a job the run started, when it ends. Child is set when a
// child run's use is charged to this one (an ancestor's Drawn). Sent
// without waiting; a run that ended ignores it.
type RunUsage struct {
	RunID string
	Child string
	CPUMs int64
}

// RunObserve appends an observation (agent or harnessd). Sent as a request
// it is answered with RunObserved once stored.
type RunObserve struct {
	RunID       string
	Observation RunObservation
}

// RunObserved answers RunObserve.
type RunObserved struct{ State RunState }

// RunStage records a stage: started makes it current, completed adds it
// to the completed stages, blocked marks the run blocked with Reason.
type RunStage struct {
	RunID  string
	Stage  string
	Status string
	Reason string
	Now    time.Time
}

// RunEnd ends a run. Reason is free text; Status defaults to ended.
type RunEnd struct {
	RunID  string
	Status string
	Reason string
	Now    time.Time
}

// RunEscalate raises a run's tier (run_escalate): explicit, never
// lower, recorded as an observation and in the run's Escalations.
// Answered with RunGot.
type RunEscalate struct {
	RunID  string
	To     string
	Reason string
	Now    time.Time
}

// RunGet asks for a run's state and its spans (the ring, then persisted).
type RunGet struct {
	RunID string
	// Spans includes the spans; false answers the state only.
	Spans bool
}

// RunGot answers RunGet.
type RunGot struct {
	State RunState
	Spans []RunSpan
	// DroppedSpans counts read spans that fell out of the bounded ring.
	DroppedSpans int64
}

// RunList asks for every run, newest first (Status "" = all).
type RunList struct {
	Status string
	Limit  int
}

// RunListed answers RunList.
type RunListed struct{ Runs []RunState }

// RunBind binds a run to a (new) session: run_resume. Later calls of the
// session without a run_id belong to it.
type RunBind struct {
	RunID  string
	Caller Caller
	Now    time.Time
}

// RunBound answers RunBind.
type RunBound struct{ State RunState }

// RunSessionClosed tells the runs supervisor a session went away: its
// runs are detached and may be resumed within the resume window.
type RunSessionClosed struct {
	Session string
	Now     time.Time
}

// RunSweep asks the runs supervisor to end the runs past their deadline
// or their resume window (the supervisor sends it to itself on a timer;
// tests send it with Now).
type RunSweep struct{ Now time.Time }

// RunSwept answers a RunSweep sent as a request.
type RunSwept struct{}
