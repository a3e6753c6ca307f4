package op

import (
	"time"

	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/preimage"
	"github.com/harnessd/harnessd/internal/verify"
	"github.com/harnessd/harnessd/messages"
)

// Receipt records one mutation: who wrote what under which fencing token.
type Receipt struct {
	ReceiptID     string            `json:"receipt_id"`
	RequestID     string            `json:"request_id"`
	Operation     string            `json:"operation"`
	RepoID        string            `json:"repo_id"`
	CheckoutID    string            `json:"checkout_id"`
	LeaseID       string            `json:"lease_id"`
	FencingToken  uint64            `json:"fencing_token"`
	FencingTokens map[string]uint64 `json:"fencing_tokens"`
	Changes       []patch.Change    `json:"changes"`
	HeadBefore    string            `json:"head_before,omitempty"`
	HeadAfter     string            `json:"head_after,omitempty"`
	Commit        string            `json:"commit,omitempty"`
	HooksRan      *bool             `json:"hooks_ran,omitempty"`
	// Tree is what a commit (git_commit) changed against its parent, with
	// the sha256 of every blob before and after: what commit_verify
	// compares with the commit's tree. Changes keeps the paths only.
	Tree []patch.Change `json:"tree,omitempty"`
	// SkippedSecretPaths are changed secret files a directory or glob of
	// git_stage matched and harnessd left unstaged.
	SkippedSecretPaths []string `json:"skipped_secret_paths,omitempty"`
	// Verified are the verified stages the write required and passed
	// (git_commit's require_verified, require_verified policy rules), as
	// they were verified at the moment of the write.
	Verified []verify.Stamp `json:"verified,omitempty"`
	// PreImages name the state of every file the write changed, as it was
	// before (content digest and mode, or absent): what revert restores.
	PreImages []preimage.Ref `json:"pre_images,omitempty"`
	// Reverts are the receipts a revert undid, newest first.
	Reverts []string `json:"reverts,omitempty"`
	// Push is what a git_push sent and what the remote answered.
	Push *PushRecord `json:"push,omitempty"`
	// Resources are the figures of the process tree of the job whose
	// receipt this is (a job that wrote its checkout in place): CPU time,
	// peak RSS, storage I/O, processes.
	Resources *messages.Resources `json:"resources,omitempty"`
	// Refs are the refs a job harnessd performed itself moved (git reset
	// --hard, git branch -D, git tag -f; see gitwrite.go): revert sets each
	// back to Old while it still is at New.
	Refs []RefChange `json:"refs,omitempty"`
	// GitFiles are the files of the git directory such a job replaced
	// (the index, ORIG_HEAD, a merge's state) as they were before it:
	// revert puts them back.
	GitFiles []preimage.Ref `json:"git_files,omitempty"`
	// RunID and SpanID are the run and span of the call that wrote.
	RunID     string    `json:"run_id,omitempty"`
	SpanID    string    `json:"span_id,omitempty"`
	At        time.Time `json:"at"`
	LatencyMs float64   `json:"latency_ms"`
}

// RefChange is one ref a job moved: its value before and after ("" =
// absent).
type RefChange struct {
	Ref string `json:"ref"`
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

// PushRecord is one push of git_push: the remote and its URL (no
// credential is ever in it), the refs, the commit pushed, force, and the
// remote ref's commit before ("" = a new ref) and after.
type PushRecord struct {
	Remote    string `json:"remote"`
	URL       string `json:"url"`
	LocalRef  string `json:"local_ref"`
	RemoteRef string `json:"remote_ref"`
	Commit    string `json:"commit"`
	Force     bool   `json:"force"`
	Old       string `json:"old,omitempty"`
	New       string `json:"new"`
	Summary   string `json:"summary"`
}

// MutationResult is the result of apply_patch, git_stage, git_commit and
// patch_proposal_integrate.
type MutationResult struct {
	Receipt
	// Replayed is true when this request_id already succeeded: the stored
	// result is returned and nothing ran again.
	Replayed bool `json:"replayed"`
	// Warnings report bookkeeping that failed beside a successful write
	// (ledger or receipt persistence); the write itself happened.
	Warnings []string `json:"warnings,omitempty"`
	// Queued is set when the files were busy and the write was queued as
	// a durable job (on_busy: "durable"): nothing is written yet, and the
	// receipt is empty; job_status follows the job.
	Queued *QueuedWrite `json:"queued,omitempty"`
	Meta
}

// Warn adds a warning to the result.
func (m *MutationResult) Warn(w string) { m.Warnings = append(m.Warnings, w) }

// warner is a result that takes warnings of the engine.
type warner interface{ Warn(string) }
