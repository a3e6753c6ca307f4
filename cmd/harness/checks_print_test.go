package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/messages"
)

// TestPrintCheckNamesWhereItRan: a local run names its process and
// checkout; a fleet run names the node that ran it, its run and token.
func TestPrintCheckNamesWhereItRan(t *testing.T) {
	cases := []struct {
		name string
		r    harness.RunCheckResult
		want string
	}{
		{"local", harness.RunCheckResult{Passed: true, Path: "fast", OriginalRun: harness.OriginalRun{Pid: 42, RepoID: "repo_1"}},
			"PASS  ran on the fast path (pid 42, repo_1,"},
		{"fleet joined", harness.RunCheckResult{Passed: true, Joined: true, Path: "fast", OriginalRun: harness.OriginalRun{RepoID: "repo_9"},
			Fleet: &messages.FleetRun{RunID: "fr-1", Node: "n2", Token: 9, Source: "joined"}},
			"PASS  joined a run in flight on the fast path (fleet run fr-1, node n2, token 9,"},
		{"fleet reused, a node name to escape", harness.RunCheckResult{Passed: true, Reused: true, Path: "fast",
			Fleet: &messages.FleetRun{RunID: "fr-1", Node: "n\x1b[31m2", Token: 9, Source: "reused"}},
			"PASS  reused evidence on the fast path (fleet run fr-1, node n\\x1b[31m2, token 9,"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			printCheck(&b, &c.r)
			if !strings.HasPrefix(b.String(), c.want) {
				t.Fatalf("got %q, want it to start with %q", b.String(), c.want)
			}
		})
	}
}
