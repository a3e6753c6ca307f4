package messages

import (
	"encoding/json"
	"time"
)

// CheckKey names the check actor that owns one semantic identity. Shared
// is true when the identity may be answered across the checkouts of one
// repository (the asking checkout is clean and the check declares no
// workspace writes); then the actor is keyed by CommonDir, else by RepoID.
type CheckKey struct {
	RepoID    string
	CommonDir string
	Identity  string // checkid.Identity.Digest, "sha256:<hex>"
	Shared    bool
}

// CheckOutcome is what one run of a check produced. Stdout and Stderr are
// already redacted and bounded.
type CheckOutcome struct {
	RepoID     string    `json:"repo_id"` // the checkout it ran in
	Pid        int       `json:"pid,omitempty"`
	JobID      string    `json:"job_id,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	ExitCode   int       `json:"exit_code"`
	Passed     bool      `json:"passed"`
	TimedOut   bool      `json:"timed_out"`
	Cancelled  bool      `json:"cancelled"`
	Stdout     string    `json:"stdout"`
	Stderr     string    `json:"stderr"`
	Summary    []string  `json:"summary,omitempty"`
	Path       string    `json:"path"` // "fast" or "durable"
	// Resources are the figures of the check's process tree (its job's
	// on the Durable Path).
	Resources *Resources `json:"resources,omitempty"`
	// Escalated is set on the interim outcome of a focused check that
	// reached the Fast Path cap and continues as a durable job: the job
	// still runs, so ExitCode and Passed mean nothing yet. Its final
	// outcome (the job's) has no Escalated and is what becomes evidence.
	Escalated *CheckEscalation `json:"escalated,omitempty"`
	// Fleet names the fleet-wide run this outcome is (set only when the
	// daemon is in a fleet and the check's evidence is shared).
	Fleet *FleetRun `json:"fleet,omitempty"`
}

// FleetRun names the one run of a check fleet-wide: the node that ran it,
// its run id and its token (the etcd revision of its claim), and where
// this answer came from: "ran" (this node ran it), "joined" (this node
// waited for another node's run) or "reused" (the fleet's action cache).
// Refused lists evidence the fleet refused on the way (a blob whose
// digest did not match), so the check ran again.
type FleetRun struct {
	RunID   string   `json:"run_id"`
	Node    string   `json:"node"`
	Token   int64    `json:"token"`
	Source  string   `json:"source"`
	Refused []string `json:"refused,omitempty"`
}

// CheckEscalation says a focused check outgrew the Fast Path: its Fast
// Path process reached the cap (CapMs) and was stopped, and the check was
// restarted as durable job JobID in the same single flight. Reason says so
// in words an agent acts on.
type CheckEscalation struct {
	JobID  string `json:"job_id"`
	Reason string `json:"reason"`
	CapMs  int    `json:"cap_ms"`
}

// CheckEvidence is a persisted successful outcome: the proof that the check
// passed on exactly this identity. Parts is the JSON of checkid.Parts.
type CheckEvidence struct {
	RepoID           string          `json:"repo_id"`
	CommonDir        string          `json:"git_common_dir"`
	Identity         string          `json:"identity"`
	DefinitionDigest string          `json:"definition_digest"`
	Shared           bool            `json:"shared"`
	Parts            json.RawMessage `json:"parts,omitempty"`
	Outcome          CheckOutcome    `json:"outcome"`
	StoredAt         time.Time       `json:"stored_at"`
	// UsedAt is when a later call last reused it (recorded at most once
	// an hour); retention keeps the most recently used (checkid.Evict).
	UsedAt time.Time `json:"used_at,omitzero"`
}

// CheckSpec is what to run for a check: the checks actor hands it to its
// runner (a dependency, never part of the message), in a goroutine whose
// context belongs to the check actor, since every joined caller waits for
// the same run.
type CheckSpec struct {
	RepoID    string
	Root      string   // the repository root
	Cwd       string   // relative to Root ("" = the root)
	Argv      []string // the check as a typed argv
	TimeoutMs int
	// Durable runs the check as a durable job (unfocused checks); else one
	// bounded Fast Path process.
	Durable bool
	// Writes declares workspace writes (the workspace_write effect).
	Writes bool
	// DefaultTimeout: TimeoutMs is run_check's default (the caller set
	// none). A focused check that reaches the Fast Path cap is then handed
	// to a durable job with the Durable Path's default timeout; with a
	// timeout of the caller's own it times out there unless the cap, not
	// that timeout, stopped it.
	DefaultTimeout bool
	// EnvDigest is the environment fingerprint of the identity.
	EnvDigest string
}

// CheckRun asks the checks supervisor for the result of a check: reused
// evidence, the run in flight (joined) or a new run of Spec.
type CheckRun struct {
	Key              CheckKey
	DefinitionDigest string
	Parts            json.RawMessage // checkid.Parts of the asking call
	Spec             CheckSpec
	// Rerun runs the check even when evidence of it may be reused (a
	// person distrusts it, or the check is flaky); a run in flight is
	// still joined.
	Rerun bool
}

// CheckResult answers CheckRun. Reused: the outcome is stored evidence.
// Joined: this caller waited for a run another caller started. Previous is
// the newest evidence of the same definition seen when the run started (to
// explain the miss); nil when there was none or the result was reused.
type CheckResult struct {
	Identity string
	Outcome  CheckOutcome
	Reused   bool
	Joined   bool
	Previous *CheckEvidence
}

// CheckPrune asks the checks supervisor to bound the evidence of every
// repository to its budget (entries and bytes) now.
type CheckPrune struct{}

// CheckPruned answers CheckPrune.
type CheckPruned struct{ Removed int }

// CheckStats asks the checks supervisor for its figures.
type CheckStats struct{}

// CheckStatsReply answers CheckStats.
type CheckStatsReply struct {
	Active   int `json:"active_actors"`
	Running  int `json:"runs_in_flight"`
	Started  int `json:"runs_started"`
	Reused   int `json:"reused"`
	Joined   int `json:"joined"`
	Spawned  int `json:"actors_spawned"`
	Passived int `json:"actors_passivated"`
}
