package harness_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
)

// The model of undo: per file, the stack of the writes that stand. A
// revert of a write that stands on top of all its files pops it; a revert
// of a revert puts its writes back; anything else is REVERT_CONFLICT
// (cascade: the writes above it go first).
type undoModel struct {
	writes  []*mwrite
	stacks  map[string][]*mwrite // file -> standing writes, oldest first
	initial map[string]string
	after   map[string]string // receipt id NUL file -> what the write left
}

type mwrite struct {
	id      string
	seq     int
	agent   string
	revert  bool
	targets []*mwrite
	files   []string // the files it changed
	live    bool
}

func (m *undoModel) top(f string) *mwrite {
	st := m.stacks[f]
	if len(st) == 0 {
		return nil
	}
	return st[len(st)-1]
}

func (m *undoModel) remove(w *mwrite) {
	for _, f := range w.files {
		m.stacks[f] = slices.DeleteFunc(m.stacks[f], func(x *mwrite) bool { return x == w })
	}
}

func (m *undoModel) insert(w *mwrite) {
	for _, f := range w.files {
		st := append(m.stacks[f], w)
		slices.SortFunc(st, func(a, b *mwrite) int { return a.seq - b.seq })
		m.stacks[f] = st
	}
}

// undo takes w back: a write leaves its stacks, a revert's writes come
// back (and a revert of a revert takes its writes back again).
func (m *undoModel) undo(w *mwrite) {
	w.live = false
	if !w.revert {
		m.remove(w)
		return
	}
	for _, x := range w.targets {
		m.redo(x)
	}
}

// redo makes w stand again.
func (m *undoModel) redo(w *mwrite) {
	w.live = true
	if !w.revert {
		m.insert(w)
		return
	}
	for _, x := range w.targets {
		m.undo(x)
	}
}

// laterRevertOfOlder reports a standing revert after w on one of w's
// files that undid a write older than w: reverting w would bring it back.
func (m *undoModel) laterRevertOfOlder(w *mwrite) bool {
	for _, r := range m.writes {
		if !r.revert || !r.live || r.seq <= w.seq || !overlaps(r.files, w.files) {
			continue
		}
		for _, t := range r.targets {
			for _, f := range t.files {
				if t.seq < w.seq && slices.Contains(r.files, f) && slices.Contains(w.files, f) {
					return true
				}
			}
		}
	}
	return false
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// allowed is the model's answer to a revert of w without cascade.
func (m *undoModel) allowed(w *mwrite) bool {
	if !w.live || m.laterRevertOfOlder(w) {
		return false
	}
	for _, f := range w.files {
		if w.revert {
			for _, x := range m.stacks[f] {
				if x.seq > w.seq {
					return false
				}
			}
		} else if m.top(f) != w {
			return false
		}
	}
	return true
}

// closure is the set a cascade revert of the standing write w undoes.
func (m *undoModel) closure(w *mwrite) []*mwrite {
	set := []*mwrite{w}
	for changed := true; changed; {
		changed = false
		for f, st := range m.stacks {
			min := -1
			for _, s := range set {
				if slices.Contains(s.files, f) && (min < 0 || s.seq < min) {
					min = s.seq
				}
			}
			if min < 0 {
				continue
			}
			for _, x := range st {
				if x.seq > min && !slices.Contains(set, x) {
					set = append(set, x)
					changed = true
				}
			}
		}
	}
	return set
}

func TestUndoPropertyTwoAgentsNeverLoseAWrite(t *testing.T) {
	ctx := context.Background()
	names := []string{"a", "b", "c"}
	files := map[string]string{"a": "a0\n", "b": "b0\n", "c": "c0\n"}
	h, _, _ := undoHarness(t, harness.Config{}, map[string]string{"x": "x\n"})
	var conflicts, reverts, cascades, revertsOfReverts int
	defer func() {
		t.Logf("reverts %d (of reverts %d, cascades %d), conflicts %d", reverts, revertsOfReverts, cascades, conflicts)
	}()
	rapid.Check(t, func(rt *rapid.T) {
		root := testutil.Repo(t, files)
		reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
		if err != nil {
			rt.Fatal(err)
		}
		repo := reg.ID
		m := &undoModel{stacks: map[string][]*mwrite{}, initial: files, after: map[string]string{}}
		content := map[string]string{}
		for k, v := range files {
			content[k] = v
		}
		seq, n := 0, 0
		steps := rapid.IntRange(1, 14).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			agent := rapid.SampledFrom([]string{"agent1", "agent2"}).Draw(rt, "agent")
			if len(m.writes) == 0 || rapid.IntRange(0, 2).Draw(rt, "kind") > 0 {
				// A patch of one to three files: a new content, or a delete.
				set := rapid.SliceOfNDistinct(rapid.SampledFrom(names), 1, 3, rapid.ID[string]).Draw(rt, "files")
				var ops []patch.Op
				next := map[string]string{}
				for _, f := range set {
					n++
					if content[f] != "<absent>" && rapid.IntRange(0, 4).Draw(rt, "delete") == 0 {
						ops = append(ops, patch.Op{Op: "delete", Path: f})
						next[f] = "<absent>"
					} else {
						c := fmt.Sprintf("%s by %s #%d\n", f, agent, n)
						ops = append(ops, patch.Op{Op: "write", Path: f, Content: c})
						next[f] = c
					}
				}
				r, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: repo, RequestID: undoID(agent), Operations: ops})
				if err != nil {
					rt.Fatalf("%s patch %v: %v", agent, set, err)
				}
				seq++
				w := &mwrite{id: r.ReceiptID, seq: seq, agent: agent, files: set, live: true}
				m.writes = append(m.writes, w)
				m.insert(w)
				for f, c := range next {
					content[f] = c
					m.after[w.id+"\x00"+f] = c
				}
			} else {
				w := rapid.SampledFrom(m.writes).Draw(rt, "target")
				cascade := !w.revert && w.live && rapid.Bool().Draw(rt, "cascade")
				r, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: w.id, RequestID: undoID(agent), Cascade: cascade})
				ok := cascade || m.allowed(w)
				if !ok {
					conflicts++
					if errs.CodeOf(err) != errs.RevertConflict {
						rt.Fatalf("revert of %s (%v, revert %v, live %v): %v, want REVERT_CONFLICT", w.id, w.files, w.revert, w.live, err)
					}
				} else {
					if err != nil {
						rt.Fatalf("revert of %s (%v, revert %v, cascade %v): %v", w.id, w.files, w.revert, cascade, err)
					}
					reverts++
					var undone []*mwrite
					switch {
					case cascade:
						cascades++
						undone = m.closure(w)
						for _, x := range undone {
							m.undo(x)
						}
					default:
						if w.revert {
							revertsOfReverts++
						}
						m.undo(w)
						undone = []*mwrite{w}
					}
					seq++
					rv := &mwrite{id: r.ReceiptID, seq: seq, agent: agent, revert: true, targets: undone, live: true}
					next := m.contents(undone)
					for _, f := range names {
						if next[f] != content[f] {
							rv.files = append(rv.files, f)
						}
					}
					content = next
					m.writes = append(m.writes, rv)
				}
			}
			// Nothing that stands is lost, nothing undone comes back.
			if got := readAll(t, root, names...); !mapsEqual(got, content) {
				rt.Fatalf("step %d: disk %v, model %v", i, got, content)
			}
		}
	})
}

// contents is what the files hold by the model: the top standing write's
// content, or the initial one. Contents come from the disk history the
// model recorded: the last write of each standing top.
func (m *undoModel) contents(_ []*mwrite) map[string]string {
	out := map[string]string{}
	for f, c := range m.initial {
		out[f] = c
		if w := m.top(f); w != nil {
			out[f] = m.after[w.id+"\x00"+f]
		}
	}
	return out
}

// Two agents write and revert the same files at the same time: every call
// is a success or a refusal (REVERT_CONFLICT, or PATCH_CONFLICT when the
// digest check caught a write whose receipt was not stored yet), and afterwards a cascade
// revert of the first write brings every file back, which needs an
// unbroken chain of receipts per file (no write lost or hidden).
func TestUndoConcurrentAgentsKeepTheChain(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{"a": "a0\n", "b": "b0\n"}
	h, repo, root := undoHarness(t, harness.Config{}, files)
	first, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: repo, RequestID: undoID("first"),
		Operations: []patch.Op{{Op: "write", Path: "a", Content: "a1\n"}, {Op: "write", Path: "b", Content: "b1\n"}}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []string
			for i := 0; i < 12; i++ {
				f := []string{"a", "b"}[(i+g)%2]
				ops := []patch.Op{{Op: "write", Path: f, Content: fmt.Sprintf("%s g%d #%d\n", f, g, i)}}
				if i%3 == 0 {
					ops = append(ops, patch.Op{Op: "write", Path: []string{"b", "a"}[(i+g)%2], Content: fmt.Sprintf("both g%d #%d\n", g, i)})
				}
				r, err := h.ApplyPatch(ctx, harness.ApplyPatchArgs{RepoID: repo, RequestID: undoID("c"), Operations: ops, WaitMs: 5000})
				if err != nil {
					errc <- err
					return
				}
				mine = append(mine, r.ReceiptID)
				if i%4 == 3 {
					_, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: mine[len(mine)-1], RequestID: undoID("cr"), WaitMs: 5000})
					// PATCH_CONFLICT: the other agent's write released its lease
					// and its receipt was not stored yet; the digest check
					// refused rather than restore over it.
					if code := errs.CodeOf(err); err != nil && code != errs.RevertConflict && code != errs.PatchConflict {
						errc <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("concurrent call: %v", err)
	}
	if _, err := h.Revert(ctx, harness.RevertArgs{RepoID: repo, ReceiptID: first.ReceiptID, RequestID: undoID("all"), Cascade: true}); err != nil {
		t.Fatalf("cascade revert of everything: %v", err)
	}
	if got := readAll(t, root, "a", "b"); !mapsEqual(got, files) {
		t.Fatalf("after reverting everything: %v, want %v", got, files)
	}
}
