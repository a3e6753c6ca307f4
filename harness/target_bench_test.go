package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

// BenchmarkTargetReadFile is a warm in-process target_read_file of a small
// file: the counterpart of BenchmarkReadFileWarm (the goal: within 2× of
// it; a target adds a root identity check per call).
func BenchmarkTargetReadFile(b *testing.B) {
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true, LoopThreshold: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close(context.Background()) })
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# bench\nhello world\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	r, err := h.RegisterTarget(ctx, harness.TargetRegisterArgs{Path: dir})
	if err != nil {
		b.Fatal(err)
	}
	args := harness.TargetReadFileArgs{TargetID: r.TargetID, Path: "README.md"}
	if _, err := h.TargetReadFile(ctx, args); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.TargetReadFile(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}
