package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// verify-commit prints every check and exits 0 only when the commit
// verified; 1 when a check failed; 2 on a usage error (no daemon call).
func TestVerifyCommitExitCode(t *testing.T) {
	result := func(verified bool, failing string) string {
		checks := []map[string]any{{"name": "trailers", "ok": true, "detail": "6 Harnessd- trailers"}, {"name": "receipt", "ok": true, "detail": "receipt rcpt_1"}}
		if failing != "" {
			checks = append(checks, map[string]any{"name": failing, "ok": false, "detail": "b.txt: receipt create (none)→aa, commit create (none)→bb"})
		}
		b, _ := json.Marshal(map[string]any{"rev": "HEAD", "commit": "abc123", "verified": verified, "checks": checks, "trailers": []any{}})
		return string(b)
	}
	list := `{"repositories":[{"repo_id":"repo_cwd","checkout_id":"co","root":"/"}]}`

	ok := newAPIFake(t, map[string]string{"POST /v1/commit_verify": result(true, ""), "POST /v1/repository_list": list})
	code, out, errOut := cliRun(t, ok.dataDir, "verify-commit", "HEAD", "--repo", "repo_1")
	if code != exitOK || !strings.Contains(out, "ok   receipt") || !strings.Contains(out, "verified") || errOut != "" {
		t.Fatalf("verified commit: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if calls := ok.recorded(); len(calls) != 1 || !strings.Contains(calls[0].body, `"repo_id":"repo_1"`) || !strings.Contains(calls[0].body, `"rev":"HEAD"`) {
		t.Fatalf("calls = %+v", calls)
	}

	bad := newAPIFake(t, map[string]string{"POST /v1/commit_verify": result(false, "tree"), "POST /v1/repository_list": list})
	code, out, errOut = cliRun(t, bad.dataDir, "verify-commit", "HEAD")
	if code != exitFailed || !strings.Contains(out, "FAIL tree") || !strings.Contains(errOut, "failed verification: tree") {
		t.Fatalf("tampered commit: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Without --repo, the repository holding the current directory.
	if calls := bad.recorded(); len(calls) != 2 || calls[0].route != "POST /v1/repository_list" || !strings.Contains(calls[1].body, `"repo_id":"repo_cwd"`) {
		t.Fatalf("calls = %+v", calls)
	}
	code, out, _ = cliRun(t, bad.dataDir, "--json", "verify-commit", "HEAD", "--repo", "r")
	if code != exitFailed || !json.Valid([]byte(out)) {
		t.Fatalf("--json on a failed verification: exit %d, stdout %q, want one JSON document and exit 1", code, out)
	}

	if code, _, _ := cliRun(t, ok.dataDir, "verify-commit"); code != exitUsage {
		t.Fatalf("no REV: exit %d, want %d", code, exitUsage)
	}
}
