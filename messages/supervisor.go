package messages

// Counts asks a supervisor how many actors of each kind run below it.
type Counts struct{}

// CountsReply answers Counts.
type CountsReply struct{ ByKind map[string]int }
