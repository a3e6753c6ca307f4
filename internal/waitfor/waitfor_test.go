package waitfor

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func w(id, run string, since int, keys ...string) Waiter {
	return Waiter{ID: id, Run: run, Owner: "owner-" + id, Checkout: "co", Operation: "apply_patch", Keys: keys, Since: at(since)}
}

func h(run string, keys ...string) Holder { return Holder{Run: run, Keys: keys} }

// runs returns the waiting runs of a cycle in order.
func runs(c []Edge) []string {
	out := make([]string, len(c))
	for i, e := range c {
		out[i] = e.Waiter.Run
	}
	return out
}

func TestWait(t *testing.T) {
	type step struct {
		w       Waiter
		holders []Holder
		unwait  string // instead of a wait
		cycle   []string
	}
	tests := []struct {
		name     string
		steps    []step
		youngest string
		len      int
	}{
		{name: "two runs", steps: []step{
			{w: w("1", "A", 1, "path:co2:a"), holders: []Holder{h("B", "workspace:co2")}},
			{w: w("2", "B", 2, "path:co1:b"), holders: []Holder{h("A", "workspace:co1")}, cycle: []string{"B", "A"}},
		}, youngest: "2", len: 2},
		{name: "three runs", steps: []step{
			{w: w("1", "A", 3, "k1"), holders: []Holder{h("B", "k1")}},
			{w: w("2", "B", 1, "k2"), holders: []Holder{h("C", "k2")}},
			{w: w("3", "C", 2, "k3"), holders: []Holder{h("A", "k3")}, cycle: []string{"C", "A", "B"}},
		}, youngest: "1", len: 3},
		{name: "a chain is no cycle", steps: []step{
			{w: w("1", "A", 1, "k"), holders: []Holder{h("B", "k")}},
			{w: w("2", "B", 2, "k"), holders: []Holder{h("C", "k")}},
			{w: w("3", "C", 3, "k"), holders: []Holder{h("D", "k")}},
			{w: w("4", "A", 4, "k"), holders: []Holder{h("C", "k")}},
		}, len: 4},
		{name: "own run is no edge", steps: []step{
			{w: w("1", "A", 1, "k"), holders: []Holder{h("A", "workspace:co1")}},
			{w: w("2", "B", 2, "k"), holders: []Holder{h("A", "k")}},
		}, len: 1},
		{name: "no run takes part in nothing", steps: []step{
			{w: w("1", "", 1, "k"), holders: []Holder{h("B", "k")}},
			{w: w("2", "B", 2, "k"), holders: []Holder{h("", "k")}},
			{w: w("3", "B", 3, "k"), holders: []Holder{h("A", "k")}},
		}, len: 1},
		{name: "unwait removes the edge", steps: []step{
			{w: w("1", "A", 1, "k"), holders: []Holder{h("B", "k")}},
			{unwait: "1"},
			{w: w("2", "B", 2, "k"), holders: []Holder{h("A", "k")}},
		}, len: 1},
		{name: "a re-report replaces the holders", steps: []step{
			{w: w("1", "A", 1, "k"), holders: []Holder{h("B", "k")}},
			{w: w("1", "A", 1, "k"), holders: []Holder{h("C", "k")}},
			{w: w("2", "B", 2, "k"), holders: []Holder{h("A", "k")}},
			{w: w("3", "C", 3, "k"), holders: []Holder{h("A", "k")}, cycle: []string{"C", "A"}},
		}, youngest: "3", len: 3},
		{name: "the cycle found goes through the new edge", steps: []step{
			{w: w("1", "A", 1, "k"), holders: []Holder{h("B", "k")}},
			{w: w("2", "B", 2, "k"), holders: []Holder{h("C", "k")}},
			{w: w("3", "C", 3, "k"), holders: []Holder{h("D", "k"), h("B", "k")}, cycle: []string{"C", "B"}},
		}, youngest: "3", len: 3},
		{name: "two waits of one run", steps: []step{
			{w: w("1", "A", 1, "k"), holders: []Holder{h("B", "k")}},
			{w: w("2", "A", 2, "j"), holders: []Holder{h("C", "j")}},
			{w: w("3", "C", 3, "i"), holders: []Holder{h("A", "i")}, cycle: []string{"C", "A"}},
		}, youngest: "3", len: 3},
		{name: "same start: the greatest id", steps: []step{
			{w: w("x", "A", 1, "k"), holders: []Holder{h("B", "k")}},
			{w: w("y", "B", 1, "k"), holders: []Holder{h("A", "k")}, cycle: []string{"B", "A"}},
		}, youngest: "y", len: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := New()
			var last []Edge
			for i, s := range tc.steps {
				if s.unwait != "" {
					if !g.Unwait(s.unwait) {
						t.Fatalf("step %d: unwait %s: not recorded", i, s.unwait)
					}
					continue
				}
				c, ok := g.Wait(s.w, s.holders)
				if ok != (s.cycle != nil) || !slices.Equal(runs(c), s.cycle) {
					t.Fatalf("step %d: cycle %v (%v), want %v", i, runs(c), ok, s.cycle)
				}
				if ok {
					last = c
				}
			}
			if tc.youngest != "" {
				if y := Youngest(last); y.ID != tc.youngest {
					t.Fatalf("youngest %s, want %s", y.ID, tc.youngest)
				}
			}
			if g.Len() != tc.len {
				t.Fatalf("len %d, want %d (%v)", g.Len(), tc.len, g.Waiters())
			}
		})
	}
}

func TestCycleEdgesCarryTheRequest(t *testing.T) {
	g := New()
	g.Wait(Waiter{ID: "co1/1", Run: "A", Owner: "req-a", Checkout: "co2", Operation: "apply_patch", Keys: []string{"path:co2:x"}, Since: at(1)},
		[]Holder{{Run: "B", Keys: []string{"workspace:co2"}}, {Run: "B", Keys: []string{"git-index:co2", "workspace:co2"}}})
	c, ok := g.Wait(Waiter{ID: "co2/1", Run: "B", Owner: "req-b", Checkout: "co1", Operation: "git_commit", Keys: []string{"path:co1:y"}, Since: at(2)},
		[]Holder{{Run: "A", Keys: []string{"workspace:co1"}}})
	if !ok || len(c) != 2 {
		t.Fatalf("cycle %v %v", c, ok)
	}
	if e := c[0]; e.Waiter.Owner != "req-b" || e.Waiter.Checkout != "co1" || !e.Waiter.Since.Equal(at(2)) || e.Holder.Run != "A" {
		t.Fatalf("first edge %+v", e)
	}
	if e := c[1]; e.Waiter.Owner != "req-a" || !slices.Equal(e.Holder.Keys, []string{"git-index:co2", "workspace:co2"}) {
		t.Fatalf("second edge %+v: holders of one run are merged", e)
	}
	d := Describe(c)
	for _, s := range []string{"run B (git_commit) waits for path:co1:y held by run A (workspace:co1)", "run A (apply_patch) waits for path:co2:x"} {
		if !strings.Contains(d, s) {
			t.Fatalf("describe %q lacks %q", d, s)
		}
	}
}

func TestWaitBreakingBreaksEveryCycleThroughTheWait(t *testing.T) {
	g := New()
	g.Wait(w("b", "B", 2, "k"), []Holder{h("A", "k")})
	g.Wait(w("c", "C", 3, "k"), []Holder{h("A", "k")})
	// A (oldest) waits for B and C: two cycles, each broken at its youngest.
	broken := g.WaitBreaking(w("a", "A", 1, "j"), []Holder{h("B", "j"), h("C", "j")})
	var victims []string
	for _, b := range broken {
		victims = append(victims, b.Victim.ID)
	}
	if !slices.Equal(victims, []string{"b", "c"}) {
		t.Fatalf("victims %v, want [b c]", victims)
	}
	if _, ok := g.Cycle("a"); ok || g.Len() != 1 {
		t.Fatalf("after breaking: %v", g.Waiters())
	}
	// The new wait is the youngest: it alone is removed.
	broken = g.WaitBreaking(w("b2", "B", 9, "k"), []Holder{h("A", "k")})
	if len(broken) != 1 || broken[0].Victim.ID != "b2" || g.Len() != 1 {
		t.Fatalf("broken %+v, waits %v", broken, g.Waiters())
	}
}
