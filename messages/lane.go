package messages

import (
	"encoding/json"
	"time"
)

// LaneRun queues one read-only step on a lane. The step is data: the
// operation Kind and its JSON Args in repository RepoID, step Index of the
// read_lanes call Group, with what the gate answered for it. The lane runs
// its steps one at a time, each in a goroutine of its own through the
// lane's runner (the pipeline: it prepares the step again from Kind and
// Args and runs it with Gate), and answers the sender with LaneDone once
// the step finished. A step whose Deadline passed or whose Group was
// cancelled before its turn is answered Skipped without running.
type LaneRun struct {
	Group    string
	Index    int
	Kind     string
	RepoID   string
	Args     json.RawMessage
	Deadline time.Time // zero = none
	// Caller made the read_lanes call; ParentSpan is the call's span in
	// the caller's run ("" = outside any run), the step's span's parent.
	Caller     Caller
	ParentSpan string
	// Gate is the gate's answer for the step (its decision and input
	// hash, in the pipeline's compact form); GateDigest the digest of the
	// input it decided on. The runner runs the step only when its new plan
	// has that digest.
	Gate       json.RawMessage
	GateDigest string
	// Seal is the pipeline's MAC of every field above: only a step its
	// gate passed, unchanged, runs.
	Seal []byte
}

// LaneCancel cancels every queued and running step of Group (fail_fast, or
// the caller went away). Steps not yet started are answered Skipped.
type LaneCancel struct {
	Group  string
	Reason string
}

// LaneDone answers LaneRun. Result is the step's JSON result; Failure is
// set when the step failed or was skipped.
type LaneDone struct {
	Index      int
	Lane       string
	Result     json.RawMessage
	Failure    *Failed
	Skipped    bool // the step never ran: cancelled or out of time before its turn
	Queued     time.Duration
	StartedAt  time.Time
	FinishedAt time.Time
}

// LaneStatus asks a lane for its counters.
type LaneStatus struct{}

// LaneStatusReply answers LaneStatus.
type LaneStatusReply struct {
	Lane      string `json:"lane"`
	Running   string `json:"running,omitempty"` // kind of the running step, "" when idle
	Queued    int    `json:"queued"`
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	Skipped   uint64 `json:"skipped"`
}
