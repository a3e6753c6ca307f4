package waitfor

import (
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// model is the brute-force graph: every recorded wait with the runs it
// waits for, and reachability by depth-first search over all of them.
type model struct {
	waits map[string]mwait
}

type mwait struct {
	run     string
	since   time.Time
	holders map[string]bool
}

func (m *model) wait(w Waiter, holders []Holder) {
	delete(m.waits, w.ID)
	if w.Run == "" {
		return
	}
	hs := map[string]bool{}
	for _, h := range holders {
		if h.Run != "" && h.Run != w.Run {
			hs[h.Run] = true
		}
	}
	if len(hs) > 0 {
		m.waits[w.ID] = mwait{run: w.Run, since: w.Since, holders: hs}
	}
}

func (m *model) reach(from, to string) bool {
	seen := map[string]bool{}
	var dfs func(r string) bool
	dfs = func(r string) bool {
		if r == to {
			return true
		}
		if seen[r] {
			return false
		}
		seen[r] = true
		for _, w := range m.waits {
			if w.run != r {
				continue
			}
			for h := range w.holders {
				if dfs(h) {
					return true
				}
			}
		}
		return false
	}
	return dfs(from)
}

// closes reports whether the wait id lies on a cycle through its own edges.
func (m *model) closes(id string) bool {
	w, ok := m.waits[id]
	if !ok {
		return false
	}
	for h := range w.holders {
		if m.reach(h, w.run) {
			return true
		}
	}
	return false
}

func (m *model) acyclic() bool {
	for id := range m.waits {
		if m.closes(id) {
			return false
		}
	}
	return true
}

// checkCycle fails unless c is a simple cycle of m's edges that starts with
// the wait id, and Youngest(c) is its latest waiter.
func checkCycle(t *rapid.T, m *model, id string, c []Edge) {
	if len(c) < 2 || c[0].Waiter.ID != id {
		t.Fatalf("cycle %v does not start with wait %s", c, id)
	}
	seen := map[string]bool{}
	for i, e := range c {
		next := c[(i+1)%len(c)].Waiter.Run
		if e.Holder.Run != next {
			t.Fatalf("edge %d holder %s, next waiter %s", i, e.Holder.Run, next)
		}
		mw, ok := m.waits[e.Waiter.ID]
		if !ok || mw.run != e.Waiter.Run || !mw.holders[e.Holder.Run] {
			t.Fatalf("edge %d (%s: %s -> %s) is not in the model", i, e.Waiter.ID, e.Waiter.Run, e.Holder.Run)
		}
		if seen[e.Waiter.Run] {
			t.Fatalf("run %s twice in cycle %v", e.Waiter.Run, runs(c))
		}
		seen[e.Waiter.Run] = true
	}
	y := Youngest(c)
	for _, e := range c {
		if e.Waiter.Since.After(y.Since) || (e.Waiter.Since.Equal(y.Since) && e.Waiter.ID > y.ID) {
			t.Fatalf("youngest %s but %s started later", y.ID, e.Waiter.ID)
		}
	}
}

var (
	runNames = []string{"", "A", "B", "C", "D", "E"}
	waitIDs  = []string{"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"}
)

func drawWait(t *rapid.T) (Waiter, []Holder) {
	id := rapid.SampledFrom(waitIDs).Draw(t, "id")
	run := rapid.SampledFrom(runNames).Draw(t, "run")
	since := t0.Add(time.Duration(rapid.IntRange(0, 5).Draw(t, "since")) * time.Second)
	n := rapid.IntRange(0, 3).Draw(t, "holders")
	hs := make([]Holder, n)
	for i := range hs {
		hs[i] = Holder{Run: rapid.SampledFrom(runNames).Draw(t, "holder"), Keys: []string{"k" + strconv.Itoa(i)}}
	}
	return Waiter{ID: id, Run: run, Since: since}, hs
}

// Wait finds a cycle exactly when the brute-force model has one through the
// new wait, and Cycle agrees with the model for every wait after every step.
func TestPropertyCyclesMatchReachability(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g, m := New(), &model{waits: map[string]mwait{}}
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			if rapid.IntRange(0, 3).Draw(t, "op") == 0 {
				id := rapid.SampledFrom(waitIDs).Draw(t, "unwait")
				_, had := m.waits[id]
				if g.Unwait(id) != had {
					t.Fatalf("unwait %s: recorded=%v", id, had)
				}
				delete(m.waits, id)
			} else {
				w, hs := drawWait(t)
				c, ok := g.Wait(w, hs)
				m.wait(w, hs)
				if want := m.closes(w.ID); ok != want {
					t.Fatalf("wait %s (%s -> %v): cycle %v, model says %v", w.ID, w.Run, hs, ok, want)
				}
				if ok {
					checkCycle(t, m, w.ID, c)
				}
			}
			if g.Len() != len(m.waits) {
				t.Fatalf("len %d, model %d", g.Len(), len(m.waits))
			}
			for _, id := range waitIDs {
				c, ok := g.Cycle(id)
				if ok != m.closes(id) {
					t.Fatalf("Cycle(%s) = %v, model %v", id, ok, !ok)
				}
				if ok {
					checkCycle(t, m, id, c)
				}
			}
		}
	})
}

// WaitBreaking keeps the graph free of cycles, and removes only victims that
// were the youngest of a cycle.
func TestPropertyBreakingKeepsTheGraphAcyclic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g, m := New(), &model{waits: map[string]mwait{}}
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			if rapid.IntRange(0, 3).Draw(t, "op") == 0 {
				id := rapid.SampledFrom(waitIDs).Draw(t, "unwait")
				g.Unwait(id)
				delete(m.waits, id)
				continue
			}
			w, hs := drawWait(t)
			broken := g.WaitBreaking(w, hs)
			m.wait(w, hs)
			for _, b := range broken {
				checkCycle(t, m, w.ID, b.Cycle)
				if b.Victim.ID != Youngest(b.Cycle).ID {
					t.Fatalf("victim %s is not the youngest of %v", b.Victim.ID, runs(b.Cycle))
				}
				delete(m.waits, b.Victim.ID)
			}
			if !m.acyclic() {
				t.Fatalf("a cycle is left after breaking: %v", g.Waiters())
			}
			if g.Len() != len(m.waits) {
				t.Fatalf("len %d, model %d", g.Len(), len(m.waits))
			}
		}
	})
}
