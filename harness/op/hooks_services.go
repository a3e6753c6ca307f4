package op

import (
	"context"
	"time"

	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/checkid"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/wall"
	"github.com/harnessd/harnessd/messages"
)

// Checker is what a run's verification (run_claim, run_verify, a write's
// verification gate) needs of run_check, which implements it (ops/check,
// wired at Open): a check's definition, the checkout's content revision
// and the evidence run_check stored, computed exactly as run_check
// computes them, running nothing.
type Checker interface {
	// Define validates a check as run_check takes it (INVALID_ARGUMENT
	// naming the fix otherwise).
	Define(d CheckDef) error
	// Revision returns the content revision of the checkout e (root is
	// its path checker) as a check's identity sees it.
	Revision(ctx context.Context, env *Env, e runtime.RepoEntry, root *pathsafe.Root) (checkid.Revision, error)
	// Evidence identifies check d in the checkout e at revision rev and
	// returns its passing evidence stored there (or, shared, by another
	// clean checkout of the repository), and the newest evidence of the
	// same definition when it is of another identity. The identity is
	// filled in even when the evidence cannot be read.
	Evidence(ctx context.Context, env *Env, e runtime.RepoEntry, rev checkid.Revision, d CheckDef, now time.Time) (CheckFound, error)
}

// CheckDef is a check as a claim's evidence names it: run_check's own
// arguments.
type CheckDef struct {
	Argv      []string
	Cwd       string
	TimeoutMs int
	Effects   []string
}

// CheckFound is what Checker.Evidence found of a check.
type CheckFound struct {
	// Identity is the check's semantic identity now, Parts what it was
	// computed from.
	Identity checkid.Identity
	Parts    checkid.Parts
	// Current is the passing evidence of Identity (nil: none, or too old);
	// Previous the newest evidence of the same definition when it is of
	// another identity (nil: none).
	Current, Previous *messages.CheckEvidence
}

// Durable is what an unfocused check needs of the Durable Path, which
// implements it (ops/job, wired at Open), and the diagnosis of a confined
// process that failed against a wall of the sandbox.
type Durable interface {
	// Start starts job s in c's repository under the request ledger (a
	// retry with the same request id returns the same job) and returns
	// its record. It crosses no gate: the operation's did.
	Start(ctx context.Context, c *Call, s JobSpec) (messages.Job, error)
	// Wait polls job id until it is final or wait elapsed, reporting
	// progress; a shutting-down harness or a done context ends the wait
	// with the current record.
	Wait(ctx context.Context, c *Call, id string, wait time.Duration) (messages.Job, error)
	// Streams returns the head and tail of the job's redacted stdout and
	// stderr logs, maxBytes each; nil for a log that cannot be read.
	Streams(j messages.Job, maxBytes int) (stdout, stderr *proc.Output)
	// Walls returns what the sandbox did to a failed confined process of
	// tool, judged against the policy of profile in the checkout e as
	// tweak adjusts it: dir is its working directory, output its stderr
	// and stdout. None when it exited 0 or no line is a wall's message.
	Walls(ctx context.Context, env *Env, tool string, profile sandbox.Profile, e runtime.RepoEntry, tweak func(*sandbox.Policy),
		dir string, exitCode int, output string) []wall.Diagnosis
}

// JobSpec is a job to start: what job_start validated, or an unfocused
// check.
type JobSpec struct {
	Argv      []string
	Cwd       string // rel to the root
	TimeoutS  int
	Isolation string
	Writes    bool
	Network   bool
	RetryMax  int
	RequestID string
	// Hashed are the arguments the ledger hashes for RequestID.
	Hashed any
}

// CheckJobPrefix starts the request id of the job of an unfocused check
// (run_check's durable path): its walls are diagnosed as run_check's.
const CheckJobPrefix = "check-"

// JobFinal reports whether a job state is final (neither queued nor
// running).
func JobFinal(state string) bool {
	return state != messages.JobQueued && state != messages.JobRunning
}
