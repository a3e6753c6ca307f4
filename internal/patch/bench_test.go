package patch

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkApplySmallReplace measures one replace in a 2 KiB file, with and
// without fsync.
func BenchmarkApplySmallReplace(b *testing.B) {
	for _, bc := range []struct {
		name   string
		noSync bool
	}{{"fsync", false}, {"nosync", true}} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			content := strings.Repeat("0123456789abcdef", 127) + "MARKER-A-MARKER\n"
			writeFile(b, dir, "pkg/file.go", content, 0o644)
			r := testRoot{dir}
			ops := [2][]Op{
				{{Op: OpReplace, Path: "pkg/file.go", OldText: "MARKER-A", NewText: "MARKER-B"}},
				{{Op: OpReplace, Path: "pkg/file.go", OldText: "MARKER-B", NewText: "MARKER-A"}},
			}
			o := Options{NoSync: bc.noSync, Fence: func() error { return nil }}
			ctx := context.Background()
			b.SetBytes(int64(len(content)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := Apply(ctx, r, ops[i%2], o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDigest measures Digest of a 2 KiB file.
func BenchmarkDigest(b *testing.B) {
	dir := b.TempDir()
	writeFile(b, dir, "f", strings.Repeat("x", 2048), 0o644)
	p := filepath.Join(dir, "f")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Digest(p); err != nil {
			b.Fatal(err)
		}
	}
}
