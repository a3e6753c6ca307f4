package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A directory put where a checkout was (a replaced repository) is held by
// another inode: the cached ruleset of the old one must not serve it.
func TestCarveStampNamesTheRootsInode(t *testing.T) {
	base := t.TempDir()
	root, other := filepath.Join(base, "repo"), filepath.Join(base, "other")
	for _, d := range []string{root, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	for _, d := range []string{root, other} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	p := Policy{Profile: Read, Root: root}
	before, _ := carveStamp(p, time.Now())
	if again, _ := carveStamp(p, time.Now()); again != before {
		t.Fatalf("the stamp of an unchanged root changed: %q then %q", before, again)
	}
	if err := os.Rename(root, filepath.Join(base, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, root); err != nil {
		t.Fatal(err)
	}
	if after, _ := carveStamp(p, time.Now()); after == before {
		t.Fatalf("a replaced root kept its stamp %q", before)
	}
}
