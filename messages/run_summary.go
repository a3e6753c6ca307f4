package messages

import "time"

// RunSummary is what a run did, written when it ends or goes idle
// (FlowDeck L4): what changed with its receipts, the checks and their
// verdicts, approvals, escalations, the stages and what stays open. It is
// stored with the run and shown to the next session in the same
// repository (context_assemble). Every list is bounded.
type RunSummary struct {
	RunID  string `json:"run_id"`
	Goal   string `json:"goal,omitempty"`
	Client string `json:"client,omitempty"`
	// Repos are the repositories the run worked on.
	Repos     []string `json:"repos,omitempty"`
	Status    string   `json:"status"`
	EndReason string   `json:"end_reason,omitempty"`
	// Trigger is why it was written: ended or idle.
	Trigger     string             `json:"trigger"`
	At          time.Time          `json:"at"`
	Changes     []RunSummaryChange `json:"changes"`
	Checks      []RunSummaryCheck  `json:"checks"`
	Approvals   []RunSummaryItem   `json:"approvals"`
	Escalations []RunEscalation    `json:"escalations,omitempty"`
	Stages      []RunSummaryStage  `json:"stages"`
	// Blockers is what stays open: a blocked or stuck stage, stages whose
	// claims do not verify, live jobs.
	Blockers  []string     `json:"blockers"`
	Scorecard RunScorecard `json:"scorecard"`
	// Text is the summary in a few bounded lines, as context_assemble
	// shows it.
	Text string `json:"text"`
	// Omitted counts the entries left out of the bounded lists.
	Omitted int `json:"omitted,omitempty"`
}

// RunSummaryChange is one write of a run, by its receipt.
type RunSummaryChange struct {
	Op        string    `json:"operation"`
	ReceiptID string    `json:"receipt_id"`
	RepoID    string    `json:"repo_id,omitempty"`
	At        time.Time `json:"at"`
}

// RunSummaryCheck is a check a run ran, with its latest verdict.
type RunSummaryCheck struct {
	CheckID string    `json:"check_id"`
	Verdict string    `json:"verdict"` // pass, fail, or error (the call failed)
	Runs    int       `json:"runs"`
	At      time.Time `json:"at"`
}

// RunSummaryItem is an approval request (or another named event) of a
// run: its id and the operation that raised it.
type RunSummaryItem struct {
	ID string    `json:"id"`
	Op string    `json:"operation"`
	At time.Time `json:"at"`
}

// RunSummaryStage is a stage of a run: where it stands (completed,
// current, blocked) and its claimed-vs-verified status.
type RunSummaryStage struct {
	Stage        string   `json:"stage"`
	Status       string   `json:"status"`
	Verification string   `json:"verification,omitempty"` // claimed, verified
	Blockers     []string `json:"blockers,omitempty"`
}

// RunScorecard is how a run went, computed from its stored facts (spans,
// stage records), never from counters kept on the side.
type RunScorecard struct {
	// Commits are its successful git_commit calls; CommitsTested those
	// with a passing check after the run's last write before them.
	Commits       int `json:"commits"`
	CommitsTested int `json:"commits_tested"`
	ChecksPassed  int `json:"checks_passed"`
	ChecksFailed  int `json:"checks_failed"`
	// StagesClaimed are its stages with claims; StagesVerified those
	// verified at their last verification.
	StagesClaimed  int `json:"stages_claimed"`
	StagesVerified int `json:"stages_verified"`
	Approvals      int `json:"approvals"`
	Reverts        int `json:"reverts"`
	// Retries are calls that repeated a failed call (same operation,
	// input and stage).
	Retries int `json:"retries"`
	// Denials are calls refused by a policy rule, the caller's role or
	// the router (POLICY_DENIED, ROLE_DENIED, ROUTE_REJECTED).
	Denials  int `json:"denials"`
	Failures int `json:"failures"`
	Calls    int `json:"calls"`
}
