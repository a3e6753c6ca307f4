package messages

// RunTokenBudget is the token budget snapshot of a run's last
// context_assemble (FlowDeck L1): what the assembled context cost, so an
// orchestrator can route on it (run_status reports it).
type RunTokenBudget struct {
	Budget     int `json:"budget"`
	Used       int `json:"used"`
	Remaining  int `json:"remaining"`
	Parts      int `json:"parts"`
	Pruned     int `json:"pruned"`
	Summarised int `json:"summarised"`
}

// RunNoteContext records the token budget snapshot of a run's last
// context_assemble. Sent without waiting; the run keeps the latest.
type RunNoteContext struct {
	RunID  string
	Budget RunTokenBudget
}
