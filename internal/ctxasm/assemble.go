package ctxasm

import "slices"

// Result is the assembled context: the included parts by kind, in
// priority order, and what the budget did.
type Result struct {
	State        []Part      `json:"state"`
	Rules        []Part      `json:"relevant_rules"`
	Docs         []Part      `json:"relevant_docs"`
	Events       []Part      `json:"recent_events"`
	Observations []Part      `json:"observations"`
	Budget       TokenBudget `json:"token_budget"`
	Pruned       []Pruned    `json:"pruned"`
	Summarised   []Summary   `json:"summarised"`
	Languages    []string    `json:"languages"`
}

// Assemble chooses the parts of co relevant to r and fits them to r's
// budget (r.Budget must be valid: see CheckBudget). It is deterministic:
// the same checkout content and request give the same Result.
func Assemble(co *Checkout, r Request) Result {
	budget := r.Budget
	if budget == 0 {
		budget = DefaultBudget
	}
	sel := choose(co, r)
	a := Allocate(sel.parts, budget)
	res := Result{Budget: a.Budget, Summarised: a.Summarised, State: []Part{}, Rules: []Part{}, Docs: []Part{},
		Events: []Part{}, Observations: []Part{}, Languages: slices.Clip(co.Languages)}
	if res.Languages == nil {
		res.Languages = []string{}
	}
	for _, p := range a.Parts {
		switch p.Kind {
		case KindRunState, KindState:
			res.State = append(res.State, p)
		case KindRule:
			res.Rules = append(res.Rules, p)
		case KindDoc:
			res.Docs = append(res.Docs, p)
		case KindEvent:
			res.Events = append(res.Events, p)
		case KindObservation:
			res.Observations = append(res.Observations, p)
		}
	}
	res.Pruned = append(sel.skipped, a.Pruned...)
	if res.Pruned == nil {
		res.Pruned = []Pruned{}
	}
	return res
}

// Trivial reports whether a request for context is trivial chat: no
// command and nothing that needs the repository (no args, no run with a
// stage or failures), or a command that touches no repository (its
// descriptor's r.Op.NoRepo).
func Trivial(command string, hasArgs bool, r Request) bool {
	if command != "" {
		return r.Op.NoRepo
	}
	if hasArgs {
		return false
	}
	if r.Run != nil && (r.Run.CurrentStage != "" || r.Run.Counters.Failures > 0 || r.Run.Blocked) {
		return false
	}
	return true
}
