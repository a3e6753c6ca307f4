package runs

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/internal/verify"
	"github.com/harnessd/harnessd/messages"
)

// Bounds of a run summary: it is shown to the next session, so it stays
// small whatever the run did.
const (
	// MaxSummaryItems bounds each list of a summary (the newest kept).
	MaxSummaryItems = 20
	// MaxSummaryBlockers bounds the blockers named per stage.
	MaxSummaryBlockers = 3
	// MaxSummaryText bounds the summary's text.
	MaxSummaryText = 2048
)

// Summary triggers.
const (
	SummaryEnded = "ended"
	SummaryIdle  = "idle"
)

// StageFacts is what the stage record of a run says (its claims and its
// last verification), as the summary and the scorecard read it.
type StageFacts struct {
	Stage    string
	Status   string // claimed or verified
	Claims   int
	Blockers []string
}

// FactsOfStage is what a stage record says, as the summary reads it.
func FactsOfStage(st verify.Stage) StageFacts {
	f := StageFacts{Stage: st.Stage, Status: st.Status, Claims: len(st.Claims)}
	if v := st.Verification; v != nil {
		for _, b := range v.Blockers {
			f.Blockers = append(f.Blockers, b.Reason)
		}
	}
	return f
}

// SummaryFacts is everything a summary is computed from: the run's state,
// its spans (in memory and stored, merged), its stage records and its
// jobs still queued or running.
type SummaryFacts struct {
	State    messages.RunState
	Spans    []messages.RunSpan
	Stages   []StageFacts
	LiveJobs []string
	Trigger  string
	Now      time.Time
}

// denialCodes are the refusals the scorecard counts as denials.
var denialCodes = map[string]bool{"POLICY_DENIED": true, "ROLE_DENIED": true, "ROUTE_REJECTED": true}

// Score computes a run's scorecard from its spans (any order) and stage
// records.
func Score(spans []messages.RunSpan, stages []StageFacts) messages.RunScorecard {
	var sc messages.RunScorecard
	ordered := slices.Clone(spans)
	slices.SortStableFunc(ordered, func(a, b messages.RunSpan) int { return a.Start.Compare(b.Start) })
	failed := map[string]bool{} // op, input hash, stage of failed calls
	approvals := map[string]bool{}
	tested := false // a passing check since the last write
	for _, s := range ordered {
		if s.ParentID == "" {
			sc.Calls++
		}
		key := s.Op + "\x00" + s.InputHash + "\x00" + s.Stage
		if s.InputHash != "" && failed[key] {
			sc.Retries++
		}
		if s.Outcome != "ok" {
			if s.ParentID == "" {
				sc.Failures++
			}
			if s.InputHash != "" {
				failed[key] = true
			}
		} else if s.InputHash != "" {
			delete(failed, key)
		}
		if denialCodes[s.ErrorCode] {
			sc.Denials++
		}
		if s.ApprovalID != "" && !approvals[s.ApprovalID] {
			approvals[s.ApprovalID] = true
			sc.Approvals++
		}
		switch {
		case s.Verdict == "pass":
			sc.ChecksPassed++
			tested = true
		case s.Verdict == "fail":
			sc.ChecksFailed++
		}
		if s.Outcome != "ok" {
			continue
		}
		switch s.Op {
		case "git_commit":
			sc.Commits++
			if tested {
				sc.CommitsTested++
			}
		case "revert", "run_revert":
			sc.Reverts++
			tested = false
		case "git_stage":
		default:
			if s.ReceiptID != "" {
				tested = false // a write: the checks before it are of other content
			}
		}
	}
	for _, st := range stages {
		if st.Claims == 0 {
			continue
		}
		sc.StagesClaimed++
		if st.Status == "verified" {
			sc.StagesVerified++
		}
	}
	return sc
}

// AddScore adds b to a (a client's scorecard over its runs).
func AddScore(a *messages.RunScorecard, b messages.RunScorecard) {
	a.Commits += b.Commits
	a.CommitsTested += b.CommitsTested
	a.ChecksPassed += b.ChecksPassed
	a.ChecksFailed += b.ChecksFailed
	a.StagesClaimed += b.StagesClaimed
	a.StagesVerified += b.StagesVerified
	a.Approvals += b.Approvals
	a.Reverts += b.Reverts
	a.Retries += b.Retries
	a.Denials += b.Denials
	a.Failures += b.Failures
	a.Calls += b.Calls
}

// Summarize computes a run's summary from f. Lists keep their newest
// MaxSummaryItems entries (Omitted counts the rest); the text stays within
// MaxSummaryText.
func Summarize(f SummaryFacts) messages.RunSummary {
	st := f.State
	sum := messages.RunSummary{RunID: st.RunID, Goal: st.Goal, Client: clientName(st.Caller.Client), Status: st.Status, EndReason: st.EndReason,
		Trigger: f.Trigger, At: f.Now, Changes: []messages.RunSummaryChange{}, Checks: []messages.RunSummaryCheck{},
		Approvals: []messages.RunSummaryItem{}, Stages: []messages.RunSummaryStage{}, Blockers: []string{}}
	repos := map[string]bool{}
	if st.RepoID != "" {
		repos[st.RepoID] = true
		sum.Repos = append(sum.Repos, st.RepoID)
	}
	ordered := slices.Clone(f.Spans)
	slices.SortStableFunc(ordered, func(a, b messages.RunSpan) int { return a.Start.Compare(b.Start) })
	checks := map[string]int{} // check id -> index in sum.Checks
	seenApproval := map[string]bool{}
	for _, s := range ordered {
		if s.RepoID != "" && !repos[s.RepoID] {
			repos[s.RepoID] = true
			sum.Repos = append(sum.Repos, s.RepoID)
		}
		if s.ReceiptID != "" && s.Outcome == "ok" {
			sum.Changes = append(sum.Changes, messages.RunSummaryChange{Op: s.Op, ReceiptID: s.ReceiptID, RepoID: s.RepoID, At: s.Start})
		}
		if s.CheckID != "" {
			v := s.Verdict
			if v == "" {
				v = "error"
			}
			if i, ok := checks[s.CheckID]; ok {
				c := &sum.Checks[i]
				c.Verdict, c.Runs, c.At = v, c.Runs+1, s.Start
			} else {
				checks[s.CheckID] = len(sum.Checks)
				sum.Checks = append(sum.Checks, messages.RunSummaryCheck{CheckID: s.CheckID, Verdict: v, Runs: 1, At: s.Start})
			}
		}
		if s.ApprovalID != "" && !seenApproval[s.ApprovalID] {
			seenApproval[s.ApprovalID] = true
			sum.Approvals = append(sum.Approvals, messages.RunSummaryItem{ID: s.ApprovalID, Op: s.Op, At: s.Start})
		}
	}
	sum.Escalations = slices.Clone(st.Escalations)
	facts := map[string]StageFacts{}
	for _, sf := range f.Stages {
		facts[sf.Stage] = sf
	}
	stageOf := func(name, status string) messages.RunSummaryStage {
		s := messages.RunSummaryStage{Stage: name, Status: status}
		if sf, ok := facts[name]; ok && sf.Claims > 0 {
			s.Verification = sf.Status
			s.Blockers = capStrings(sf.Blockers, MaxSummaryBlockers)
		}
		return s
	}
	listed := map[string]bool{}
	for _, name := range st.CompletedStages {
		listed[name] = true
		sum.Stages = append(sum.Stages, stageOf(name, "completed"))
	}
	if cur := st.CurrentStage; cur != "" && !listed[cur] {
		listed[cur] = true
		status := "current"
		if st.Blocked {
			status = "blocked"
		}
		sum.Stages = append(sum.Stages, stageOf(cur, status))
	}
	for _, sf := range f.Stages {
		if !listed[sf.Stage] && sf.Claims > 0 {
			listed[sf.Stage] = true
			sum.Stages = append(sum.Stages, stageOf(sf.Stage, "claimed"))
		}
	}
	if st.Blocked {
		sum.Blockers = append(sum.Blockers, "stage "+strconv.Quote(st.CurrentStage)+" is blocked: "+st.BlockedReason)
	}
	if st.Stuck {
		sum.Blockers = append(sum.Blockers, "stage "+strconv.Quote(st.CurrentStage)+" made no progress since "+st.StuckSince.UTC().Format(time.RFC3339))
	}
	for _, sf := range f.Stages {
		if sf.Claims > 0 && sf.Status != "verified" {
			b := "stage " + strconv.Quote(sf.Stage) + " has claims that are not verified"
			if len(sf.Blockers) > 0 {
				b += ": " + sf.Blockers[0]
			}
			sum.Blockers = append(sum.Blockers, b)
		}
	}
	for _, j := range f.LiveJobs {
		sum.Blockers = append(sum.Blockers, "job "+j+" is not finished")
	}
	sum.Scorecard = Score(f.Spans, f.Stages)
	sum.Changes, sum.Omitted = keepNewest(sum.Changes, sum.Omitted)
	sum.Checks, sum.Omitted = keepNewest(sum.Checks, sum.Omitted)
	sum.Approvals, sum.Omitted = keepNewest(sum.Approvals, sum.Omitted)
	sum.Escalations, sum.Omitted = keepNewest(sum.Escalations, sum.Omitted)
	sum.Stages, sum.Omitted = keepNewest(sum.Stages, sum.Omitted)
	sum.Blockers, sum.Omitted = keepNewest(sum.Blockers, sum.Omitted)
	for i, b := range sum.Blockers {
		sum.Blockers[i] = clip(b, 300)
	}
	sum.Text = SummaryText(sum)
	return sum
}

// SummaryText renders a summary in a few lines, at most MaxSummaryText
// bytes.
func SummaryText(s messages.RunSummary) string {
	var b strings.Builder
	head := "Run " + s.RunID
	if s.Goal != "" {
		head += " (" + strconv.Quote(clip(s.Goal, 200)) + ")"
	}
	if s.Client != "" {
		head += " by " + s.Client
	}
	head += " is " + s.Status
	if s.EndReason != "" {
		head += ": " + clip(s.EndReason, 200)
	}
	b.WriteString(head + ".\n")
	if len(s.Changes) > 0 {
		parts := make([]string, 0, len(s.Changes))
		for _, c := range s.Changes {
			parts = append(parts, c.Op+" "+c.ReceiptID)
		}
		b.WriteString("Changed: " + strings.Join(parts, ", ") + ".\n")
	}
	if len(s.Checks) > 0 {
		parts := make([]string, 0, len(s.Checks))
		for _, c := range s.Checks {
			parts = append(parts, shortID(c.CheckID)+" "+c.Verdict)
		}
		b.WriteString("Checks: " + strings.Join(parts, ", ") + ".\n")
	}
	if len(s.Stages) > 0 {
		parts := make([]string, 0, len(s.Stages))
		for _, st := range s.Stages {
			p := st.Stage + " " + st.Status
			if st.Verification != "" {
				p += " (" + st.Verification + ")"
			}
			parts = append(parts, p)
		}
		b.WriteString("Stages: " + strings.Join(parts, ", ") + ".\n")
	}
	if len(s.Approvals) > 0 {
		parts := make([]string, 0, len(s.Approvals))
		for _, a := range s.Approvals {
			parts = append(parts, a.ID+" ("+a.Op+")")
		}
		b.WriteString("Approvals asked: " + strings.Join(parts, ", ") + ".\n")
	}
	for _, e := range s.Escalations {
		b.WriteString("Escalated to " + e.To + ": " + clip(e.Reason, 200) + ".\n")
	}
	if len(s.Blockers) > 0 {
		b.WriteString("Open: " + strings.Join(s.Blockers, "; ") + ".\n")
	}
	return clip(b.String(), MaxSummaryText)
}

func clientName(c messages.Client) string {
	if c.Version == "" {
		return c.Name
	}
	return c.Name + " " + c.Version
}

func shortID(id string) string {
	if len(id) > 19 {
		return id[:19]
	}
	return id
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func capStrings(s []string, n int) []string {
	if len(s) > n {
		return slices.Clone(s[:n])
	}
	return slices.Clone(s)
}

// keepNewest keeps the last MaxSummaryItems entries of l, adding the
// dropped ones to omitted.
func keepNewest[T any](l []T, omitted int) ([]T, int) {
	if n := len(l); n > MaxSummaryItems {
		return l[n-MaxSummaryItems:], omitted + n - MaxSummaryItems
	}
	return l, omitted
}
