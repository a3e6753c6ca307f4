package op

import "time"

// Meta is carried by every operation result.
type Meta struct {
	Route   string  `json:"route"`
	Latency Latency `json:"latency"`
}

// SetMeta sets the result's Meta; the pipeline calls it through the result
// types that embed Meta.
func (m *Meta) SetMeta(v Meta) { *m = v }

// metaSetter is a result that embeds Meta.
type metaSetter interface{ SetMeta(Meta) }

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
	// SandboxMs is the cost of confining the command: its policy, private
	// tmp and the confinement of the forking thread (or the launcher).
	SandboxMs *float64 `json:"sandbox_ms,omitempty"`
}

// Segment names one part of an operation's latency.
type Segment int

// The segments, in pipeline order.
const (
	SegRouting Segment = iota
	SegPolicy
	SegSnapshot
	SegExecution
	SegReceipt
	SegSandbox
	numSegments
)

func (s Segment) String() string {
	switch s {
	case SegRouting:
		return "routing"
	case SegPolicy:
		return "policy"
	case SegSnapshot:
		return "snapshot"
	case SegExecution:
		return "execution"
	case SegReceipt:
		return "receipt"
	case SegSandbox:
		return "sandbox"
	default:
		return "unknown"
	}
}

// Trace measures an operation segment by segment: each Mark charges the
// time since the previous mark to one segment, so segments never overlap
// and always sum to the total.
type Trace struct {
	start time.Time
	last  time.Time
	segs  [numSegments]time.Duration
}

// StartTrace starts a trace now.
func StartTrace() Trace {
	now := time.Now()
	return Trace{start: now, last: now}
}

// Mark charges the time since the previous mark to s.
func (t *Trace) Mark(s Segment) {
	now := time.Now()
	t.segs[s] += now.Sub(t.last)
	t.last = now
}

// Move charges up to d of segment from to segment to (time measured inside
// another segment, such as the sandbox's share of a command's start).
func (t *Trace) Move(from, to Segment, d time.Duration) {
	d = min(d, t.segs[from])
	t.segs[from] -= d
	t.segs[to] += d
}

// Finish charges the remaining time to s and returns the Latency, with the
// segments when breakdown is true.
func (t *Trace) Finish(s Segment, breakdown bool) Latency {
	t.Mark(s)
	var total time.Duration
	for _, d := range t.segs {
		total += d
	}
	l := Latency{TotalMs: Ms(total)}
	if breakdown {
		seg := func(i Segment) *float64 { v := Ms(t.segs[i]); return &v }
		l.RoutingMs, l.PolicyMs, l.SnapshotMs = seg(SegRouting), seg(SegPolicy), seg(SegSnapshot)
		l.ExecutionMs, l.ReceiptMs, l.SandboxMs = seg(SegExecution), seg(SegReceipt), seg(SegSandbox)
	}
	return l
}

// Ms returns d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
