package liveview

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestSoftLimit(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		other, live uint64
		want        int64
	}{
		{0, 0, 24 * mib},                                            // nothing live: the least headroom
		{10 * mib, 10 * mib, 44 * mib},                              // a small heap: 24 MiB of room
		{10 * mib, 96 * mib, 130 * mib},                             // a quarter of 96 is 24: either way
		{10 * mib, 200 * mib, 260 * mib},                            // a large heap: a quarter of it
		{math.MaxUint64 / 2, math.MaxUint64 / 4, math.MaxInt64 / 2}, // capped, not wrapped
	}
	for _, tt := range tests {
		if got := softLimit(tt.other, tt.live); got != tt.want {
			t.Errorf("softLimit(%d MiB, %d MiB) = %d MiB, want %d", tt.other/mib, tt.live/mib, got/mib, tt.want/mib)
		}
	}
}

// waitLimit runs GC cycles until the memory limit satisfies ok (the hook
// runs after a cycle, on the runtime's cleanup goroutine), for at most
// 10 s, and returns it.
func waitLimit(t *testing.T, ok func(int64) bool) int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		l := debug.SetMemoryLimit(-1)
		if ok(l) {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory limit %d MiB: not as expected after 10 s of GC cycles", l>>20)
		}
		runtime.Gosched()
	}
}

// TestSettleLimitFollowsTheLiveHeap: after a settle the process has a soft
// limit of the runtime's memory plus the live heap plus its headroom; when
// the live heap grows, the next GC cycles raise it (never below 1.25 times
// the live heap); once someone else sets a limit, the live index leaves
// it alone and its hook disarms.
func TestSettleLimitFollowsTheLiveHeap(t *testing.T) {
	if userTuned() {
		t.Skip("GOGC or GOMEMLIMIT is set: the live index keeps no limit of its own")
	}
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("a memory limit is set already")
	}
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	settle()
	limiter.mu.Lock()
	set, hooked := limiter.set, limiter.hooked
	limiter.mu.Unlock()
	if got := debug.SetMemoryLimit(-1); got != set || !hooked {
		t.Fatalf("after settle: limit %d, the live index's %d, hook armed %v", got, set, hooked)
	}
	_, live := runtimeMemory()
	if set < int64(live+minHeadroom) {
		t.Fatalf("limit %d MiB below the live heap %d MiB plus 24 MiB", set>>20, live>>20)
	}

	// 96 MiB more live heap (never written: its pages stay untouched).
	keep := make([]byte, 96<<20)
	grown := waitLimit(t, func(l int64) bool { return l >= set+96<<20 })
	_, live = runtimeMemory()
	if float64(grown) < 1.25*float64(live) {
		t.Fatalf("limit %d MiB is below 1.25 times the live heap of %d MiB", grown>>20, live>>20)
	}
	runtime.KeepAlive(keep)

	// Someone else's limit is theirs.
	const theirs = 4 << 30
	debug.SetMemoryLimit(theirs)
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		limiter.mu.Lock()
		hooked = limiter.hooked
		limiter.mu.Unlock()
		if !hooked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the GC hook is still armed 10 s after another limit was set")
		}
		runtime.Gosched()
	}
	if got := debug.SetMemoryLimit(-1); got != theirs {
		t.Fatalf("limit %d, want the other party's %d", got, theirs)
	}
	settle()
	if got := debug.SetMemoryLimit(-1); got != theirs {
		t.Fatalf("a settle changed the other party's limit to %d", got)
	}
}
