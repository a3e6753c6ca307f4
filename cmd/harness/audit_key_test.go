package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

// audit anchor --file appends one JSON line per call; verify --anchor @FILE
// sends the file's last anchor.
func TestAuditAnchorFileAndVerify(t *testing.T) {
	f := newAPIFake(t, map[string]string{
		"POST /v1/audit/anchor": `{"anchor":{"seq":7,"hash":"hmac-sha256:ab","key_id":"0011223344556677","at":"2026-12-02T05:00:00Z"}}`,
		"GET /v1/audit/verify":  `{"ok":false,"checked":5,"broken_seq":5,"broken_reason":"does not match the anchor"}`,
	})
	file := filepath.Join(t.TempDir(), "anchors")
	for range 2 {
		if code, out, errOut := cliRun(t, f.dataDir, "audit", "anchor", "--file", file); code != exitOK || !strings.Contains(out, `"seq":7`) {
			t.Fatalf("audit anchor: exit %d\n%s%s", code, out, errOut)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil || strings.Count(string(b), "\n") != 2 {
		t.Fatalf("anchor file = %q, %v; want two lines", b, err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("anchor file mode %v, want 0600", fi.Mode().Perm())
	}
	path, err := auditVerifyPath([]string{"--anchor", "@" + file})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(path)
	a, err := harness.ParseAuditAnchor(u.Query().Get("anchor"))
	if err != nil || a.Seq != 7 || a.Hash != "hmac-sha256:ab" {
		t.Fatalf("verify sends anchor %+v (%v), want seq 7", a, err)
	}
	// A broken chain exits non-zero and names the entry.
	if code, out, _ := cliRun(t, f.dataDir, "audit", "verify", "--anchor", "@"+file); code == exitOK || !strings.Contains(out, "BROKEN at entry 5") {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	if _, err := auditVerifyPath([]string{"--anchor", `{"seq":0}`}); err == nil {
		t.Error("an anchor without seq and hash was accepted")
	}
}
