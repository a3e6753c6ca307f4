package harness_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/internal/testutil"
)

// fleetNode opens a Harness on a data dir of its own joined to the etcd
// at endpoint as node name.
func fleetNode(t *testing.T, endpoint, name string) *harness.Harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := harness.Open(ctx, harness.Config{DataDir: t.TempDir(), StoreReserve: -1,
		Fleet: harness.FleetConfig{Endpoints: []string{endpoint}, Node: name, TTL: 2 * time.Second}})
	if err != nil {
		t.Fatalf("open node %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close node %s: %v", name, err)
		}
	})
	return h
}

// TestFleetCheckRunsOnceAcrossNodes: two nodes of one fleet, each with
// its own clone of the same content, ask for one check concurrently:
// one process fleet-wide, every answer names the same run, and a later
// call answers from the fleet's evidence.
func TestFleetCheckRunsOnceAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	counter := fakeGo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcd, err := fleet.StartEmbedded(ctx, fleet.EmbedConfig{Name: "e1", Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close) // after the nodes' Close (cleanups run last first)
	nodes := []*harness.Harness{fleetNode(t, etcd.ClientURL(), "a"), fleetNode(t, etcd.ClientURL(), "b")}
	files := map[string]string{
		"go.mod":        "module example.com/demo\n\ngo 1.22\n",
		"pkg/a.go":      "package pkg\n\nfunc A() int { return 1 }\n",
		"pkg/a_test.go": "package pkg\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n",
	}
	ids := make([]string, len(nodes))
	for i, h := range nodes {
		r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: testutil.Repo(t, files)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = r.ID
	}

	const perNode = 6
	results := make([]*harness.RunCheckResult, 2*perNode)
	errList := make([]error, len(results))
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			n := i % 2
			results[i], errList[i] = nodes[n].RunCheck(ctx, harness.RunCheckArgs{RepoID: ids[n], Argv: focusedCheck})
		})
	}
	wg.Wait()
	counter.see(results...)
	if got := runs(t, counter); got != 1 {
		t.Fatalf("%d processes ran the check fleet-wide, want 1", got)
	}
	var runID string
	for i, r := range results {
		if errList[i] != nil {
			t.Fatalf("call %d: %v", i, errList[i])
		}
		if !r.Passed || !r.Shared || r.Fleet == nil {
			t.Fatalf("call %d: passed %v shared %v (%v) fleet %+v: want a shared pass with its fleet run", i, r.Passed, r.Shared, r.NotShared, r.Fleet)
		}
		if runID == "" {
			runID = r.Fleet.RunID
		}
		if r.Fleet.RunID != runID || r.Fleet.Token <= 0 {
			t.Fatalf("call %d names run %s (token %d), call 0 run %s", i, r.Fleet.RunID, r.Fleet.Token, runID)
		}
		if r.Identity != results[0].Identity {
			t.Fatalf("call %d: identity %s, call 0 %s: the clones differ", i, r.Identity, results[0].Identity)
		}
	}

	// A third node joins later: it answers from the fleet's evidence.
	late := fleetNode(t, etcd.ClientURL(), "c")
	r, err := late.RegisterRepository(ctx, harness.RegisterArgs{Path: testutil.Repo(t, files)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := late.RunCheck(ctx, harness.RunCheckArgs{RepoID: r.ID, Argv: focusedCheck})
	if err != nil {
		t.Fatal(err)
	}
	counter.see(got)
	if !got.Reused || got.Fleet == nil || got.Fleet.Source != "reused" || got.Fleet.RunID != runID || got.Stdout != results[0].Stdout {
		t.Fatalf("late node: reused %v fleet %+v stdout %q: want the fleet's evidence of run %s (%q)", got.Reused, got.Fleet, got.Stdout, runID, results[0].Stdout)
	}
	if n := runs(t, counter); n != 1 {
		t.Fatalf("%d runs after the late call, want still 1", n)
	}

	st, err := late.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Fleet == nil || st.Fleet.Node != "c" || st.Fleet.State != "live" || len(st.Fleet.Members) != 3 {
		t.Fatalf("status fleet %+v: want node c live among 3 members", st.Fleet)
	}
}

// TestFleetKeyRefusedWhenOthersMayReadIt: the fleet key is the proof a
// node recorded a piece of evidence; a key file others may read, or one
// too short, is refused before the node joins (no etcd is asked).
func TestFleetKeyRefusedWhenOthersMayReadIt(t *testing.T) {
	cases := []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"readable by others", "0123456789abcdef0123456789abcdef", 0o644, "chmod 600"},
		{"too short", "short", 0o600, "at least 16"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(harness.FleetKeyPath(dir), []byte(c.content), c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(harness.FleetKeyPath(dir), c.mode); err != nil {
				t.Fatal(err)
			}
			_, err := harness.Open(context.Background(), harness.Config{DataDir: dir, StoreReserve: -1,
				Fleet: harness.FleetConfig{Endpoints: []string{"http://127.0.0.1:1"}, Node: "a"}})
			if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open = %v, want INVALID_ARGUMENT saying %q", err, c.want)
			}
		})
	}
}
