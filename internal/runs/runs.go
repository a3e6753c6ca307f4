// Package runs holds the pure rules of harnessd's runs (FlowDeck L3, L4,
// L6, L7): budget draws, what a span counts, stage transitions, when a run
// ends on its own, the bounded ring of in-memory spans, the retry bound
// (retry.go), and tiers, escalations and children (coord.go). The run
// actors apply these rules; nothing here does I/O or knows about actors.
package runs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/harnessd/harnessd/messages"
)

// Limits of a run's memory.
const (
	// RingSize is how many spans a run keeps in memory; older read spans
	// fall out (persisted spans stay in the store).
	RingSize = 512
	// MaxObservations is how many observations a run's state keeps.
	MaxObservations = 200
	// MaxText bounds an observation's text and a stage's name and reason.
	MaxText = 4096
	// MaxStage bounds a stage name.
	MaxStage = 128
	// ResumeWindow is how long a run whose client went away stays
	// resumable before it ends as abandoned.
	ResumeWindow = 24 * time.Hour
	// Retention is how long an ended run is kept in the store.
	Retention = 30 * 24 * time.Hour
)

// NewID returns a fresh id with prefix (run_, sp_).
func NewID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Draw is what a call takes from a run's budget before it runs.
type Draw struct {
	Commands, Mutations, Jobs, Approvals int64
}

// Zero reports whether d draws nothing.
func (d Draw) Zero() bool { return d == Draw{} }

// Exceeded reports which limit a draw would cross.
type Exceeded struct {
	RunID    string
	Resource string // commands, mutations, jobs, approvals, output_bytes, wall_s, cpu_seconds
	Limit    int64
	Used     int64
	Want     int64
}

func (e *Exceeded) Error() string {
	if e.Resource == "cpu_seconds" {
		return fmt.Sprintf("run %s used its cpu_seconds budget: its jobs and checks used %d CPU seconds of %d, so it may start no more commands or jobs", e.RunID, e.Used, e.Limit)
	}
	if e.Resource == "output_bytes" || e.Resource == "wall_s" {
		return fmt.Sprintf("run %s used its %s budget (%d of %d)", e.RunID, e.Resource, e.Used, e.Limit)
	}
	return fmt.Sprintf("run %s would exceed its %s budget: %d used + %d > %d", e.RunID, e.Resource, e.Used, e.Want, e.Limit)
}

// Used is a run's use of its budget: its own counters plus what its
// children drew on it.
func Used(st messages.RunState) messages.RunCounters {
	c, d := st.Counters, st.Drawn
	c.Commands += d.Commands
	c.Mutations += d.Mutations
	c.Jobs += d.Jobs
	c.Approvals += d.Approvals
	c.OutputBytes += d.OutputBytes
	c.CPUMs += d.CPUMs
	return c
}

// Check answers whether st's budget allows d; a run whose output budget is
// used up refuses every call, including draws of nothing, and one whose
// CPU time reached its cpu_seconds refuses every call that would start
// processes (commands, jobs).
func Check(st messages.RunState, d Draw) *Exceeded {
	b, u := st.Budget, Used(st)
	ex := func(res string, limit, used, want int64) *Exceeded {
		return &Exceeded{RunID: st.RunID, Resource: res, Limit: limit, Used: used, Want: want}
	}
	switch {
	case b.Commands > 0 && d.Commands > 0 && u.Commands+d.Commands > b.Commands:
		return ex("commands", b.Commands, u.Commands, d.Commands)
	case b.Mutations > 0 && d.Mutations > 0 && u.Mutations+d.Mutations > b.Mutations:
		return ex("mutations", b.Mutations, u.Mutations, d.Mutations)
	case b.Jobs > 0 && d.Jobs > 0 && u.Jobs+d.Jobs > b.Jobs:
		return ex("jobs", b.Jobs, u.Jobs, d.Jobs)
	case b.Approvals > 0 && d.Approvals > 0 && u.Approvals+d.Approvals > b.Approvals:
		return ex("approvals", b.Approvals, u.Approvals, d.Approvals)
	case CPUSpent(st) && (d.Commands > 0 || d.Jobs > 0):
		return ex("cpu_seconds", b.CPUSeconds, u.CPUMs/1000, 0)
	case OutputSpent(st):
		return ex("output_bytes", b.OutputBytes, u.OutputBytes, 0)
	}
	return nil
}

// OutputSpent reports whether the run has received all the output its
// budget allows: the call that crossed the limit completed, later ones are
// refused.
func OutputSpent(st messages.RunState) bool {
	return st.Budget.OutputBytes > 0 && Used(st).OutputBytes >= st.Budget.OutputBytes
}

// CPUSpent reports whether the CPU time of the run's processes (its own
// and its children's) reached its cpu_seconds budget. CPU is known only
// once it was used, so the call that crossed the limit ran; later ones
// that would start processes are refused.
func CPUSpent(st messages.RunState) bool {
	return st.Budget.CPUSeconds > 0 && Used(st).CPUMs >= st.Budget.CPUSeconds*1000
}

// Apply adds a granted draw to c (negative to refund).
func Apply(c *messages.RunCounters, d Draw, sign int64) {
	c.Commands += sign * d.Commands
	c.Mutations += sign * d.Mutations
	c.Jobs += sign * d.Jobs
	c.Approvals += sign * d.Approvals
}

// Count adds what a finished span counts to c. Draws were counted when
// they were granted; a span adds calls, reads, checks, failures, output
// and the CPU time of what the call itself ran.
func Count(c *messages.RunCounters, s messages.RunSpan) {
	c.Calls++
	if s.ReadOnly {
		c.Reads++
	}
	if s.CheckID != "" {
		c.Checks++
	}
	if s.Outcome != "ok" {
		c.Failures++
	}
	c.OutputBytes += s.OutputBytes
	c.CPUMs += max(s.CPUMs, 0)
}

// Persisted reports whether a span is stored: everything but a read-only
// Fast Path call that asked for no approval.
func Persisted(s messages.RunSpan) bool {
	if s.ApprovalID != "" || s.JobID != "" || s.CheckID != "" || s.ReceiptID != "" {
		return true
	}
	switch s.Decision {
	case "ask", "escalate":
		return true
	}
	switch s.ErrorCode {
	case "APPROVAL_REQUIRED", "LOOP_DETECTED", "BUDGET_EXCEEDED", "RETRY_LIMIT":
		return true
	}
	return !s.ReadOnly
}

// Notes returns harnessd's own observations about a span: failures, loop
// hits, escalations and approval requests.
func Notes(s messages.RunSpan) []messages.RunObservation {
	note := func(kind, text string) messages.RunObservation {
		return messages.RunObservation{At: s.Start.Add(time.Duration(s.DurationMs * float64(time.Millisecond))), Source: "harnessd", Kind: kind, Text: text, SpanID: s.SpanID}
	}
	var out []messages.RunObservation
	switch {
	case s.ErrorCode == "LOOP_DETECTED":
		out = append(out, note("loop", s.Op+" repeated an identical call and result: LOOP_DETECTED"))
	case s.ErrorCode == "APPROVAL_REQUIRED":
		out = append(out, note("approval", s.Op+" waits for a person's approval "+s.ApprovalID))
	case s.Decision == "escalate":
		out = append(out, note("escalation", s.Op+" was escalated to a person"))
	case s.ErrorCode == "BUDGET_EXCEEDED":
		out = append(out, note("budget", s.Op+" was refused: the run's budget is used up"))
	case s.ErrorCode == "RETRY_LIMIT":
		out = append(out, note("retry", s.Op+" was refused: the same call failed past the run's retry bound (RETRY_LIMIT)"))
	case s.Outcome != "ok" && s.ErrorCode != "":
		out = append(out, note("failure", s.Op+" failed: "+s.ErrorCode))
	}
	return out
}

// Observe appends o to st, keeping the newest MaxObservations.
func Observe(st *messages.RunState, o messages.RunObservation) {
	st.Observations = append(st.Observations, o)
	if n := len(st.Observations); n > MaxObservations {
		st.Observations = slices.Delete(st.Observations, 0, n-MaxObservations)
	}
	st.Counters.Observations++
}

// ValidText checks an agent's text: non-empty after trimming and bounded.
func ValidText(field, s string, max int) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("%s is required", field)
	}
	if len(s) > max {
		return fmt.Errorf("%s is %d bytes; the limit is %d", field, len(s), max)
	}
	return nil
}

// Stage applies run_stage to st: started makes stage current (clearing a
// block), completed records it (once) and clears current if it was the
// one, blocked marks the run blocked with reason.
func Stage(st *messages.RunState, stage, status, reason string, now time.Time) error {
	if st.Status != messages.RunActive {
		return fmt.Errorf("run %s is %s", st.RunID, st.Status)
	}
	if err := ValidText("stage", stage, MaxStage); err != nil {
		return err
	}
	switch status {
	case messages.StageStarted:
		st.CurrentStage, st.Blocked, st.BlockedReason = stage, false, ""
	case messages.StageCompleted:
		if !slices.Contains(st.CompletedStages, stage) {
			st.CompletedStages = append(st.CompletedStages, stage)
		}
		if st.CurrentStage == stage {
			st.CurrentStage = ""
		}
		st.Blocked, st.BlockedReason = false, ""
	case messages.StageBlocked:
		if err := ValidText("reason", reason, MaxText); err != nil {
			return fmt.Errorf("a blocked stage needs a reason: %w", err)
		}
		st.CurrentStage, st.Blocked, st.BlockedReason = stage, true, reason
	default:
		return fmt.Errorf("status %q is not one of started, completed, blocked", status)
	}
	st.UpdatedAt = now
	return nil
}

// End ends st with status (ended, deadline, abandoned) and reason.
func End(st *messages.RunState, status, reason string, now time.Time) {
	st.Status, st.EndReason, st.EndedAt, st.UpdatedAt = status, reason, now, now
}

// Due reports whether an active run ends on its own at now: past its
// deadline, or detached from its client for longer than window.
func Due(st messages.RunState, now time.Time, window time.Duration) (status, reason string, due bool) {
	if st.Status != messages.RunActive {
		return "", "", false
	}
	if !st.Deadline.IsZero() && !now.Before(st.Deadline) {
		return messages.RunDeadline, fmt.Sprintf("its wall-clock budget of %ds ran out", st.Budget.WallS), true
	}
	if !st.DetachedAt.IsZero() && now.Sub(st.DetachedAt) >= window {
		return messages.RunAbandoned, fmt.Sprintf("its client went away and did not resume it within %s", window), true
	}
	return "", "", false
}

// Ring is a bounded ring of spans: the newest RingSize stay.
type Ring struct {
	buf     []messages.RunSpan
	next    int
	full    bool
	dropped int64
}

// Push adds s, dropping the oldest span when the ring is full.
func (r *Ring) Push(s messages.RunSpan) {
	if r.buf == nil {
		r.buf = make([]messages.RunSpan, 0, 16)
	}
	if !r.full && len(r.buf) < RingSize {
		r.buf = append(r.buf, s)
		if len(r.buf) == RingSize {
			r.full = true
		}
		return
	}
	r.buf[r.next] = s
	r.next = (r.next + 1) % RingSize
	r.dropped++
}

// Spans returns the spans in the ring, oldest first.
func (r *Ring) Spans() []messages.RunSpan {
	if !r.full {
		return slices.Clone(r.buf)
	}
	out := make([]messages.RunSpan, 0, RingSize)
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// Each calls f with a pointer to every span in the ring, to update it in
// place.
func (r *Ring) Each(f func(*messages.RunSpan)) {
	for i := range r.buf {
		f(&r.buf[i])
	}
}

// Dropped counts the spans that fell out.
func (r *Ring) Dropped() int64 { return r.dropped }

// Merge returns the ring's spans and the stored ones in start order,
// without duplicates (a stored span is also in the ring while it is new).
func Merge(ring, stored []messages.RunSpan) []messages.RunSpan {
	seen := make(map[string]bool, len(ring))
	out := make([]messages.RunSpan, 0, len(ring)+len(stored))
	for _, s := range ring {
		seen[s.SpanID] = true
		out = append(out, s)
	}
	for _, s := range stored {
		if !seen[s.SpanID] {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b messages.RunSpan) int { return a.Start.Compare(b.Start) })
	return out
}
