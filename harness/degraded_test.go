package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// With the sandbox forced off, nothing is confined and status says so, but
// everything the classifier and the path checks know is still refused: the
// degraded mode is the pre-sandbox wall, not no wall.
func TestSandboxOffStillRefusesWhatTheClassifierKnows(t *testing.T) {
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{InMemory: true, Sandbox: "off", LoopThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	outside := t.TempDir()
	testutil.WriteFile(t, outside, "file", "outside-value-7Qx\n")
	root := testutil.Repo(t, map[string]string{"README.md": "hi\n", ".env": "TOKEN=degraded-secret-91k\n"})
	reg, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	id := reg.ID

	st, err := h.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range st.Sandbox {
		if l.Mode != "none" || len(l.Weakened) == 0 {
			t.Fatalf("status with the sandbox off: %+v, want mode none with what that weakens", l)
		}
	}

	marker := filepath.Join(outside, "marker")
	commands := []struct {
		argv []string
		want errs.Code
	}{
		{[]string{"cat", ".env"}, errs.SecretPathDenied},
		{[]string{"cat", filepath.Join(outside, "file")}, errs.PathOutsideRoot},
		{[]string{"sh", "-c", "cat .env"}, errs.SecretPathDenied},
		{[]string{"touch", marker}, ""},                  // any refusal
		{[]string{"sh", "-c", "echo x > " + marker}, ""}, // any refusal
		{[]string{"rm", "-rf", "/"}, errs.RouteRejected}, // destructive
		{[]string{"git", "push", "origin", "main"}, errs.RouteDurableRequired},
		{[]string{"git", "push", "--mirror", "origin"}, errs.RouteRejected},
		{[]string{"date", "-f.env"}, errs.SecretPathDenied},
		{[]string{"sh", "-c", "base64 -w0 .en?"}, errs.SecretPathDenied},
		{[]string{"rg", "-uuu", "-g*", "degraded"}, errs.SecretPathDenied},
	}
	for _, c := range commands {
		_, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: c.argv})
		if err == nil {
			t.Errorf("run_command %q ran with the sandbox off", c.argv)
			continue
		}
		if c.want != "" && errs.CodeOf(err) != c.want {
			t.Errorf("run_command %q: %v, want %s", c.argv, err, c.want)
		}
		if strings.Contains(err.Error(), "degraded-secret") || strings.Contains(err.Error(), "outside-value") {
			t.Errorf("run_command %q leaked in its error: %v", c.argv, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused command wrote its marker")
	}
	// Unconfined, the Durable Path takes no shell script and no unknown
	// command; argv paths are checked as on the Fast Path.
	jobs := []struct {
		argv []string
		want errs.Code
	}{
		{[]string{"sh", "-c", "trap '' TERM; sleep 1"}, errs.RouteRejected},
		{[]string{"cat", filepath.Join(outside, "file")}, errs.PathOutsideRoot},
		{[]string{"cat", ".env"}, errs.SecretPathDenied},
		{[]string{"rm", "-rf", "/"}, errs.RouteRejected},
	}
	for i, j := range jobs {
		_, err := h.JobStart(ctx, harness.JobStartArgs{RepoID: id, Argv: j.argv, RequestID: "degraded-" + string(rune('a'+i))})
		if errs.CodeOf(err) != j.want {
			t.Errorf("job_start %q with the sandbox off: %v, want %s", j.argv, err, j.want)
		}
	}
	// A read-only command still works, and its effects are still checked
	// by the two snapshots.
	r, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: []string{"cat", "README.md"}})
	if err != nil || r.Stdout.Text != "hi\n" || r.TreeChanged {
		t.Fatalf("read-only command with the sandbox off: %+v, %v", r, err)
	}
	// A flood is bounded by the runner's watchdog.
	flood := "for i in $(seq 200); do sleep 5 & done; wait"
	fr, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: []string{"sh", "-c", flood}, TimeoutMs: 20000})
	if err == nil && !strings.Contains(strings.Join(fr.Warnings, " "), "more processes") {
		t.Fatalf("a flood of 200 sleeps ran to the end with the sandbox off: %+v", fr)
	}
}
