// Package waitfor is the wait-for graph of runs: which run waits for which,
// over which resource keys, and the cycles those waits close.
//
// A node is a run. A waiting request (a Waiter: one lease request queued at a
// checkout) adds an edge from its run to the run of every holder that blocks
// it, labelled with the held keys and the waiter's request. A run is taken as
// one unit of work: while any request of it waits, what it holds is not
// released, so a cycle of runs is a deadlock. Two exceptions keep that
// model from reporting what is only a wait:
//   - a holder of the waiter's own run is no edge (a run waiting for its own
//     job's lease waits for the job to end, nothing else);
//   - a waiter or holder without a run (a call outside any run) takes part
//     in nothing.
//
// A Graph does no I/O and takes no locks: one actor owns it. The checkouts
// report each wait with its holders; Wait replaces a wait's edges, so a
// checkout re-reports a wait with its new holders after a release.
package waitfor

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Waiter is one waiting request.
type Waiter struct {
	ID        string    // unique among the live waits (e.g. "<checkout>/<seq>")
	Run       string    // the run the request belongs to; "" = none
	Owner     string    // the request's lease owner (a request id, a job id)
	Checkout  string    // the checkout it waits at
	Operation string    // what for, e.g. "apply_patch"
	Keys      []string  // the keys it asked for
	Since     time.Time // when it started waiting
}

// Holder is a run that holds keys a waiter needs.
type Holder struct {
	Run  string
	Keys []string // the held keys that block the waiter
}

// Edge is Waiter.Run waiting for Holder.Run.
type Edge struct {
	Waiter Waiter
	Holder Holder
}

// Broken is a cycle that WaitBreaking broke by removing Victim's wait.
type Broken struct {
	Cycle  []Edge
	Victim Waiter
}

// Graph is the wait-for graph. The zero value is not usable; call New.
type Graph struct {
	waits map[string]*wait            // by Waiter.ID
	byRun map[string]map[string]*wait // waiting run -> its waits by ID
}

// wait is a recorded wait: its holders have runs other than its own, one
// entry per run, sorted by run, with sorted keys.
type wait struct {
	w       Waiter
	holders []Holder
}

// New returns an empty graph.
func New() *Graph {
	return &Graph{waits: map[string]*wait{}, byRun: map[string]map[string]*wait{}}
}

// Len returns the number of waits that add at least one edge.
func (g *Graph) Len() int { return len(g.waits) }

// Wait records that w waits for holders, replacing what was recorded for
// w.ID, and returns a cycle that w's edges close: the first edge is w's, each
// edge's holder is the next edge's waiting run, and the last edge's holder is
// w's run. Holders of w's own run and holders without a run add no edge; a
// waiter without a run, or without any edge, is not recorded (an earlier wait
// of the same ID is removed).
func (g *Graph) Wait(w Waiter, holders []Holder) (cycle []Edge, ok bool) {
	g.Unwait(w.ID)
	if w.Run == "" {
		return nil, false
	}
	hs := normalize(w.Run, holders)
	if len(hs) == 0 {
		return nil, false
	}
	w.Keys = slices.Clone(w.Keys)
	rec := &wait{w: w, holders: hs}
	g.waits[w.ID] = rec
	m := g.byRun[w.Run]
	if m == nil {
		m = map[string]*wait{}
		g.byRun[w.Run] = m
	}
	m[w.ID] = rec
	return g.cycleThrough(rec)
}

// WaitBreaking records w like Wait and then, as long as w's edges close a
// cycle, removes the wait of that cycle's youngest waiter (Youngest), which
// may be w itself. It returns the cycles it broke, in order; afterwards no
// cycle runs through w's edges.
func (g *Graph) WaitBreaking(w Waiter, holders []Holder) []Broken {
	var out []Broken
	cycle, ok := g.Wait(w, holders)
	for ok {
		v := Youngest(cycle)
		out = append(out, Broken{Cycle: cycle, Victim: v})
		g.Unwait(v.ID)
		if v.ID == w.ID {
			break
		}
		cycle, ok = g.Cycle(w.ID)
	}
	return out
}

// Cycle returns a cycle through the edges of the wait id, as Wait does.
func (g *Graph) Cycle(id string) ([]Edge, bool) {
	rec := g.waits[id]
	if rec == nil {
		return nil, false
	}
	return g.cycleThrough(rec)
}

// Unwait removes the wait id (granted, cancelled, timed out or failed).
// It reports whether the wait was recorded.
func (g *Graph) Unwait(id string) bool {
	rec := g.waits[id]
	if rec == nil {
		return false
	}
	delete(g.waits, id)
	if m := g.byRun[rec.w.Run]; m != nil {
		delete(m, id)
		if len(m) == 0 {
			delete(g.byRun, rec.w.Run)
		}
	}
	return true
}

// Waiters returns the recorded waits, sorted by ID.
func (g *Graph) Waiters() []Waiter {
	out := make([]Waiter, 0, len(g.waits))
	for _, id := range slices.Sorted(maps.Keys(g.waits)) {
		out = append(out, g.waits[id].w)
	}
	return out
}

// Youngest returns the waiter of cycle that started waiting last; of
// waiters that started at the same time, the one with the greatest ID. It
// returns the zero Waiter for an empty cycle.
func Youngest(cycle []Edge) Waiter {
	var y Waiter
	for i, e := range cycle {
		w := e.Waiter
		if i == 0 || w.Since.After(y.Since) || (w.Since.Equal(y.Since) && w.ID > y.ID) {
			y = w
		}
	}
	return y
}

// cycleThrough looks, holder by holder, for a path back from the holder's
// run to rec's run; the first one found, shortest for its holder, is the
// cycle.
func (g *Graph) cycleThrough(rec *wait) ([]Edge, bool) {
	for _, h := range rec.holders {
		if path, ok := g.path(h.Run, rec.w.Run); ok {
			return append([]Edge{{Waiter: rec.w, Holder: h}}, path...), true
		}
	}
	return nil, false
}

// path returns the edges of a shortest path from run from to run to
// (breadth first; waits visited in ID order, so the answer is
// deterministic), or false. from != to.
func (g *Graph) path(from, to string) ([]Edge, bool) {
	reached := map[string]Edge{from: {}}
	queue := []string{from}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		m := g.byRun[r]
		for _, id := range slices.Sorted(maps.Keys(m)) {
			rec := m[id]
			for _, h := range rec.holders {
				if _, seen := reached[h.Run]; seen {
					continue
				}
				reached[h.Run] = Edge{Waiter: rec.w, Holder: h}
				if h.Run == to {
					var rev []Edge
					for at := to; at != from; {
						e := reached[at]
						rev = append(rev, e)
						at = e.Waiter.Run
					}
					slices.Reverse(rev)
					return rev, true
				}
				queue = append(queue, h.Run)
			}
		}
	}
	return nil, false
}

// normalize merges holders by run, drops those without a run or of run
// self, and sorts runs and keys.
func normalize(self string, holders []Holder) []Holder {
	by := map[string][]string{}
	for _, h := range holders {
		if h.Run == "" || h.Run == self {
			continue
		}
		by[h.Run] = append(by[h.Run], h.Keys...)
	}
	out := make([]Holder, 0, len(by))
	for _, run := range slices.Sorted(maps.Keys(by)) {
		keys := slices.Clone(by[run])
		slices.Sort(keys)
		out = append(out, Holder{Run: run, Keys: slices.Compact(keys)})
	}
	return out
}

// Describe names a cycle in one line: "run A waits for K (held by run B);
// run B waits for …".
func Describe(cycle []Edge) string {
	var b strings.Builder
	for i, e := range cycle {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString("run ")
		b.WriteString(e.Waiter.Run)
		if e.Waiter.Operation != "" {
			b.WriteString(" (")
			b.WriteString(e.Waiter.Operation)
			b.WriteString(")")
		}
		b.WriteString(" waits for ")
		b.WriteString(strings.Join(e.Waiter.Keys, ", "))
		b.WriteString(" held by run ")
		b.WriteString(e.Holder.Run)
		b.WriteString(" (")
		b.WriteString(strings.Join(e.Holder.Keys, ", "))
		b.WriteString(")")
	}
	return b.String()
}
