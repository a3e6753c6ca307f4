package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/testutil"
)

// checksPrivateTmp reports whether the sandbox gives checks a temp
// directory of their own here (Landlock or namespaces): without it no
// check's evidence is shared across checkouts.
func checksPrivateTmp() bool {
	k := sandbox.Probe()
	return k.LandlockABI > 0 || (k.UserNS && sandbox.Linked())
}

// scopeGo puts a fake `go` first on PATH whose `test` passes printing a
// token of its own run, and whose `version` answers like the toolchain,
// or fails when probeFails (the environment fingerprint's probe).
func scopeGo(t *testing.T, probeFails bool) *runCounter {
	t.Helper()
	bin := t.TempDir()
	t.Setenv("GOCACHE", t.TempDir())
	version := `echo "go version go1.26.0-fake linux/amd64"; exit 0`
	if probeFails {
		version = `echo "go: cannot find GOROOT directory" >&2; exit 1`
	}
	script := "#!/bin/sh\ncase \"$1\" in\nversion) " + version + " ;;\ntest) echo \"run $(cat /proc/sys/kernel/random/uuid)\"; echo ok; exit 0 ;;\nesac\nexit 2\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return &runCounter{file: filepath.Join(t.TempDir(), "none"), seen: map[string]bool{}}
}

// TestRunCheckScopeAcrossCheckouts is #35's evidence scope end to end:
// two checkouts (worktrees) of one repository; a check that passed in
// the first is reused by the second when the second is clean, the check
// declares bounded effects (no workspace writes, no network, a private
// temp directory) and its toolchain's fingerprint succeeded, and not
// when any one of them fails, although the identity is the same in both
// checkouts: only the scope keeps the evidence home.
func TestRunCheckScopeAcrossCheckouts(t *testing.T) {
	testutil.NeedSandbox(t, testutil.Landlock, checksPrivateTmp(), "checks get a private temp directory only from a confining sandbox")
	allowNetwork := `version: 1
rules:
  - id: checks-may-fetch
    tools: [run_check]
    argv_prefix: [go, test]
    decision: allow
    justification: "tests download modules"
`
	tests := []struct {
		name       string
		sandbox    string
		probeFails bool
		effects    []string
		dirty      bool   // both checkouts carry the same uncommitted file
		reused     bool   // the second checkout reuses the first's pass
		why        string // what not_shared says when not
	}{
		{name: "clean, bounded effects, toolchain probed", reused: true},
		{name: "the consumer checkout is not clean", dirty: true, why: "changes beyond HEAD"},
		{name: "the check declares network", effects: []string{"network"}, why: "declares network"},
		{name: "the check declares workspace writes", effects: []string{"workspace_write"}, why: "workspace_write"},
		{name: "the check shares the host's temp directory", sandbox: "off", why: "temp directory"},
		{name: "the toolchain probe failed", probeFails: true, why: "fingerprint failed: go"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			counter := scopeGo(t, tc.probeFails)
			cfg := harness.Config{DataDir: t.TempDir(), Sandbox: tc.sandbox}
			if err := os.WriteFile(filepath.Join(cfg.DataDir, "policy.yaml"), []byte(allowNetwork), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			h, err := harness.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := h.Close(context.Background()); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			root, id := checkFixture(t, h)
			wt := filepath.Join(t.TempDir(), "second")
			testutil.Git(t, root, "worktree", "add", "-q", "--detach", wt)
			second, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: wt})
			if err != nil {
				t.Fatal(err)
			}
			if tc.dirty {
				for _, dir := range []string{root, wt} {
					testutil.WriteFile(t, dir, "pkg/extra.go", "package pkg\n\nfunc Extra() int { return 3 }\n")
				}
			}
			args := harness.RunCheckArgs{RepoID: id, Argv: focusedCheck, Effects: tc.effects}
			first, err := h.RunCheck(ctx, args)
			if err != nil || !first.Passed || first.Reused {
				t.Fatalf("first checkout: %+v, %v; want a new passing run", first, err)
			}
			args.RepoID = second.ID
			other, err := h.RunCheck(ctx, args)
			if err != nil || !other.Passed {
				t.Fatalf("second checkout: %+v, %v; want a pass", other, err)
			}
			counter.see(first, other)
			if other.Identity != first.Identity {
				t.Fatalf("identities differ (%s, %s): the case tests nothing", first.Identity, other.Identity)
			}
			if tc.reused {
				if !first.Shared || !other.Shared || len(other.NotShared) != 0 || !other.Reused ||
					other.OriginalRun.RepoID != id || runs(t, counter) != 1 {
					t.Fatalf("got %+v (%d runs); want the first checkout's pass reused", other, runs(t, counter))
				}
				return
			}
			if other.Reused || other.Shared || first.Shared || other.OriginalRun.RepoID != second.ID || runs(t, counter) != 2 {
				t.Fatalf("got %+v (%d runs); want a run of the second checkout's own", other, runs(t, counter))
			}
			if !strings.Contains(strings.Join(other.NotShared, "\n"), tc.why) || len(other.NotShared) != 1 {
				t.Errorf("not_shared %q, want exactly one reason saying %q", other.NotShared, tc.why)
			}
			// The second checkout's own pass is evidence there.
			again, err := h.RunCheck(ctx, args)
			if err != nil || !again.Reused || again.OriginalRun.RepoID != second.ID {
				t.Fatalf("second checkout again: %+v, %v; want its own pass reused", again, err)
			}
		})
	}
}
