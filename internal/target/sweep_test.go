package target

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// put writes rel under root with mtime at.
func put(t *testing.T, root, rel string, at time.Time) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("a copy a crash left\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

func exists(root, rel string) bool {
	_, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil
}

// Leftovers made as a crash leaves them (the exact pattern, written before
// the process started) are removed, in the tree and in the git dir's temp
// directory; a temp file of a write of this process, a user's files that
// only look alike, a directory with the pattern's name and anything
// elsewhere in .git are kept.
func TestSweepTempRemovesOnlyLeftovers(t *testing.T) {
	root := t.TempDir()
	start := time.Now().Add(-time.Minute)
	old := start.Add(-time.Hour)
	leftovers := []string{
		".a.txt.harnessd-tmp-123456",
		"sub/deep/.b.go.harnessd-tmp-0123456789abcdef",
		".git/harnessd-tmp/.c.txt.harnessd-tmp-9",
	}
	kept := []string{
		".fresh.txt.harnessd-tmp-42", // a write in flight (made after the start)
		".name.tmp",
		"x.harnessd-tmp",
		"x.harnessd-tmp-1", // no leading dot
		".x.harnessd-tmp-notes",
		".x.harnessd-tmp-",
		".y.harnessd-tmp-ABC",
		".z.harnessd-tmp-123456789012345678901", // 21 digits
		".git/objects/.o.harnessd-tmp-1",
		"plain.txt",
	}
	put(t, root, ".git/HEAD", old)
	for _, p := range leftovers {
		put(t, root, p, old)
	}
	for _, p := range kept {
		at := old
		if p == ".fresh.txt.harnessd-tmp-42" {
			at = time.Now()
		}
		put(t, root, p, at)
	}
	if err := os.Mkdir(filepath.Join(root, ".d.harnessd-tmp-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, ".d.harnessd-tmp-1")

	n, err := sweepTemp(root, start)
	if err != nil || n != len(leftovers) {
		t.Fatalf("sweep = %d, %v; want %d, nil", n, err, len(leftovers))
	}
	for _, p := range leftovers {
		if exists(root, p) {
			t.Errorf("leftover %s is still there", p)
		}
	}
	for _, p := range kept {
		if !exists(root, p) {
			t.Errorf("%s was removed: not a leftover of harnessd", p)
		}
	}
	if n, err := sweepTemp(root, start); n != 0 || err != nil {
		t.Fatalf("second sweep = %d, %v; want nothing to do", n, err)
	}
}

// SweepTemp keeps what this process writes and removes what an earlier
// one left; a root that is not there is an error, not a panic.
func TestSweepTempAgainstProcessStart(t *testing.T) {
	root := t.TempDir()
	put(t, root, ".before.harnessd-tmp-1", processStart.Add(-time.Hour))
	put(t, root, ".now.harnessd-tmp-2", time.Now())
	n, err := SweepTemp(root)
	if err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v; want 1", n, err)
	}
	ents, _ := os.ReadDir(root)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{".now.harnessd-tmp-2"}) {
		t.Fatalf("left %v", names)
	}
	if _, err := SweepTemp(filepath.Join(root, "gone")); err == nil {
		t.Fatal("sweep of a missing root = nil")
	}
}
