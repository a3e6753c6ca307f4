package harness

import (
	"time"
)

// Meta is carried by every operation result.
type Meta struct {
	Route   string  `json:"route"`
	Latency Latency `json:"latency"`
}

// Latency reports where an operation's time went. The segments are
// mutually exclusive and sum to TotalMs; they are present only when the
// caller asked for include_latency_breakdown.
type Latency struct {
	TotalMs     float64  `json:"total_ms"`
	RoutingMs   *float64 `json:"routing_ms,omitempty"`
	PolicyMs    *float64 `json:"policy_ms,omitempty"`
	SnapshotMs  *float64 `json:"snapshot_ms,omitempty"`
	ExecutionMs *float64 `json:"execution_ms,omitempty"`
	ReceiptMs   *float64 `json:"receipt_ms,omitempty"`
}

// segment names one part of an operation's latency.
type segment int

const (
	segRouting segment = iota
	segPolicy
	segSnapshot
	segExecution
	segReceipt
	numSegments
)

// trace measures an operation segment by segment: each mark charges the
// time since the previous mark to one segment, so segments never overlap
// and always sum to the total.
type trace struct {
	start time.Time
	last  time.Time
	segs  [numSegments]time.Duration
}

func startTrace() trace {
	now := time.Now()
	return trace{start: now, last: now}
}

func (t *trace) mark(s segment) {
	now := time.Now()
	t.segs[s] += now.Sub(t.last)
	t.last = now
}

// finish charges the remaining time to s and returns the Latency.
func (t *trace) finish(s segment, breakdown bool) Latency {
	t.mark(s)
	var total time.Duration
	for _, d := range t.segs {
		total += d
	}
	l := Latency{TotalMs: ms(total)}
	if breakdown {
		seg := func(i segment) *float64 { v := ms(t.segs[i]); return &v }
		l.RoutingMs, l.PolicyMs, l.SnapshotMs = seg(segRouting), seg(segPolicy), seg(segSnapshot)
		l.ExecutionMs, l.ReceiptMs = seg(segExecution), seg(segReceipt)
	}
	return l
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
