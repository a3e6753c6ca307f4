package runtime

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/persistence"
	"github.com/harnessd/harnessd/supervisors"
)

// treeOrder is the start order the tree literal documents (tree.go).
var treeOrder = []string{
	supervisors.LedgerName, supervisors.DeadlocksName, supervisors.RegistryName, supervisors.AuditName,
	supervisors.LanesName, supervisors.ChecksName, supervisors.JobsName, supervisors.RunsName, supervisors.TargetsName,
}

// startedRuntime is a runtime over an in-memory store, started with no
// runners (nothing here runs a check, a lane step or a job). Its cleanup
// closes it unless the test did, and then checks that no goroutine of the
// runtime outlived it.
type startedRuntime struct {
	*Runtime
	closed bool
}

func startRuntime(t *testing.T) *startedRuntime {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	st, err := persistence.Open(persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r, err := New(Config{Store: st, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := &startedRuntime{Runtime: r}
	t.Cleanup(func() {
		if !s.closed {
			if err := r.Close(); err != nil {
				t.Error(err)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Start(ctx, Runners{}); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *startedRuntime) close(t *testing.T) {
	t.Helper()
	s.closed = true
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// childNames returns the names of the tree literal's children, in order.
func childNames(spec supervisors.Spec) []string {
	var names []string
	for _, c := range spec.Children {
		names = append(names, c.Name)
	}
	return names
}

// The tree literal is the documented order, each child once, with a typed
// restart window; every client the runtime hands out talks to one of its
// children.
func TestTreeLiteral(t *testing.T) {
	spec := tree(supervisors.Deps{})
	if got := childNames(spec); !slices.Equal(got, treeOrder) {
		t.Fatalf("children %q, want %q", got, treeOrder)
	}
	if spec.Intensity <= 0 || spec.Period < time.Second {
		t.Errorf("restart window %d in %s, want a real one", spec.Intensity, spec.Period)
	}
	for _, c := range spec.Children {
		if c.Props == nil {
			t.Errorf("child %s has no props", c.Name)
		}
	}
	st, err := persistence.Open(persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	clients := map[string]*actor.PID{
		"Registry": r.Registry.pid, "Ledger": r.Ledger.(actorLedger).pid, "Audit": r.Audit.(actorAudit).pid,
		"Jobs": r.Jobs.pid, "Checks": r.Checks.pid, "Runs": r.Runs.pid, "Targets": r.Targets.pid,
	}
	for name, pid := range clients {
		found := false
		for _, child := range treeOrder {
			if pid.Equal(supervisors.ChildPID(r.root, child)) {
				found = true
			}
		}
		if !found {
			t.Errorf("client %s talks to %s, which is no child of the tree", name, pid.Id)
		}
	}
}

// Start spawns every child of the literal under the root (the root counts
// each once); Close drains them in reverse start order, each after the
// one started after it has stopped.
func TestTreeStartsInOrderAndDrainsInReverse(t *testing.T) {
	r := startRuntime(t)
	st := r.Status(context.Background())
	for _, name := range treeOrder {
		if st.Actors[name] != 1 {
			t.Errorf("status counts %d of %s, want 1 (actors %v)", st.Actors[name], name, st.Actors)
		}
	}
	if st.Actors["supervisor"] != 1 {
		t.Errorf("status counts %d root supervisors, want 1", st.Actors["supervisor"])
	}

	// A watcher outside the tree sees the children stop. Its Watch messages
	// are system messages, handled before the Poison the drain sends.
	stopped := make(chan string, len(treeOrder))
	watched := make(chan struct{})
	props := actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *actor.Started:
			for _, name := range treeOrder {
				ctx.Watch(supervisors.ChildPID(r.root, name))
			}
			close(watched)
		case *actor.Terminated:
			stopped <- m.Who.Id
		}
	})
	r.system.Root.Spawn(props)
	<-watched
	r.close(t)
	want := make([]string, len(treeOrder))
	for i, name := range treeOrder {
		want[len(treeOrder)-1-i] = supervisors.ChildPID(r.root, name).Id
	}
	var got []string
	for range treeOrder {
		select {
		case id := <-stopped:
			got = append(got, id)
		case <-time.After(10 * time.Second):
			t.Fatalf("stopped so far %q, want %q", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("children stopped in the order %q, want the reverse of the start order %q", got, want)
	}
}

// Close without Start releases what New made (the temp data dir) and
// spawns nothing.
func TestCloseWithoutStart(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	st, err := persistence.Open(persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without a store succeeded")
	}
	r, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	dir := r.DataDir()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the temp data dir %s after Close: %v, want it removed", dir, err)
	}
}
