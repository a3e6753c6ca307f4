package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// mountTmpfs mounts a tmpfs of size bytes at a new directory, or skips the
// test when that is not allowed (not root): CI runs as root.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (CI runs as root); skipped")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v); skipped", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillUp writes a filler file until the file system is full, and returns
// its path (remove it to free the space).
func fillUp(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := bytes.Repeat([]byte{'f'}, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	small := buf[:512]
	for {
		if _, err := f.Write(small); err != nil {
			break
		}
	}
	return path
}

// The data dir on an 8 MiB tmpfs, filled up: writes answer STORAGE_FULL
// (never a SIGBUS that drops every session), reads keep working, and
// once space returns writes work again without a restart.
func TestDiskFullIsAnErrorNotACrash(t *testing.T) {
	dataDir := mountTmpfs(t, 8<<20)
	repo := testutil.Repo(t, map[string]string{"a.txt": "one\n"})
	a := newAtkAt(t, dataDir)
	id := a.register(t, repo)
	a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": "before-full",
		"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "one", "new_text": "two"}}}).mustWork(t)

	filler := fillUp(t, dataDir)
	for i := 0; i < 2; i++ {
		o := a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": fmt.Sprintf("full-%d", i),
			"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "two", "new_text": "three"}}})
		if o.code != "STORAGE_FULL" {
			t.Fatalf("apply_patch on a full data dir = %s, want STORAGE_FULL", o)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(got) != "two\n" {
		t.Fatalf("a refused write changed the file: %q", got)
	}
	r := a.tool(t, "read_file", map[string]any{"repo_id": id, "path": "a.txt"}).mustWork(t)
	if !strings.Contains(r.raw, "two") {
		t.Fatalf("read on a full disk = %s", r)
	}
	select {
	case <-a.d.done:
		t.Fatalf("the daemon died on a full disk: %v\n%s", a.d.err, a.d.stderr.String())
	default:
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": "full-0",
		"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "two", "new_text": "three"}}}).mustWork(t)
	if got, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(got) != "three\n" {
		t.Fatalf("after space returned the file is %q", got)
	}
}

// serveOnce runs `harnessd serve` on a data dir that must be refused and
// returns its exit error and stderr.
func serveOnce(t *testing.T, dataDir string) (string, error) {
	t.Helper()
	cmd := exec.Command(harnessdBin, "serve", "--data-dir", dataDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return stderr.String(), err
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("harnessd started on a damaged store:\n%s", stderr.String())
		return "", nil
	}
}

// A damaged store is refused at start with a message that names the file
// and the recovery; it never starts empty and never panics.
func TestDamagedStoreRefusedAtStart(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, store string)
		names  string
	}{
		{"missing MANIFEST", func(t *testing.T, store string) {
			if err := os.Remove(filepath.Join(store, "MANIFEST")); err != nil {
				t.Fatal(err)
			}
		}, "MANIFEST"},
		{"garbage in a table", func(t *testing.T, store string) {
			ssts, _ := filepath.Glob(filepath.Join(store, "*.sst"))
			if len(ssts) == 0 {
				t.Fatal("no table")
			}
			b, _ := os.ReadFile(ssts[0])
			for i := 64; i < len(b)/2; i++ {
				b[i] ^= 0xa5
			}
			if err := os.WriteFile(ssts[0], b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, ".sst"},
		{"truncated table", func(t *testing.T, store string) {
			ssts, _ := filepath.Glob(filepath.Join(store, "*.sst"))
			if len(ssts) == 0 {
				t.Fatal("no table")
			}
			st, _ := os.Stat(ssts[0])
			if err := os.Truncate(ssts[0], st.Size()/3); err != nil {
				t.Fatal(err)
			}
		}, ".sst"},
		{"garbled KEYREGISTRY", func(t *testing.T, store string) {
			if err := os.WriteFile(filepath.Join(store, "KEYREGISTRY"), bytes.Repeat([]byte{0x42}, 40), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "KEYREGISTRY"},
		{"store emptied", func(t *testing.T, store string) {
			if err := os.RemoveAll(store); err != nil {
				t.Fatal(err)
			}
		}, "store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			repo := testutil.Repo(t, map[string]string{"a.txt": "one\n"})
			a := newAtkAt(t, dataDir)
			id := a.register(t, repo)
			a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": "acked",
				"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "one", "new_text": "two"}}}).mustWork(t)
			stopDaemonOf(t, dataDir) // a clean stop leaves the data in tables
			tt.damage(t, filepath.Join(dataDir, "store"))

			stderr, err := serveOnce(t, dataDir)
			if err == nil {
				t.Fatalf("harnessd exited 0 on a damaged store:\n%s", stderr)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Fatalf("harnessd panicked on a damaged store:\n%s", stderr)
			}
			for _, w := range []string{"store damaged", tt.names, "store restore BACKUP", "store reset --yes"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("the refusal does not say %q:\n%s", w, stderr)
				}
			}
			// The recovery it names works: reset, then the daemon starts
			// and its fencing tokens stay above the ones issued before.
			out, err := exec.Command(harnessBin, "--data-dir", dataDir, "store", "reset", "--yes").CombinedOutput()
			if err != nil {
				t.Fatalf("harness store reset: %v\n%s", err, out)
			}
			b := newAtkAt(t, dataDir)
			id = b.register(t, repo)
			o := b.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": "after-reset",
				"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "two", "new_text": "three"}}}).mustWork(t)
			if tok, _ := o.m["fencing_token"].(float64); tok <= 1 {
				t.Errorf("after a reset the first fencing token is %v: tokens went back", o.m["fencing_token"])
			}
		})
	}
}

// Removing the data dir under a running daemon stops it (it would ack
// writes that vanish while a second daemon starts on the same path).
func TestDataDirRemovedStopsTheDaemon(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	repo := testutil.Repo(t, map[string]string{"a.txt": "one\n"})
	a := newAtkAt(t, dataDir)
	id := a.register(t, repo)
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	// Writes after the removal are refused, never acknowledged.
	o := a.tool(t, "apply_patch", map[string]any{"repo_id": id, "request_id": "after-rm",
		"operations": []map[string]any{{"op": "replace", "path": "a.txt", "old_text": "one", "new_text": "two"}}})
	if !o.isErr && o.code == "" {
		t.Fatalf("a write after the data dir was removed was acknowledged: %s", o)
	}
	if err := a.d.wait(t, 15*time.Second); err == nil {
		t.Fatalf("the daemon exited 0 after losing its data dir:\n%s", a.d.stderr.String())
	}
	if !strings.Contains(a.d.stderr.String(), "data dir is gone") {
		t.Errorf("the daemon did not say why it stopped:\n%s", a.d.stderr.String())
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(got) != "one\n" {
		t.Fatalf("a write after the data dir was removed reached the work tree: %q", got)
	}
	// A second daemon starts on the path, alone.
	b := newAtkAt(t, dataDir)
	if _, err := os.Stat(daemon.PathsOf(dataDir).Lock); err != nil {
		t.Fatal(err)
	}
	b.register(t, repo)
}

// The lock file replaced under a running daemon (another daemon could
// lock the new one) stops it too.
func TestLockFileReplacedStopsTheDaemon(t *testing.T) {
	dataDir := t.TempDir()
	a := newAtkAt(t, dataDir)
	lock := daemon.PathsOf(dataDir).Lock
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.d.wait(t, 15*time.Second); err == nil {
		t.Fatalf("the daemon exited 0 after its lock file was replaced:\n%s", a.d.stderr.String())
	}
}
