// Package verify holds the pure rules of FlowDeck L5, "claimed vs
// verified": what an agent claims about a stage of its run, the evidence
// it cites, and the decisions that turn facts about that evidence (gathered
// by harness/ops/run: stored check evidence, receipts, file digests) into
// verified or a blocker that names the fix. Nothing here does I/O.
//
// A claim is verified only when every piece of its evidence is; a claim
// without evidence stays claimed. A stage is verified when it has at least
// one claim and every claim is verified.
package verify

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Evidence kinds.
const (
	KindCheck   = "check"
	KindReceipt = "receipt"
	KindFile    = "file"
	KindReview  = "review"
)

// Reviewers and verdicts of reviews.
const (
	ReviewerPerson = "person"
	VerdictApprove = "approve"
	VerdictReject  = "reject"
)

// Statuses of claims and stages.
const (
	StatusClaimed  = "claimed"
	StatusVerified = "verified"
)

// Limits of claims.
const (
	MaxClaimText      = 4096
	MaxEvidence       = 32  // pieces of evidence per claim
	MaxClaimsPerStage = 64  // claims per stage of a run
	MaxBlockers       = 100 // blockers reported (and stored) per verification
	MaxChangedFiles   = 20  // changed files named per blocker
	MaxReviews        = 32  // reviews kept per stage (the newest)
)

// Evidence is one piece of evidence a claim cites. Kind says which fields
// apply: check (argv, cwd, timeout_ms, effects as for run_check, repo_id),
// receipt (receipt_id), file (path, sha256, repo_id) or review
// (reviewer).
type Evidence struct {
	Kind      string   `json:"kind" enum:"check,receipt,file,review" jsonschema:"check (argv, cwd), receipt (receipt_id), file (path, sha256) or review (a person's or another run's run_review)"`
	RepoID    string   `json:"repo_id,omitempty" jsonschema:"check, file: default the claim's, else the run's"`
	Argv      []string `json:"argv,omitempty" jsonschema:"check: exactly as given to run_check"`
	Cwd       string   `json:"cwd,omitempty" jsonschema:"check: as given to run_check"`
	TimeoutMs int      `json:"timeout_ms,omitempty" jsonschema:"check: as given to run_check, if it was"`
	Effects   []string `json:"effects,omitempty" jsonschema:"check: as given to run_check, if they were"`
	ReceiptID string   `json:"receipt_id,omitempty" jsonschema:"receipt: from a write's result or receipt_list"`
	Path      string   `json:"path,omitempty" jsonschema:"file: relative to the repository root"`
	SHA256    string   `json:"sha256,omitempty" jsonschema:"file: the hex sha256 it must have (read_file shows it)"`
	Reviewer  string   `json:"reviewer,omitempty" jsonschema:"review: person, or the run_id of the reviewer run (default: any reviewer)"`
}

// Review is a verdict on a stage of a run (run_review): a person's
// (through an approval only a person can give) or another run's.
type Review struct {
	// Reviewer is "person" or the reviewer run's id.
	Reviewer string `json:"reviewer"`
	// ApprovalID is the approval through which a person gave it.
	ApprovalID string    `json:"approval_id,omitempty"`
	Verdict    string    `json:"verdict"` // approve or reject
	Comment    string    `json:"comment,omitempty"`
	At         time.Time `json:"at"`
}

// Claim is one claim of an agent about a stage of its run.
type Claim struct {
	ClaimID  string     `json:"claim_id"`
	RunID    string     `json:"run_id"`
	Stage    string     `json:"stage"`
	Claim    string     `json:"claim"`
	RepoID   string     `json:"repo_id,omitempty"`
	Evidence []Evidence `json:"evidence"`
	// Status is claimed until a verification found every piece of its
	// evidence verified; a claim without evidence stays claimed.
	Status string    `json:"status"`
	At     time.Time `json:"at"`
	// VerifiedAt is when a verification last found it verified.
	VerifiedAt time.Time `json:"verified_at,omitzero"`
}

// EvidenceResult is the verdict on one piece of evidence of a claim.
type EvidenceResult struct {
	// Claim is the index of the claim in the stage, Index the evidence's
	// index in the claim.
	Claim int `json:"claim"`
	Index int `json:"index"`
	Evidence
	Verified bool   `json:"verified"`
	Reason   string `json:"reason"`
	// Identity is a check's semantic identity now; Revision the content
	// revision the evidence was judged against.
	Identity     string   `json:"identity,omitempty"`
	Revision     string   `json:"revision,omitempty"`
	ChangedFiles []string `json:"changed_files,omitempty"`
}

// Blocker is what stands between a stage and verified, with the fix.
type Blocker struct {
	Stage string `json:"stage"`
	// Claim is the index of the claim in the stage; -1 for a blocker of
	// the stage itself (no claim).
	Claim int `json:"claim"`
	// Evidence is the index of the evidence in the claim; -1 for a blocker
	// of the claim or the stage itself.
	Evidence     int      `json:"evidence"`
	Kind         string   `json:"kind,omitempty"`
	Reason       string   `json:"reason"`
	Fix          string   `json:"fix"`
	ChangedFiles []string `json:"changed_files,omitempty"`
}

// RepoRevision is the content revision of a repository a verification
// looked at.
type RepoRevision struct {
	RepoID   string `json:"repo_id"`
	Revision string `json:"revision,omitempty"` // checkid content revision digest
	Head     string `json:"head,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Verification is a stage's verification: when, against which revisions,
// the verdict on each piece of evidence and the blockers.
type Verification struct {
	Passed    bool             `json:"passed"`
	Status    string           `json:"status"`
	At        time.Time        `json:"at"`
	Revisions []RepoRevision   `json:"revisions,omitempty"`
	Evidence  []EvidenceResult `json:"evidence"`
	Blockers  []Blocker        `json:"blockers"`
}

// Stage is what is stored for one stage of a run: its claims and its last
// verification.
type Stage struct {
	RunID        string        `json:"run_id"`
	Stage        string        `json:"stage"`
	Status       string        `json:"status"`
	Claims       []Claim       `json:"claims"`
	Verification *Verification `json:"verification,omitempty"`
	// Reviews are the verdicts given on the stage (run_review), oldest
	// first, the newest MaxReviews kept.
	Reviews   []Review  `json:"reviews,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Stamp is a verification a write passed, as its receipt records it.
type Stamp struct {
	RunID string `json:"run_id"`
	Stage string `json:"stage"`
	// Rule is the policy rule that required it, or "require_verified"
	// for the operation's own argument.
	Rule      string           `json:"rule"`
	At        time.Time        `json:"at"`
	Revisions []RepoRevision   `json:"revisions,omitempty"`
	Evidence  []EvidenceResult `json:"evidence"`
}

// Verdict is the decision on one piece of evidence.
type Verdict struct {
	Verified     bool
	Reason       string
	Fix          string
	ChangedFiles []string
}

var hexRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// NormalizeSHA256 returns a file digest as lower-case hex without a
// "sha256:" prefix, and whether it is one.
func NormalizeSHA256(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "sha256:")
	return s, hexRE.MatchString(s)
}

// Validate checks the shape of one piece of evidence (before any facts are
// gathered); the error names the field and the fix.
func Validate(e Evidence) error {
	if e.Reviewer != "" && e.Kind != KindReview {
		return fmt.Errorf("reviewer belongs to review evidence only")
	}
	switch e.Kind {
	case KindCheck:
		if len(e.Argv) == 0 || e.Argv[0] == "" {
			return fmt.Errorf("check evidence needs argv: the check exactly as given to run_check")
		}
		if e.ReceiptID != "" || e.Path != "" || e.SHA256 != "" {
			return fmt.Errorf("check evidence takes argv, cwd, timeout_ms, effects and repo_id only")
		}
		if e.TimeoutMs < 0 {
			return fmt.Errorf("timeout_ms must not be negative")
		}
	case KindReceipt:
		if !strings.HasPrefix(e.ReceiptID, "rcpt_") || len(e.ReceiptID) > 128 {
			return fmt.Errorf("receipt evidence needs receipt_id: the receipt_id of a write's result (rcpt_...)")
		}
		if len(e.Argv) > 0 || e.Path != "" || e.SHA256 != "" || e.Cwd != "" {
			return fmt.Errorf("receipt evidence takes receipt_id only")
		}
	case KindFile:
		if e.Path == "" {
			return fmt.Errorf("file evidence needs path, relative to the repository root")
		}
		if _, ok := NormalizeSHA256(e.SHA256); !ok {
			return fmt.Errorf("file evidence needs sha256: 64 hex digits (read_file reports it)")
		}
		if len(e.Argv) > 0 || e.ReceiptID != "" || e.Cwd != "" {
			return fmt.Errorf("file evidence takes path, sha256 and repo_id only")
		}
	case KindReview:
		if e.Reviewer != "" && e.Reviewer != ReviewerPerson && (!strings.HasPrefix(e.Reviewer, "run_") || len(e.Reviewer) > 128) {
			return fmt.Errorf("review evidence's reviewer is %q: person, a reviewer run's run_id (run_...), or leave it out for any reviewer", e.Reviewer)
		}
		if len(e.Argv) > 0 || e.ReceiptID != "" || e.Cwd != "" || e.Path != "" || e.SHA256 != "" || e.RepoID != "" {
			return fmt.Errorf("review evidence takes reviewer only")
		}
	default:
		return fmt.Errorf("evidence kind %q: one of check, receipt, file, review", e.Kind)
	}
	return nil
}

// CheckFacts is what is known about check evidence at verification time.
type CheckFacts struct {
	Argv []string
	Cwd  string
	// Err is why the check's identity could not be computed now.
	Err string
	// Identity and Revision are the check's identity and the content
	// revision now.
	Identity string
	Revision string
	// Found: passing evidence is stored for the current identity (from
	// FoundAt, run by FoundBy: "pid 123" or "job job_...").
	Found   bool
	FoundAt time.Time
	FoundBy string
	// Previous: passing evidence of the same check definition is stored
	// for another identity, of PreviousRevision (at PreviousAt).
	Previous         bool
	PreviousRevision string
	PreviousAt       time.Time
	// ChangedFiles are the files that differ between the previous
	// evidence's content and now; ChangedKnown is false when they could
	// not be named. Reasons explain the difference (checkid.ExplainMiss).
	ChangedFiles []string
	ChangedKnown bool
	Reasons      []string
}

// Check decides check evidence: verified only by passing evidence for the
// current content revision.
func Check(f CheckFacts) Verdict {
	fix := CheckFix(f.Argv, f.Cwd)
	switch {
	case f.Err != "":
		return Verdict{Reason: "the check's identity cannot be computed now: " + f.Err, Fix: "fix the cause, then " + fix}
	case f.Found:
		r := "passing evidence for the current content revision " + Short(f.Revision)
		if f.FoundBy != "" || !f.FoundAt.IsZero() {
			r += " (" + strings.TrimSpace(f.FoundBy+" at "+f.FoundAt.UTC().Format(time.RFC3339)) + ")"
		}
		return Verdict{Verified: true, Reason: r}
	case !f.Previous:
		return Verdict{Reason: "no passing run of this check is stored for the current content revision " + Short(f.Revision) +
			" (failed, timed out and cancelled runs are never evidence)", Fix: fix}
	}
	v := Verdict{Fix: fix}
	if f.PreviousRevision == f.Revision {
		// Same content, other identity: the environment changed.
		v.Reason = "the stored evidence of this check is for another environment"
		if len(f.Reasons) > 0 {
			v.Reason += ": " + strings.Join(f.Reasons, "; ")
		}
		return v
	}
	v.Reason = "stale: the passing evidence is for content revision " + Short(f.PreviousRevision) + ", the content is now " + Short(f.Revision)
	switch {
	case f.ChangedKnown && len(f.ChangedFiles) > 0:
		v.ChangedFiles = capFiles(f.ChangedFiles)
		v.Reason += "; changed since: " + listFiles(f.ChangedFiles)
	case f.ChangedKnown:
		v.Reason += "; no file differs (the environment or the revision's form changed)"
	default:
		v.Reason += "; the changed files cannot be named (revision " + Short(f.PreviousRevision) + " → " + Short(f.Revision) + ")"
	}
	if len(f.Reasons) > 0 {
		v.Reason += " (" + strings.Join(f.Reasons, "; ") + ")"
	}
	return v
}

// CheckFix is the fix of a check blocker.
func CheckFix(argv []string, cwd string) string {
	args := map[string]any{"argv": argv}
	if cwd != "" {
		args["cwd"] = cwd
	}
	b, _ := json.Marshal(args)
	return "run the check again on the current content (run_check " + string(b) + "), then run_verify"
}

// FileState is a file a receipt wrote: the digest it wrote ("" = it
// deleted the file) and the digest now ("" = absent).
type FileState struct {
	Path  string
	Wrote string
	Now   string
	// Err is why the file could not be read now.
	Err string
}

// ReceiptFacts is what is known about receipt evidence.
type ReceiptFacts struct {
	ReceiptID string
	Found     bool
	// Err is why the receipt could not be looked up.
	Err       string
	Operation string
	// Files are the files the receipt wrote, with their last written
	// digest (a receipt that staged or committed wrote none).
	Files []FileState
}

// Receipt decides receipt evidence: verified only while every file it
// wrote still has the digest it wrote.
func Receipt(f ReceiptFacts) Verdict {
	switch {
	case f.Err != "":
		return Verdict{Reason: "receipt " + f.ReceiptID + " cannot be read: " + f.Err, Fix: "retry run_verify; if it persists, cite a check or the files instead"}
	case !f.Found:
		return Verdict{Reason: "receipt " + f.ReceiptID + " is not stored (unknown, or pruned: 1000 receipts are kept per repository)",
			Fix: "cite a receipt_id from a write's result, or a check or the files"}
	case len(f.Files) == 0:
		return Verdict{Reason: "receipt " + f.ReceiptID + " (" + f.Operation + ") wrote no file contents to compare",
			Fix: "cite the receipt of the write that produced the files, or the files (kind file) or a check"}
	}
	var changed, reasons []string
	for _, fs := range f.Files {
		switch {
		case fs.Err != "":
			changed = append(changed, fs.Path)
			reasons = append(reasons, fs.Path+" cannot be read ("+fs.Err+")")
		case fs.Now == fs.Wrote:
		case fs.Wrote == "":
			changed = append(changed, fs.Path)
			reasons = append(reasons, fs.Path+" was deleted by the write and exists again")
		case fs.Now == "":
			changed = append(changed, fs.Path)
			reasons = append(reasons, fs.Path+" was deleted after the write")
		default:
			changed = append(changed, fs.Path)
			reasons = append(reasons, fs.Path+" changed after the write (wrote "+Short(fs.Wrote)+", now "+Short(fs.Now)+")")
		}
	}
	if len(changed) == 0 {
		return Verdict{Verified: true, Reason: "every file receipt " + f.ReceiptID + " wrote (" + strconv.Itoa(len(f.Files)) + ") still has the digest it wrote"}
	}
	return Verdict{Reason: "receipt " + f.ReceiptID + " is stale: " + strings.Join(capFiles(reasons), "; "),
		Fix: "cite the receipt of the write that made the current content, the files (kind file) or a check run on it", ChangedFiles: capFiles(changed)}
}

// FileFacts is what is known about file evidence.
type FileFacts struct {
	Path string
	Want string
	// Exists: the file exists with digest Now.
	Exists bool
	Now    string
	// Err is why the file cannot be read (outside the root, secret, .git,
	// a directory, ...).
	Err string
}

// File decides file evidence: verified only if the file exists with the
// claimed sha256.
func File(f FileFacts) Verdict {
	switch {
	case f.Err != "":
		return Verdict{Reason: f.Path + " cannot be verified: " + f.Err, Fix: "cite a file inside the repository that harnessd may read"}
	case !f.Exists:
		return Verdict{Reason: f.Path + " does not exist", Fix: "cite a file that exists (read_file reports its sha256)", ChangedFiles: []string{f.Path}}
	case f.Now != f.Want:
		return Verdict{Reason: f.Path + " has sha256 " + Short(f.Now) + ", not the claimed " + Short(f.Want),
			Fix: "claim again with the file's current sha256 (read_file reports it), or restore the content", ChangedFiles: []string{f.Path}}
	}
	return Verdict{Verified: true, Reason: f.Path + " has the claimed sha256 " + Short(f.Want)}
}

// ReviewFacts is what is known about review evidence: the run reviewed,
// the reviewer the evidence names ("" = any) and the stage's reviews.
type ReviewFacts struct {
	RunID   string
	Stage   string
	Want    string
	Reviews []Review
}

// ReviewFix is the fix of a review blocker.
func ReviewFix(runID, stage, want string) string {
	who := "a person (run_review with as_person: a person approves it) or a reviewer run (run_review from another run)"
	switch {
	case want == ReviewerPerson:
		who = "a person (run_review with as_person: a person approves it)"
	case want != "":
		who = "reviewer run " + want + " (run_review from that run)"
	}
	return "ask " + who + " to review stage " + strconv.Quote(stage) + " of run " + runID + ", then run_verify"
}

// CheckReview decides review evidence: verified only when the newest
// review of the stage by the named reviewer (any reviewer when none is
// named) approves it. A review by the reviewed run itself never counts,
// and a later reject overrides an earlier approve.
func CheckReview(f ReviewFacts) Verdict {
	fix := ReviewFix(f.RunID, f.Stage, f.Want)
	var last *Review
	for i := range f.Reviews {
		r := &f.Reviews[i]
		if r.Reviewer == f.RunID || r.Reviewer == "" {
			continue
		}
		if f.Want != "" && r.Reviewer != f.Want {
			continue
		}
		if last == nil || !r.At.Before(last.At) {
			last = r
		}
	}
	switch {
	case last == nil && f.Want != "":
		return Verdict{Reason: "stage " + strconv.Quote(f.Stage) + " has no review by " + f.Want, Fix: fix}
	case last == nil:
		return Verdict{Reason: "stage " + strconv.Quote(f.Stage) + " has no review (by a person or another run)", Fix: fix}
	case last.Verdict != VerdictApprove:
		r := "the latest review by " + last.Reviewer + " rejects stage " + strconv.Quote(f.Stage)
		if last.Comment != "" {
			r += ": " + last.Comment
		}
		return Verdict{Reason: r, Fix: "address the review, then " + fix}
	}
	r := "approved by " + last.Reviewer + " at " + last.At.UTC().Format(time.RFC3339)
	if last.ApprovalID != "" {
		r += " (approval " + last.ApprovalID + ")"
	}
	return Verdict{Verified: true, Reason: r}
}

// AddReview appends r to a stage's reviews, keeping the newest MaxReviews.
func AddReview(st *Stage, r Review) {
	st.Reviews = append(st.Reviews, r)
	if n := len(st.Reviews); n > MaxReviews {
		st.Reviews = append([]Review(nil), st.Reviews[n-MaxReviews:]...)
	}
}

// Judged is one claim's evidence verdicts, in order.
type Judged struct {
	Verdicts []Verdict
	Kinds    []string
}

// Outcome is the verdict on a stage.
type Outcome struct {
	Passed   bool
	Status   string
	Blockers []Blocker
	// ClaimVerified says, per claim, whether it is verified.
	ClaimVerified []bool
}

// Decide folds the verdicts of every claim of a stage into the stage's
// outcome: passed when there is at least one claim and every claim has
// evidence and all of it is verified.
func Decide(stage string, claims []Judged) Outcome {
	out := Outcome{ClaimVerified: make([]bool, len(claims)), Blockers: []Blocker{}}
	if len(claims) == 0 {
		out.Status = StatusClaimed
		out.Blockers = append(out.Blockers, Blocker{Stage: stage, Claim: -1, Evidence: -1,
			Reason: "no claim is recorded for stage " + strconv.Quote(stage),
			Fix:    "record what was done with run_claim (with evidence), then run_verify"})
		return out
	}
	all := true
	for i, c := range claims {
		if len(c.Verdicts) == 0 {
			all = false
			out.Blockers = append(out.Blockers, Blocker{Stage: stage, Claim: i, Evidence: -1,
				Reason: "claim " + strconv.Itoa(i) + " has no evidence: a claim without evidence stays claimed",
				Fix:    "claim again with evidence (a check, a receipt or a file)"})
			continue
		}
		ok := true
		for j, v := range c.Verdicts {
			if v.Verified {
				continue
			}
			ok = false
			kind := ""
			if j < len(c.Kinds) {
				kind = c.Kinds[j]
			}
			out.Blockers = append(out.Blockers, Blocker{Stage: stage, Claim: i, Evidence: j, Kind: kind, Reason: v.Reason, Fix: v.Fix, ChangedFiles: v.ChangedFiles})
		}
		out.ClaimVerified[i] = ok
		all = all && ok
	}
	if len(out.Blockers) > MaxBlockers {
		out.Blockers = out.Blockers[:MaxBlockers]
	}
	out.Passed = all
	out.Status = StatusClaimed
	if all {
		out.Status = StatusVerified
	}
	return out
}

// ChangedPaths returns the sorted paths whose dirty content differs
// between two content revisions' dirty maps (path -> content digest).
func ChangedPaths(prev, cur map[string]string) []string {
	var out []string
	for p, v := range prev {
		if w, ok := cur[p]; !ok || w != v {
			out = append(out, p)
		}
	}
	for p := range cur {
		if _, ok := prev[p]; !ok {
			out = append(out, p)
		}
	}
	sortStrings(out)
	return out
}

// Union merges sorted path lists without duplicates, sorted.
func Union(a, b []string) []string {
	seen := make(map[string]bool, len(a)+len(b))
	var out []string
	for _, l := range [][]string{a, b} {
		for _, p := range l {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sortStrings(out)
	return out
}

func sortStrings(s []string) { sort.Strings(s) }

// Short returns a digest's first 12 hex digits ("sha256:" dropped).
func Short(d string) string {
	s := strings.TrimPrefix(d, "sha256:")
	if len(s) > 12 {
		s = s[:12]
	}
	if s == "" {
		return "(none)"
	}
	return s
}

func capFiles(files []string) []string {
	if len(files) > MaxChangedFiles {
		return files[:MaxChangedFiles]
	}
	return files
}

func listFiles(files []string) string {
	shown := capFiles(files)
	s := strings.Join(shown, ", ")
	if rest := len(files) - len(shown); rest > 0 {
		s += " and " + strconv.Itoa(rest) + " more"
	}
	return s
}
