package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testutil"
)

// mountExt4 mounts a fresh ext4 image of size bytes with
// errors=remount-ro at a new directory (a loop device), or skips the test
// when that is not possible (not root, no mkfs.ext4, no loop devices).
// CI runs as root.
func mountExt4(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting an ext4 loop image needs root (CI runs as root); skipped")
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("no mkfs.ext4 here; skipped")
	}
	base := t.TempDir()
	img, dir := filepath.Join(base, "disk.img"), filepath.Join(base, "mnt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v: %s; skipped", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop,errors=remount-ro", img, dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a loop image here (%v: %s); skipped", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// The data dir's file system goes read-only under the daemon (ext4 after
// an error, errors=remount-ro; here the kernel's own "abort" of the file
// system): writes answer STORAGE_UNAVAILABLE, never OK and never
// INTERNAL; reads keep working; and SIGTERM ends the daemon within its
// shutdown wait (Badger's flush into the read-only file system would
// retry forever: the store is left, as after a crash, and says so).
func TestReadOnlyDataDir(t *testing.T) {
	dataDir := mountExt4(t, 128<<20)
	repo := testutil.Repo(t, map[string]string{"a.txt": "one\n"})
	a := newAtkAt(t, dataDir, "--shutdown-wait", "5s")
	id := a.register(t, repo)
	a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": "before-ro",
		"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "one", "new_text": "two"}}}).mustWork(t)
	run := a.tool(t, "run_start", map[string]any{"goal": "read-only disk"}).mustWork(t)
	runID := run.str("run_id")
	if runID == "" {
		t.Fatalf("run_start = %s", run)
	}

	if out, err := exec.Command("mount", "-o", "remount,abort", dataDir).CombinedOutput(); err != nil {
		t.Skipf("this kernel cannot abort an ext4 file system (%v: %s); skipped", err, out)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "probe"), nil, 0o600); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("the aborted file system still takes writes (%v)", err)
	}
	for i, call := range []struct {
		name string
		args map[string]any
	}{
		{"apply_patch", map[string]any{"repo_id": id, "request_id": "ro-1",
			"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "two", "new_text": "three"}}}},
		{"run_stage", map[string]any{"run_id": runID, "stage": "plan", "status": "completed"}},
		{"run_start", map[string]any{"goal": "lost"}},
		{"apply_patch", map[string]any{"repo_id": id, "request_id": "ro-2",
			"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "two", "new_text": "four"}}}},
	} {
		o := a.tool(t, call.name, call.args)
		if o.code != "STORAGE_UNAVAILABLE" {
			t.Fatalf("call %d: %s on a read-only data dir = %s, want STORAGE_UNAVAILABLE", i, call.name, o)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(got) != "two\n" {
		t.Fatalf("a refused write changed the file: %q", got)
	}
	if r := a.tool(t, "read_file", map[string]any{"repo_id": id, "path": "a.txt"}).mustWork(t); !strings.Contains(r.raw, "two") {
		t.Fatalf("read_file on a read-only data dir = %s", r)
	}
	a.tool(t, "git_status", map[string]any{"repo_id": id}).mustWork(t)

	start := time.Now()
	if err := a.d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.d.done:
	case <-time.After(40 * time.Second):
		t.Fatalf("the daemon is alive 40s after SIGTERM on a read-only data dir\n%s", a.d.stderr.String())
	}
	took := time.Since(start)
	// The shutdown wait (5 s) bounds the operations; the actor tree's
	// drain and the store's close (15 s) come after it.
	if took > 30*time.Second {
		t.Fatalf("SIGTERM took %s", took)
	}
	if log := a.d.stderr.String(); !strings.Contains(log, "not flushed") && !strings.Contains(log, "did not close within") {
		t.Fatalf("the log does not say the store was left unflushed:\n%s", log)
	}
	t.Logf("SIGTERM on a read-only data dir: exited in %s (%v)", took, fmt.Sprint(a.d.err))
}

// The data dir's file system is frozen (fsfreeze, as a snapshot or a
// stalled device does) while a write waits on it: read_file, git_status
// and /healthz still answer at once (reads never wait on the store's
// disk), the write is never acknowledged while its store cannot take it,
// and after the thaw it lands exactly once (its retry replays), and
// SIGTERM ends the daemon.
func TestFrozenDataDir(t *testing.T) {
	dataDir := mountExt4(t, 128<<20)
	if _, err := exec.LookPath("fsfreeze"); err != nil {
		t.Skip("no fsfreeze here; skipped")
	}
	repo := testutil.Repo(t, map[string]string{"a.txt": "one\n"})
	a := newAtkAt(t, dataDir, "--shutdown-wait", "5s")
	id := a.register(t, repo)
	a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": "before-freeze",
		"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "one", "new_text": "two"}}}).mustWork(t)

	// The live index warm: its syncs raise a cookie in the data dir.
	eventually(t, "git_status from the live index", func() bool {
		return a.tool(t, "git_status", map[string]any{"repo_id": id}).mustWork(t).str("source") == "index"
	})

	// Registered after the mount's and the daemon's clean-ups, so it runs
	// before them: a frozen file system is never left behind.
	t.Cleanup(func() { _ = exec.Command("fsfreeze", "-u", dataDir).Run() })
	if out, err := exec.Command("fsfreeze", "-f", dataDir).CombinedOutput(); err != nil {
		t.Skipf("cannot freeze the loop file system (%v: %s); skipped", err, out)
	}
	frozen := true
	thaw := func() {
		if frozen {
			if out, err := exec.Command("fsfreeze", "-u", dataDir).CombinedOutput(); err != nil {
				t.Fatalf("fsfreeze -u: %v: %s", err, out)
			}
			frozen = false
		}
	}
	patch := map[string]any{"repo_id": id, "request_id": "frozen-1",
		"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "two", "new_text": "three"}}}
	write := make(chan out, 1)
	go func() { write <- a.tool(t, "apply_patch", patch) }()

	for round := range 3 {
		for _, call := range []struct {
			name string
			args map[string]any
		}{
			{"read_file", map[string]any{"repo_id": id, "path": "a.txt"}},
			{"git_status", map[string]any{"repo_id": id}},
		} {
			start := time.Now()
			o := a.tool(t, call.name, call.args)
			if took := time.Since(start); o.isErr || took > 5*time.Second {
				thaw()
				t.Fatalf("round %d: %s on a frozen data dir took %s: %s", round, call.name, took, o)
			}
			// The live index's sync cookie is in the data dir: it waits
			// at most a second for it, then answers by git, saying why.
			if call.name == "git_status" && (o.str("source") == "index" || !strings.Contains(o.str("index_reason"), "frozen or stalled")) {
				thaw()
				t.Fatalf("round %d: git_status on a frozen data dir = %s; want git's answer with the reason", round, o)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := a.bare.Healthy(ctx)
		cancel()
		if err != nil {
			thaw()
			t.Fatalf("round %d: /healthz on a frozen data dir: %v", round, err)
		}
	}
	select {
	case o := <-write:
		if !o.isErr {
			thaw()
			t.Fatalf("a write was acknowledged while its store was frozen: %s", o)
		}
		t.Logf("the write during the freeze answered %s", o.code)
	default:
		t.Log("the write waits for the thaw")
	}

	thaw()
	select {
	case <-write:
	case <-time.After(70 * time.Second):
		t.Fatal("the write did not end after the thaw")
	}
	r := a.tool(t, "apply_patch", patch).mustWork(t)
	if got, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(got) != "three\n" {
		t.Fatalf("after the thaw and the retry a.txt = %q, want the write once (%s)", got, r)
	}

	if err := a.d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.d.done:
	case <-time.After(40 * time.Second):
		t.Fatalf("the daemon is alive 40s after SIGTERM\n%s", a.d.stderr.String())
	}
}
