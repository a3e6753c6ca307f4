package provenance_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/ops/provenance"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the test binary is the launcher of the harness's confined processes
	goleak.VerifyTestMain(m)
}

// policyB differs from the first policy ("version: 1"), so it has another
// digest.
const policyB = `version: 1
rules:
  - id: ask-ls-tree
    tools: [run_command]
    argv_prefix: [git, ls-tree]
    decision: ask
    justification: "someone should look first"
`

// oldPolicyCommit opens a harness whose audit log holds the load of a
// first policy, then fill more entries, then the load of a second, current
// one; its repository's HEAD names the first policy (and a receipt this
// store never had, so commit_verify has no audit entry of the write to
// compare with and asks the log which policies were loaded).
func oldPolicyCommit(tb testing.TB, fill int) (h *harness.Harness, repoID, root, oldDigest string) {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	h, err := harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = h.Close(ctx) })
	old, err := h.ReloadPolicy(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	a := h.Runtime().Audit
	for i := range fill {
		a.Append(messages.AuditEntry{Kind: audit.KindMutation, Operation: "apply_patch", Outcome: "succeeded",
			RequestID: "fill-" + strconv.Itoa(i), Actor: "agent"})
	}
	if err := os.WriteFile(pol, []byte(policyB), 0o600); err != nil {
		tb.Fatal(err)
	}
	cur, err := h.ReloadPolicy(ctx)
	if err != nil || cur.Digest == old.Digest {
		tb.Fatalf("reload: %+v, %v; want a digest other than %s", cur, err, old.Digest)
	}
	if _, err := h.AuditVerify(ctx); err != nil { // durable, and the chain check is warm
		tb.Fatal(err)
	}
	root = testutil.Repo(tb, map[string]string{"a.txt": "a\n"})
	reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		tb.Fatal(err)
	}
	testutil.WriteFile(tb, root, "a.txt", "b\n")
	testutil.Git(tb, root, "commit", "-q", "-am", fmt.Sprintf("change\n\nHarnessd-Receipt: r-elsewhere\nHarnessd-Repo: %s\nHarnessd-Policy: %s\n", reg.ID, old.Digest))
	return h, reg.ID, root, old.Digest
}

// policyCheck returns commit_verify's policy check of HEAD.
func policyCheck(tb testing.TB, h *harness.Harness, repoID string) provenance.Check {
	tb.Helper()
	r, err := h.CommitVerify(context.Background(), harness.CommitVerifyArgs{RepoID: repoID, Rev: "HEAD"})
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range r.Checks {
		if c.Name == "policy" {
			return c
		}
	}
	tb.Fatalf("no policy check in %+v", r.Checks)
	return provenance.Check{}
}

// A commit naming a policy that is no longer the current one verifies it
// against the log's policy loads, found by digest; a digest never loaded
// fails.
func TestCheckPolicyFindsAnOlderLoad(t *testing.T) {
	h, repo, root, old := oldPolicyCommit(t, 50)
	if c := policyCheck(t, h, repo); !c.OK || !strings.Contains(c.Detail, old+" was loaded (audit entry") {
		t.Fatalf("policy check = %+v; want %s found loaded", c, old)
	}
	never := "sha256:" + strings.Repeat("ab", 32)
	testutil.Git(t, root, "commit", "-q", "--amend", "-m", fmt.Sprintf("change\n\nHarnessd-Receipt: r-elsewhere\nHarnessd-Policy: %s\n", never))
	if c := policyCheck(t, h, repo); c.OK || !strings.Contains(c.Detail, "neither the current policy nor one the audit log records as loaded") {
		t.Fatalf("policy check of a digest never loaded = %+v; want it failed", c)
	}
}

// BenchmarkCheckPolicy is commit_verify of a commit naming a policy that
// is no longer the current one, the load of that policy followed by 10 or
// 10,000 audit entries: the load is read by digest through the audit
// index ("by-digest"; its query alone: "query-by-digest"), not found by a
// walk of the log's policy loads as before ("scan", the query checkPolicy
// made before, timed alone).
func BenchmarkCheckPolicy(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		h, repo, _, old := oldPolicyCommit(b, n)
		b.Run(fmt.Sprintf("by-digest/%d-entries", n), func(b *testing.B) {
			for range b.N {
				if c := policyCheck(b, h, repo); !c.OK {
					b.Fatalf("policy check = %+v", c)
				}
			}
		})
		b.Run(fmt.Sprintf("query-by-digest/%d-entries", n), func(b *testing.B) {
			ctx := context.Background()
			for range b.N {
				r, err := h.Runtime().Audit.Query(ctx, messages.AuditQuery{Kind: audit.KindPolicyLoad, PolicyDigest: old, Limit: 100})
				if err != nil || len(r.Entries) != 1 {
					b.Fatalf("by digest = %d entries, %v", len(r.Entries), err)
				}
			}
		})
		b.Run(fmt.Sprintf("scan/%d-entries", n), func(b *testing.B) {
			ctx := context.Background()
			for range b.N {
				r, err := h.Runtime().Audit.Query(ctx, messages.AuditQuery{Kind: audit.KindPolicyLoad, Limit: 1000})
				if err != nil || len(r.Entries) == 0 || r.Entries[0].PolicyDigest != old {
					b.Fatalf("scan = %d entries, %v", len(r.Entries), err)
				}
			}
		})
	}
}
