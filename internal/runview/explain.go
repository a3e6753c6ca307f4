package runview

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/internal/recovery"
	"github.com/harnessd/harnessd/messages"
)

// Explain writes, in plain sentences, where run st stands for a person:
// its status and stage, why it is blocked (its own block and its
// children's), what failed last, the assessment of that failure and the
// recovery plan (rep, the answer of run_assess; nil when unknown), the
// budget left and its escalations. o.Now ends the wall-clock budget; zero
// leaves the time left out.
func Explain(w io.Writer, st messages.RunState, rep *recovery.Report, o Options) error {
	var b strings.Builder
	status(&b, st)
	blockers(&b, st, rep)
	b.WriteByte('\n')
	failure(&b, rep)
	b.WriteByte('\n')
	budgetLeft(&b, st, o.Now)
	escalations(&b, st)
	_, err := io.WriteString(w, b.String())
	return err
}

// status is the opening sentence: the run, its goal, status, stage, tier.
func status(b *strings.Builder, st messages.RunState) {
	b.WriteString("Run " + clean(st.RunID))
	if g := clean(st.Goal); g != "" {
		b.WriteString(" (" + strconv.Quote(clip(g, 80)) + ")")
	}
	if st.Status == messages.RunActive {
		b.WriteString(" is active")
		if st.CurrentStage != "" {
			b.WriteString(", in stage " + strconv.Quote(clean(st.CurrentStage)))
		}
	} else {
		b.WriteString(" has ended")
		if st.Status != messages.RunEnded {
			b.WriteString(" (" + clean(st.Status) + ")")
		}
		if r := clean(st.EndReason); r != "" {
			b.WriteString(": " + r)
		}
	}
	b.WriteString(".")
	if n := len(st.CompletedStages); n > 0 {
		b.WriteString(" Completed: " + clean(strings.Join(st.CompletedStages, ", ")) + ".")
	}
	if st.Tier != "" {
		b.WriteString(" Its tier is " + clean(st.Tier))
		if st.WorkflowClass != "" && st.WorkflowClass != st.Tier {
			b.WriteString(" (workflow " + clean(st.WorkflowClass) + ")")
		}
		b.WriteString(".")
	} else if st.WorkflowClass != "" {
		b.WriteString(" Its workflow is " + clean(st.WorkflowClass) + ".")
	}
	b.WriteByte('\n')
}

// blockers says why the run is blocked: its own block, then each child.
func blockers(b *strings.Builder, st messages.RunState, rep *recovery.Report) {
	switch {
	case st.Blocked && clean(st.BlockedReason) != "":
		b.WriteString("It is blocked: " + sentence(clean(st.BlockedReason)) + "\n")
	case st.Blocked:
		b.WriteString("It is blocked; no reason was given.\n")
	case st.Status == messages.RunActive:
		b.WriteString("It is not blocked.\n")
	}
	if rep == nil {
		return
	}
	for _, c := range rep.Children {
		b.WriteString("Its child run " + clean(c.RunID))
		if g := clean(c.Goal); g != "" {
			b.WriteString(" (" + strconv.Quote(clip(g, 60)) + ")")
		}
		switch {
		case c.Status != messages.RunActive:
			b.WriteString(" has ended")
			if c.Status != messages.RunEnded {
				b.WriteString(" (" + clean(c.Status) + ")")
			}
			if r := clean(c.EndReason); r != "" {
				b.WriteString(": " + r)
			}
		case c.Blocked:
			b.WriteString(" is blocked")
			if c.CurrentStage != "" {
				b.WriteString(" in stage " + strconv.Quote(clean(c.CurrentStage)))
			}
			if r := clean(c.BlockedReason); r != "" {
				b.WriteString(": " + r)
			}
		default:
			b.WriteString(" is active")
			if c.CurrentStage != "" {
				b.WriteString(" in stage " + strconv.Quote(clean(c.CurrentStage)))
			}
		}
		b.WriteString(".")
		if f := c.LastFailure; f != nil {
			b.WriteString(" Its last failure: " + clean(f.Op) + " failed with " + clean(f.ErrorCode) + " at " + f.At.Local().Format(clock) + ".")
		}
		b.WriteByte('\n')
	}
}

// typeText says what a failure type means.
var typeText = map[recovery.Type]string{
	recovery.Loop:      "the call repeats itself",
	recovery.Deadlock:  "the call waits for work that waits for it",
	recovery.Transient: "the failure is likely to pass",
	recovery.Contract:  "the input, the route or the policy refuses the call",
	recovery.Budget:    "the run's budget is used up",
	recovery.Unknown:   "harnessd cannot tell why the call failed",
}

// failure says what failed last, what kind of failure it is and the plan.
func failure(b *strings.Builder, rep *recovery.Report) {
	if rep == nil || rep.Span == nil || rep.Assessment == nil {
		b.WriteString("Nothing has failed.\n")
		return
	}
	s, a := rep.Span, rep.Assessment
	code := clean(s.ErrorCode)
	if code == "" {
		code = "an error"
	}
	fmt.Fprintf(b, "What failed last: %s failed with %s at %s (span %s)", dash(clean(s.Op)), code, s.Start.Local().Format(clock), clean(s.SpanID))
	if s.Stage != "" {
		b.WriteString(", in stage " + strconv.Quote(clean(s.Stage)))
	}
	b.WriteString(".")
	if a.Attempts > 1 {
		where := "outside any stage"
		if s.Stage != "" {
			where = "in that stage"
		}
		fmt.Fprintf(b, " It is the %s failure of the same call (same operation and input) %s.", ordinal(a.Attempts), where)
	}
	b.WriteByte('\n')
	if len(rep.Attempts) > 1 {
		parts := make([]string, 0, len(rep.Attempts))
		for _, at := range rep.Attempts {
			parts = append(parts, clean(at.SpanID)+" "+clean(at.ErrorCode)+" at "+at.At.Local().Format(clock))
		}
		b.WriteString("Its attempts: " + strings.Join(parts, ", ") + ".\n")
	}
	what := typeText[a.Type]
	if what == "" {
		what = "harnessd cannot tell why the call failed"
	}
	again := "the same call will fail again as it is"
	if a.Retryable {
		again = "the same call may succeed as it is"
	}
	fmt.Fprintf(b, "Assessment: %s: %s; %s.\n", clean(string(a.Type)), what, again)
	for _, e := range a.Evidence {
		b.WriteString("  - " + clean(e) + "\n")
	}
	if p := rep.Plan; p != nil {
		b.WriteString("Plan: " + action(*p))
		if r := clean(p.Reason); r != "" {
			b.WriteString(": " + sentence(r))
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(b, "Retries: %d of %d left for this call.\n", rep.RetriesLeft, rep.MaxRetries)
}

// action is a plan's action in words.
func action(p recovery.RecoveryPlan) string {
	var s string
	switch p.Action {
	case recovery.Retry:
		s = "retry"
	case recovery.RetryAfter:
		s = "retry after " + human(time.Duration(p.AfterMs)*time.Millisecond)
	case recovery.EscalateDurable:
		s = "move the work to the Durable Path"
	case recovery.AskHuman:
		s = "ask a person"
	case recovery.Abort:
		s = "stop retrying"
	default:
		s = clean(string(p.Action))
	}
	switch {
	case p.Action != recovery.Retry && p.Action != recovery.RetryAfter:
	case p.MaxAttempts == 1:
		s += ", at most 1 more attempt"
	default:
		s += ", at most " + strconv.Itoa(p.MaxAttempts) + " more attempts"
	}
	return s
}

// budgetLeft says what is left of each limit of the run.
func budgetLeft(b *strings.Builder, st messages.RunState, now time.Time) {
	bu := st.Budget
	if bu == (messages.RunBudget{}) {
		b.WriteString("Budget: no limits.\n")
		return
	}
	c, d := st.Counters, st.Drawn
	var parts []string
	add := func(name string, limit, used int64, f func(int64) string) {
		if limit == 0 {
			return
		}
		if left := limit - used; left > 0 {
			parts = append(parts, f(left)+" of "+f(limit)+" "+name)
		} else {
			parts = append(parts, "no "+name+" (all "+f(limit)+" used)")
		}
	}
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	// Drawn holds the children's draws on this run too.
	add("commands", bu.Commands, c.Commands+d.Commands, num)
	add("mutations", bu.Mutations, c.Mutations+d.Mutations, num)
	add("jobs", bu.Jobs, c.Jobs+d.Jobs, num)
	add("approvals", bu.Approvals, c.Approvals+d.Approvals, num)
	add("output", bu.OutputBytes, c.OutputBytes+d.OutputBytes, bytesOf)
	if bu.WallS > 0 {
		s := "a wall-clock budget of " + human(time.Duration(bu.WallS)*time.Second)
		if !st.Deadline.IsZero() {
			switch {
			case st.Status == messages.RunActive && !now.IsZero() && now.Before(st.Deadline):
				s = human(st.Deadline.Sub(now)) + " of " + human(time.Duration(bu.WallS)*time.Second) + " wall-clock time (deadline " + st.Deadline.Local().Format(second) + ")"
			default:
				s += " (deadline " + st.Deadline.Local().Format(second) + ")"
			}
		}
		parts = append(parts, s)
	}
	b.WriteString("Budget left: " + strings.Join(parts, ", ") + ".\n")
}

// escalations lists the run's tier changes.
func escalations(b *strings.Builder, st messages.RunState) {
	if len(st.Escalations) == 0 {
		b.WriteString("Escalations: none.\n")
		return
	}
	for _, e := range st.Escalations {
		from := clean(e.From)
		if from == "" {
			from = "undeclared"
		}
		fmt.Fprintf(b, "Escalated at %s from %s to %s: %s\n", e.At.Local().Format(clock), from, clean(e.To), sentence(clean(e.Reason)))
	}
}

// sentence ends s with a full stop unless it ends with punctuation.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") {
		return s
	}
	return s + "."
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
