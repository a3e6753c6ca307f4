package messages

import "encoding/json"

// JobWrite is the write a write job carries (Job.Write): a Fast Path write
// (apply_patch, git_stage, git_commit) that found its files busy and was
// queued on the Durable Path (on_busy: "durable"). The jobs actor hands
// it to its JobWriter at once (it takes no run slot of the process jobs),
// which runs it through the operation's pipeline: it waits for its lease
// (up to the job's TimeoutS), then writes as the original call would.
type JobWrite struct {
	// Operation names the write; Args are its arguments as the caller
	// sent them (field aliases rewritten, run_id left out: Caller has it).
	Operation string          `json:"operation"`
	Args      json.RawMessage `json:"args"`
	// InputHash is the request's hash in the ledger: a retry with the
	// same request_id and other arguments is REQUEST_CONFLICT.
	InputHash string `json:"input_hash"`
	// Caller is who queued it: the write runs as that caller (its run,
	// session, client and role), audited as it.
	Caller Caller `json:"caller"`
	// Decision is the gate's decision of the call that queued it
	// (mediate.Decision as JSON): the write is not gated again, and the
	// stages it requires verified are re-verified when it writes.
	Decision json.RawMessage `json:"decision,omitempty"`
	// Paths are the paths the gate decided (the write's when it was
	// queued): the write may touch no other.
	Paths []string `json:"paths,omitempty"`
}
