package checkid

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestEvict(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	pass := func(key string, bytes int64, h int) Held {
		return Held{Key: key, Bytes: bytes, Passed: true, LastUsed: at(h)}
	}
	tests := []struct {
		name string
		held []Held
		b    Budget
		want []int
	}{
		{"empty", nil, Budget{MaxCount: 1, MaxBytes: 1}, nil},
		{"within every bound", []Held{pass("a", 10, 1), pass("b", 10, 2)}, Budget{MaxCount: 2, MaxBytes: 20}, nil},
		{"no bounds keep every pass, however old", []Held{pass("a", 1<<40, -24*365), pass("b", 1, 2)}, Budget{}, nil},
		{"a failed run never stays", []Held{pass("a", 1, 1), {Key: "f", Bytes: 1, LastUsed: at(9)}}, Budget{}, []int{1}},
		{"count: the least recently used go", []Held{pass("a", 1, 3), pass("b", 1, 1), pass("c", 1, 2)}, Budget{MaxCount: 2}, []int{1}},
		{"bytes: the least recently used go", []Held{pass("a", 6, 3), pass("b", 6, 1), pass("c", 6, 2)}, Budget{MaxBytes: 12}, []int{1}},
		{"a reuse counts as use", []Held{pass("old-but-used", 1, 9), pass("new", 1, 5)}, Budget{MaxCount: 1}, []int{1}},
		{"an older small entry never outlives a newer large one", []Held{pass("new-big", 10, 3), pass("old-small", 1, 1)}, Budget{MaxBytes: 5}, []int{0, 1}},
		{"one pass larger than the budget goes alone", []Held{pass("big", 50, 3), pass("b", 1, 2), pass("c", 1, 1)}, Budget{MaxBytes: 10}, []int{0, 1, 2}},
		{"equal uses: the key decides", []Held{pass("a", 1, 1), pass("b", 1, 1)}, Budget{MaxCount: 1}, []int{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Evict(tc.held, tc.b); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEvictProperty drives a repository's evidence through any sequence
// of stores (passing or not) and reuses, pruning after each as the checks
// supervisor does, and checks after every step: what is kept fits the
// budget, holds no failed run, every evicted pass is older (by last use)
// than every kept one, and nothing was evicted that would have fit.
func TestEvictProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := Budget{MaxCount: rapid.IntRange(0, 6).Draw(t, "max count"), MaxBytes: int64(rapid.IntRange(0, 60).Draw(t, "max bytes"))}
		now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		var held []Held
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for s := 0; s < steps; s++ {
			now = now.Add(time.Duration(rapid.IntRange(0, 3).Draw(t, "tick")) * time.Hour)
			if len(held) > 0 && rapid.Bool().Draw(t, "reuse") {
				i := rapid.IntRange(0, len(held)-1).Draw(t, "which")
				held[i].LastUsed = now
			} else {
				held = append(held, Held{Key: fmt.Sprintf("k%03d", s), Bytes: int64(rapid.IntRange(1, 25).Draw(t, "bytes")),
					Passed: rapid.Bool().Draw(t, "passed"), LastUsed: now})
			}
			drop := Evict(held, b)
			if !slices.IsSorted(drop) || len(slices.Compact(slices.Clone(drop))) != len(drop) {
				t.Fatalf("step %d: indices %v not ascending and distinct", s, drop)
			}
			var kept, evicted []Held
			for i, h := range held {
				if slices.Contains(drop, i) {
					evicted = append(evicted, h)
				} else {
					kept = append(kept, h)
				}
			}
			var bytes int64
			for _, k := range kept {
				bytes += k.Bytes
				if !k.Passed {
					t.Fatalf("step %d: failed run %s kept", s, k.Key)
				}
			}
			if (b.MaxCount > 0 && len(kept) > b.MaxCount) || (b.MaxBytes > 0 && bytes > b.MaxBytes) {
				t.Fatalf("step %d: kept %d entries, %d bytes over the budget %+v", s, len(kept), bytes, b)
			}
			newer := func(a, c Held) bool { // a ranks before c
				return a.LastUsed.After(c.LastUsed) || (a.LastUsed.Equal(c.LastUsed) && a.Key > c.Key)
			}
			var newestEvicted *Held
			for i, e := range evicted {
				if !e.Passed {
					continue
				}
				for _, k := range kept {
					if newer(e, k) {
						t.Fatalf("step %d: evicted %s (used %v) is newer than kept %s (used %v)", s, e.Key, e.LastUsed, k.Key, k.LastUsed)
					}
				}
				if newestEvicted == nil || newer(e, *newestEvicted) {
					newestEvicted = &evicted[i]
				}
			}
			if newestEvicted != nil {
				fitsCount := b.MaxCount <= 0 || len(kept)+1 <= b.MaxCount
				fitsBytes := b.MaxBytes <= 0 || bytes+newestEvicted.Bytes <= b.MaxBytes
				if fitsCount && fitsBytes {
					t.Fatalf("step %d: evicted %s although it fits beside what is kept (%d entries, %d bytes, budget %+v)",
						s, newestEvicted.Key, len(kept), bytes, b)
				}
			}
			held = kept
		}
	})
}
