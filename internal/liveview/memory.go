package liveview

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Memory. A view's background build of a big checkout (the index, the
// status, the watcher's walk) and its search index's fill allocate far
// more than they keep: with Go's default GOGC=100 the runtime then keeps
// about twice the live heap mapped, and does not give the rest back
// while it is within that goal. So, when a build of settleMin files or
// more ends (in the background, never on a call's path), the live index
//
//   - returns the free memory to the system (debug.FreeOSMemory), and
//   - unless the process runs with GOMEMLIMIT or GOGC set (the user's
//     choice is theirs) or someone else set a limit, keeps a soft memory
//     limit (debug.SetMemoryLimit) of the runtime's own memory plus the
//     live heap plus headroom(live heap): max(live/4, 24 MiB). It is
//     derived again after every GC cycle, so it follows the live heap up
//     and down and is never below 1.25 times it (no GC spiral: at worst
//     the GC runs as often as with GOGC=25).

// settleMin is the size (index entries, or files searched) of a build
// after which the memory is settled.
const settleMin = fillMin

// minHeadroom is the least room above the live heap the soft limit
// leaves.
const minHeadroom = 24 << 20

// headroom is the room above a live heap of live bytes the soft limit
// leaves: a quarter of it, at least minHeadroom.
func headroom(live uint64) uint64 { return max(live/4, minHeadroom) }

// softLimit is the soft memory limit for a runtime whose memory other
// than heap objects and free heap pages is other bytes and whose live
// heap is live bytes.
func softLimit(other, live uint64) int64 {
	l := other + live + headroom(live)
	if l > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(l)
}

// userTuned reports whether the process was started with a GC setting
// of its own (GOMEMLIMIT or GOGC in its environment).
func userTuned() bool {
	return os.Getenv("GOMEMLIMIT") != "" || os.Getenv("GOGC") != ""
}

// limiter is the process's one soft limit: the live index's views share
// the runtime.
var limiter struct {
	mu     sync.Mutex
	set    int64 // the limit this package set last; 0 = none
	hooked bool  // a GC-cycle hook is armed
	busy   bool  // a settle runs: another one is redundant
}

// settle returns the free memory to the system and sets or updates the
// soft limit (see Memory). It blocks while the runtime collects: call it
// from a background build only.
func settle() {
	limiter.mu.Lock()
	if limiter.busy {
		limiter.mu.Unlock()
		return
	}
	limiter.busy = true
	limiter.mu.Unlock()
	debug.FreeOSMemory()
	limiter.mu.Lock()
	defer limiter.mu.Unlock()
	limiter.busy = false
	if adjustLocked() && !limiter.hooked {
		limiter.hooked = true
		armGCHook()
	}
}

// adjustLocked derives the soft limit from the runtime's figures and
// sets it, unless the limit is not this package's to set; it reports
// whether it set one.
func adjustLocked() bool {
	if userTuned() {
		return false
	}
	cur := debug.SetMemoryLimit(-1)
	if cur != limiter.set && (limiter.set != 0 || cur != math.MaxInt64) {
		return false // someone else's limit (or someone changed ours: theirs now)
	}
	other, live := runtimeMemory()
	limiter.set = softLimit(other, live)
	debug.SetMemoryLimit(limiter.set)
	return true
}

// runtimeMemory reads the runtime's memory other than heap objects and
// free or released heap pages (stacks, metadata, fragmentation) and the
// live heap marked by the last GC, in bytes.
func runtimeMemory() (other, live uint64) {
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	total, objects, free, released := v(0), v(1), v(2), v(3)
	if spent := objects + free + released; total > spent {
		other = total - spent
	}
	return other, v(4)
}

// gcSentinel is an object whose collection marks a GC cycle (it holds a
// pointer so that it is not tiny-allocated with others).
type gcSentinel struct{ _ *int }

// armGCHook makes the next GC cycle update the limit: a fresh sentinel,
// unreachable at once, whose cleanup runs after the cycle that frees it
// and arms the next one. It disarms itself once the limit is no longer
// this package's.
func armGCHook() {
	runtime.AddCleanup(&gcSentinel{}, func(struct{}) {
		limiter.mu.Lock()
		defer limiter.mu.Unlock()
		if !adjustLocked() {
			limiter.hooked = false
			return
		}
		armGCHook()
	}, struct{}{})
}
