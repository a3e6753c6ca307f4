package harness_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
)

// walkCounts is what one operation asked of the actors and the store.
type walkCounts struct {
	mu       sync.Mutex
	counting bool
	asks     map[string]int // mailbox round trips: a request whose reply the call awaits
	tells    map[string]int // messages the call only sends
}

// observe is harness.Config.ActorObserver: while counting, every message
// sent from the calling test's goroutine (the operation's own walk, not a
// timer's or a background task's) is counted by actor kind and type.
func (w *walkCounts) observe(to string, msg any, request bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.counting || !onTestGoroutine() {
		return
	}
	key := actorKind(to) + " " + strings.TrimPrefix(fmt.Sprintf("%T", msg), "messages.")
	if request {
		w.asks[key]++
	} else {
		w.tells[key]++
	}
}

func (w *walkCounts) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counting, w.asks, w.tells = true, map[string]int{}, map[string]int{}
}

func (w *walkCounts) stop() (asks, tells map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counting = false
	return w.asks, w.tells
}

// onTestGoroutine reports whether the caller runs on a test function's
// goroutine (its stack holds a Test function of this package).
func onTestGoroutine() bool {
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "harness_test.TestApplyPatchWalk") {
			return true
		}
		if !more {
			return false
		}
	}
}

// actorKind names an actor by its place in the tree without the ids of
// one run: harnessd/registry/repo_3f.../checkout -> registry/repo/checkout.
func actorKind(id string) string {
	parts := strings.Split(strings.TrimPrefix(id, "harnessd/"), "/")
	for i, p := range parts {
		if j := strings.IndexAny(p, "_-$"); j > 0 {
			parts[i] = p[:j]
		}
	}
	return strings.Join(parts, "/")
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func listed(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n\t%2d  %s", m[k], k)
	}
	return b.String()
}

// One apply_patch of one file, counted with instruments, not by reading
// the code: the mailbox round trips the call asks of actors (runtime Ask
// and requests, through Config.ActorObserver), the messages it only tells
// them, and the synced commits of the store (Store.Syncs) until the call
// returns. The walk is pinned: a change that adds a round trip or a synced
// commit to the hot write fails here, and says where.
func TestApplyPatchWalk(t *testing.T) {
	w := &walkCounts{}
	h, err := harness.Open(context.Background(), harness.Config{DataDir: t.TempDir(), LoopThreshold: -1, ActorObserver: w.observe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	root := testutil.Repo(t, map[string]string{"src/app.go": "package app\n\nvar v = \"a\"\n"})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	patchOnce := func(i int) {
		t.Helper()
		texts := [2]string{`"a"`, `"b"`}
		if _, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: r.ID, RequestID: fmt.Sprintf("walk-%d", i),
			Operations: []patch.Op{{Op: "replace", Path: "src/app.go", OldText: texts[i%2], NewText: texts[(i+1)%2]}}}); err != nil {
			t.Fatal(err)
		}
	}
	patchOnce(0) // warm: the checkout's actors and caches exist before the count

	w.start()
	syncs, fsyncs := h.Store().Syncs(), h.PreImageStats().Fsyncs
	patchOnce(1)
	syncs, fsyncs = h.Store().Syncs()-syncs, h.PreImageStats().Fsyncs-fsyncs
	asks, tells := w.stop()

	t.Logf("one apply_patch of one file: %d mailbox round trips, %d tells, %d synced commits\nround trips:%s\ntells:%s",
		total(asks), total(tells), syncs, listed(asks), listed(tells))
	// Ledger begin and completion, the lease (acquire, one fence per file,
	// release) and the audit entry made durable: 5 + 1 round trips; the
	// one synced commit is the audit's group commit after the write, which
	// carries the ledger's completion, the receipt and the durable copy of
	// the new pre-image (the ledger's begin is written unsynced before the
	// file changes, the pre-image's file without an fsync: op.Call.Write).
	if n := total(asks); n > walkMaxAsks {
		t.Errorf("%d mailbox round trips, want at most %d:%s", n, walkMaxAsks, listed(asks))
	}
	if syncs > walkMaxSyncs {
		t.Errorf("%d synced commits, want at most %d", syncs, walkMaxSyncs)
	}
	if fsyncs != 0 {
		t.Errorf("the pre-image store made %d fsyncs, want none: a small pre-image rides the write's synced commit", fsyncs)
	}
}

// The walk's bounds (see TestApplyPatchWalk).
const (
	walkMaxAsks  = 6
	walkMaxSyncs = 2
)
