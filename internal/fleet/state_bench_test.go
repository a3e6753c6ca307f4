package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/internal/worktree"
)

// typicalDirty makes a repository of 2,000 source files (about 1.5 KiB
// each) with a typical agent's uncommitted work on top: 20 files
// changed, 2 deleted, 5 new untracked files.
func typicalDirty(b *testing.B) (string, string) {
	b.Helper()
	files := map[string]string{}
	line := strings.Repeat("x", 60)
	for i := range 2000 {
		files[fmt.Sprintf("pkg%02d/file%04d.go", i%40, i)] = fmt.Sprintf("package pkg%02d\n\n// %d\n", i%40, i) + strings.Repeat(line+"\n", 24)
	}
	root := testutil.Repo(b, files)
	commit := testutil.Git(b, root, "rev-parse", "HEAD")
	for i := range 20 {
		name := fmt.Sprintf("pkg%02d/file%04d.go", i%40, i*7)
		testutil.WriteFile(b, root, name, files[name]+"// an agent's change\nfunc Changed() {}\n")
	}
	for _, i := range []int{3, 5} {
		if err := os.Remove(filepath.Join(root, fmt.Sprintf("pkg%02d/file%04d.go", i%40, i))); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 5 {
		testutil.WriteFile(b, root, fmt.Sprintf("pkg00/new%d.go", i), "package pkg00\n\n"+strings.Repeat(line+"\n", 40))
	}
	return root, commit
}

// BenchmarkJobState: shipping a typical dirty state at job_start
// (capture, encode, tree id) and rebuilding it at takeover on another
// clone (decode, tree id, worktree with the state applied); reports the
// blob's size.
func BenchmarkJobState(b *testing.B) {
	ctx := context.Background()
	g := &gitx.Git{}
	root, commit := typicalDirty(b)
	other := filepath.Join(b.TempDir(), "other")
	testutil.Git(b, filepath.Dir(other), "clone", "-q", "--no-hardlinks", root, other)
	var blob []byte
	b.Run("ship", func(b *testing.B) {
		for b.Loop() {
			st, err := CaptureState(ctx, g, root, commit, worktree.Skip{})
			if err != nil {
				b.Fatal(err)
			}
			if blob, err = EncodeState(st); err != nil {
				b.Fatal(err)
			}
			if _, err := StateTree(ctx, g, root, commit, st); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(blob)), "blob-bytes")
	})
	st, err := DecodeState(blob)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("verify", func(b *testing.B) { // at takeover, before any checkout
		for b.Loop() {
			st, err := DecodeState(blob)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := StateTree(ctx, g, other, commit, st); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The worktree with the state applied, and (the baseline) the plain
	// worktree every worktree job gets, made alternately.
	dir := b.TempDir()
	var made, plain []time.Duration
	for i := range 8 {
		for _, withState := range []bool{true, false} {
			dest := filepath.Join(dir, fmt.Sprint(i, withState))
			t0 := time.Now()
			var err error
			if withState {
				err = MaterializeState(ctx, g, other, commit, dest, st)
			} else {
				_, err = worktree.Create(ctx, g, other, dest)
			}
			if err != nil {
				b.Fatal(err)
			}
			if withState {
				made = append(made, time.Since(t0))
			} else {
				plain = append(plain, time.Since(t0))
			}
			if err := worktree.Remove(ctx, g, other, dest); err != nil {
				b.Fatal(err)
			}
		}
	}
	slices.Sort(made)
	slices.Sort(plain)
	b.Logf("worktree with the state applied: median %s; a plain worktree of the commit: median %s (8 each, alternating)",
		made[len(made)/2].Round(time.Millisecond), plain[len(plain)/2].Round(time.Millisecond))
}
