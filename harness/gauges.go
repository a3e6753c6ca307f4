package harness

import (
	"context"

	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/messages"
)

// Gauges are the figures a metrics scrape reports about the daemon's
// state (the counters of calls are kept by the servers).
type Gauges struct {
	RunsActive       int
	JobsQueued       int
	JobsRunning      int
	Leases           int
	ApprovalsPending int
	// JobsEnded are the figures of the ended jobs on record (durable
	// checks included): CPU time and I/O summed, the largest peak RSS.
	JobsEnded messages.Resources
}

// Gauges asks the actors for the figures; a part that does not answer
// counts 0.
func (h *Harness) Gauges(ctx context.Context) Gauges {
	g := Gauges{RunsActive: h.rt.Runs.Active()}
	if s, err := h.rt.Jobs.Stats(ctx); err == nil {
		g.JobsQueued, g.JobsRunning = s.Queued, s.Running
		g.JobsEnded = s.Ended
	}
	for _, e := range h.rt.Index().All() {
		if l, err := runtime.Ask[messages.LeaseList](ctx, h.rt, e.Checkout, messages.ListLeases{}); err == nil {
			g.Leases += len(l.Leases)
		}
	}
	if a, err := h.gov.Approvals(govern.ApprovalPending); err == nil {
		g.ApprovalsPending = len(a.Approvals)
	}
	return g
}
