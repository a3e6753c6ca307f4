package messages

import (
	"context"
	"time"
)

// LaneRun queues one read-only step on a lane. The lane runs its steps one
// at a time, each in its own goroutine, and answers the sender with
// LaneDone once the step finished. A step whose Ctx is already done when
// its turn comes is answered Skipped without running.
type LaneRun struct {
	// Ctx is the context the step runs under (the caller's deadline and
	// fail-fast cancellation); nil means context.Background().
	Ctx context.Context
	// Index is the step's position in the caller's request, echoed back.
	Index int
	// Kind names the step (read_file, search, ...) for logs and status.
	Kind string
	// Run executes the step. It must honour ctx.
	Run func(ctx context.Context) (any, error)
}

// LaneDone answers LaneRun.
type LaneDone struct {
	Index      int
	Lane       string
	Result     any
	Err        error
	Skipped    bool // the step never ran: its context was done when its turn came
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
