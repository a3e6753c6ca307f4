package watch

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestTrackerSince(t *testing.T) {
	tr := NewTracker(0)
	e, g := tr.Position()
	if st := tr.Since(0, 0); st.Complete {
		t.Fatalf("an asker of no epoch must rebuild: %+v", st)
	}
	if st := tr.Since(e, g); !st.Complete || len(st.Changed) != 0 || st.Meta {
		t.Fatalf("nothing changed: %+v", st)
	}
	tr.Apply(Batch{Paths: []string{"b", "a"}})
	tr.Apply(Batch{Paths: []string{"a"}, Cookies: []string{"c1"}})
	if st := tr.Since(e, g); !st.Complete || !slices.Equal(st.Changed, []string{"a", "b"}) || st.Meta {
		t.Fatalf("since start: %+v", st)
	}
	if st := tr.Since(e, g+1); !slices.Equal(st.Changed, []string{"a"}) {
		t.Fatalf("since gen %d: %+v", g+1, st)
	}
	if !tr.TakeCookie("c1") || tr.TakeCookie("c1") || tr.TakeCookie("c2") {
		t.Fatal("a cookie is taken once, and only when seen")
	}
	tr.Apply(Batch{Meta: true})
	if st := tr.Since(e, g+2); !st.Complete || !st.Meta || len(st.Changed) != 0 {
		t.Fatalf("meta: %+v", st)
	}
	tr.Apply(Batch{Overflow: true, Reason: "event queue overflow"})
	if st := tr.Since(e, g+3); st.Complete || st.Reason != "event queue overflow" {
		t.Fatalf("after an overflow every asker rebuilds: %+v", st)
	}
	if st := tr.Since(e, 1<<40); st.Complete {
		t.Fatalf("a generation from the future is not trusted: %+v", st)
	}
}

func TestTrackerForgetsPastItsBound(t *testing.T) {
	tr := NewTracker(3)
	e, g := tr.Position()
	tr.Apply(Batch{Paths: []string{"a", "b", "c"}})
	if st := tr.Since(e, g); !st.Complete {
		t.Fatalf("three paths fit: %+v", st)
	}
	tr.Apply(Batch{Paths: []string{"d"}})
	if st := tr.Since(e, g); st.Complete {
		t.Fatalf("past the bound the epoch moves on: %+v", st)
	}
}

// TestTrackerProperty: for any sequence of batches, an asker that applies
// each answer ends with exactly the set of paths changed since it last
// asked, or is told to rebuild; never a silent gap.
func TestTrackerProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tr := NewTracker(rapid.IntRange(1, 8).Draw(t, "max"))
		epoch, gen := uint64(0), uint64(0)
		var truth map[string]bool // changed since the asker's position; nil = unknown
		names := []string{"a", "b", "c/d", "e", "f"}
		for i := range rapid.IntRange(1, 40).Draw(t, "steps") {
			switch rapid.IntRange(0, 4).Draw(t, "kind") {
			case 0, 1, 2:
				ps := rapid.SliceOfN(rapid.SampledFrom(names), 0, 4).Draw(t, "paths")
				tr.Apply(Batch{Paths: ps})
				for _, p := range ps {
					if truth != nil {
						truth[p] = true
					}
				}
			case 3:
				tr.Apply(Batch{Overflow: true})
			case 4:
				st := tr.Since(epoch, gen)
				if st.Complete {
					if truth == nil {
						t.Fatalf("step %d: complete answer for an asker that never synced", i)
					}
					got := map[string]bool{}
					for _, p := range st.Changed {
						got[p] = true
					}
					for p := range truth {
						if !got[p] {
							t.Fatalf("step %d: %q changed but was not reported", i, p)
						}
					}
				}
				epoch, gen, truth = st.Epoch, st.Gen, map[string]bool{}
			}
		}
	})
}
