package checkid

import (
	"sort"
	"time"
)

// Held is one stored piece of check evidence as retention sees it.
type Held struct {
	Key    string // its store key (breaks ties between equal uses)
	Bytes  int64  // its stored size
	Passed bool   // a passing run; anything else is never kept
	// LastUsed is when it was stored or last reused, whichever is later.
	LastUsed time.Time
}

// Budget bounds the evidence one repository keeps: at most MaxCount
// entries and MaxBytes bytes in all (a bound <= 0 is no bound of that
// kind). There is no age bound: a pass is evidence until the budget
// needs its room.
type Budget struct {
	MaxCount int
	MaxBytes int64
}

// Evict returns the indices (ascending) of held that a repository drops
// to fit b. Anything that did not pass goes first, whatever the budget.
// The passes are ranked by last use, newest first (the key breaks ties);
// the longest newest-first run of them that fits the budget stays and
// every older one goes, so what is evicted is always older than what is
// kept, never a newer entry to make room for an older one that fits.
func Evict(held []Held, b Budget) []int {
	var drop, passes []int
	for i, h := range held {
		if h.Passed {
			passes = append(passes, i)
		} else {
			drop = append(drop, i)
		}
	}
	sort.Slice(passes, func(x, y int) bool {
		a, c := held[passes[x]], held[passes[y]]
		if !a.LastUsed.Equal(c.LastUsed) {
			return a.LastUsed.After(c.LastUsed)
		}
		return a.Key > c.Key
	})
	var bytes int64
	for n, i := range passes {
		bytes += held[i].Bytes
		if (b.MaxCount > 0 && n >= b.MaxCount) || (b.MaxBytes > 0 && bytes > b.MaxBytes) {
			drop = append(drop, passes[n:]...)
			break
		}
	}
	sort.Ints(drop)
	return drop
}
