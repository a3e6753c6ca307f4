package runs

import (
	"fmt"
	"slices"
	"time"

	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/messages"
)

// Coordination (FlowDeck L7): a run's tier, chosen from its declared
// shape by the route policy's tier rules, changed only by run_escalate;
// and what a parent run knows of its children.

// Tiers lists the tiers in increasing order.
var Tiers = []string{messages.TierDirect, messages.TierBoundedWork, messages.TierCampaign}

// TierRank orders tiers: 0 for "" (undeclared) and anything unknown, then
// 1, 2, 3 for direct, bounded_work, campaign.
func TierRank(t string) int {
	return slices.Index(Tiers, t) + 1
}

// TierAt is the tier of a rank (TierRank's inverse); "" for 0.
func TierAt(rank int) string {
	if rank < 1 || rank > len(Tiers) {
		return ""
	}
	return Tiers[rank-1]
}

// IsTier reports whether s names a tier.
func IsTier(s string) bool { return TierRank(s) > 0 }

// shapeRequests are what each declared part of a shape routes as: the
// route policy decides their tiers (a write routes as apply_patch, a
// durable job as job_start, deliverables as the route's campaign rule).
func shapeRequests(sh messages.RunShape) []route.Request {
	reqs := []route.Request{{Tool: "run_start", Kind: route.RunState, Deliverables: sh.Deliverables}}
	if sh.Writes {
		reqs = append(reqs, route.Request{Tool: "apply_patch", Kind: route.Mutation})
	}
	if sh.Durable {
		reqs = append(reqs, route.Request{Tool: "job_start", Kind: route.Job, Argv: []string{"true"}})
	}
	return reqs
}

// ShapeTier is the tier the route policy gives a run of shape sh: the
// highest tier of what it declares (an empty shape is direct).
func ShapeTier(sh messages.RunShape) string {
	rank := 1
	for _, r := range shapeRequests(sh) {
		rank = max(rank, TierRank(string(route.Decide(r).Tier)))
	}
	return TierAt(rank)
}

// ChooseTier is the tier of a new run: chosen from its shape when it
// declares one, raised to the workflow class when that names a tier. A
// class that names a lower tier than the shape needs is an error (the
// tier never drops silently); "" means the run declared neither.
func ChooseTier(class string, shape *messages.RunShape) (string, error) {
	tier := ""
	if shape != nil {
		tier = ShapeTier(*shape)
	}
	if IsTier(class) {
		if TierRank(class) < TierRank(tier) {
			return "", fmt.Errorf("workflow_class %s is below the tier %s the declared shape needs (deliverables=%d writes=%v durable=%v)",
				class, tier, shape.Deliverables, shape.Writes, shape.Durable)
		}
		tier = class
	}
	return tier, nil
}

// Escalate applies run_escalate to st: to must be a tier above st's
// (any tier when st declared none). A workflow class that named the old
// tier names the new one.
func Escalate(st *messages.RunState, to, reason string, now time.Time) (messages.RunEscalation, error) {
	if st.Status != messages.RunActive {
		return messages.RunEscalation{}, fmt.Errorf("run %s is %s", st.RunID, st.Status)
	}
	if !IsTier(to) {
		return messages.RunEscalation{}, fmt.Errorf("to %q is not one of direct, bounded_work, campaign", to)
	}
	if err := ValidText("reason", reason, MaxText); err != nil {
		return messages.RunEscalation{}, err
	}
	if TierRank(to) <= TierRank(st.Tier) {
		return messages.RunEscalation{}, fmt.Errorf("run %s is %s already; run_escalate only raises a tier (direct < bounded_work < campaign)", st.RunID, st.Tier)
	}
	e := messages.RunEscalation{At: now, From: st.Tier, To: to, Reason: reason}
	if st.WorkflowClass == st.Tier && IsTier(st.WorkflowClass) {
		st.WorkflowClass = to
	}
	st.Tier = to
	st.Escalations = append(slices.Clone(st.Escalations), e)
	st.UpdatedAt = now
	return e, nil
}

// EscalationNeeded returns the tier a call needs when it is above run's
// declared tier, and "" when the run declared none or the call fits.
func EscalationNeeded(runTier, callTier string) string {
	if runTier == "" || TierRank(callTier) <= TierRank(runTier) {
		return ""
	}
	return callTier
}

// Suggestion is the suggested_escalation detail of an error: the
// run_escalate call that would make the run's tier fit the call.
func Suggestion(runID, from, to, op string) map[string]any {
	return map[string]any{
		"operation": "run_escalate",
		"run_id":    runID,
		"from":      from,
		"to":        to,
		"reason":    fmt.Sprintf("%s routes as %s work; the run is declared %s: run_escalate {run_id, to: %s, reason} says so (the tier never changes on its own)", op, to, from, to),
	}
}

// NoteFailure records s as st's latest failure when it is a failed call.
func NoteFailure(st *messages.RunState, s messages.RunSpan) bool {
	if s.ParentID != "" || s.Outcome == "ok" || s.Kind == messages.SpanRun {
		return false
	}
	st.LastFailure = &messages.RunFailure{SpanID: s.SpanID, Op: s.Op, ErrorCode: s.ErrorCode, Stage: s.Stage, At: s.Start}
	return true
}

// ChildNote is the observation a parent run gets of a child's failed
// call; ok is false for a span that is not one.
func ChildNote(child string, s messages.RunSpan) (messages.RunObservation, bool) {
	if s.ParentID != "" || s.Outcome == "ok" || s.Kind == messages.SpanRun {
		return messages.RunObservation{}, false
	}
	code := s.ErrorCode
	if code == "" {
		code = s.Outcome
	}
	return messages.RunObservation{At: s.Start.Add(time.Duration(s.DurationMs * float64(time.Millisecond))), Source: "harnessd", Kind: "child_failure",
		Text: "child run " + child + ": " + s.Op + " failed: " + code, SpanID: s.SpanID}, true
}

// ChildEndNote is the observation a parent gets when a child ends on its
// own (deadline, abandoned); ok is false for other ends.
func ChildEndNote(child, status, reason string, at time.Time) (messages.RunObservation, bool) {
	if status != messages.RunDeadline && status != messages.RunAbandoned {
		return messages.RunObservation{}, false
	}
	return messages.RunObservation{At: at, Source: "harnessd", Kind: "child_" + status,
		Text: "child run " + child + " ended (" + status + "): " + reason}, true
}

// AddChild records id among st's children (once).
func AddChild(st *messages.RunState, id string) bool {
	if slices.Contains(st.Children, id) {
		return false
	}
	st.Children = append(slices.Clone(st.Children), id)
	return true
}

// ChildOf is the summary of a child run its parent's status shows.
func ChildOf(st messages.RunState) messages.RunChild {
	return messages.RunChild{
		RunID: st.RunID, Goal: st.Goal, Status: st.Status, EndReason: st.EndReason, Tier: st.Tier,
		CompletedStages: append([]string{}, st.CompletedStages...), CurrentStage: st.CurrentStage,
		Blocked: st.Blocked, BlockedReason: st.BlockedReason, Failures: st.Counters.Failures, LastFailure: st.LastFailure,
	}
}
