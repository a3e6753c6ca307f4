package checkid

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/gitx"
)

// benchDirs are removed by TestMain.
var benchDirs struct {
	mu   sync.Mutex // protects dirs
	dirs []string
}

var (
	bench10kOnce sync.Once
	bench10kDir  string
	bench10kErr  error
)

// bench10k returns a repository with 10,000 committed small files in nested
// directories and 5 dirty files, built once per test binary run.
func bench10k(b *testing.B) string {
	b.Helper()
	bench10kOnce.Do(func() {
		dir, err := os.MkdirTemp("", "checkid-bench-")
		if err != nil {
			bench10kErr = err
			return
		}
		benchDirs.mu.Lock()
		benchDirs.dirs = append(benchDirs.dirs, dir)
		benchDirs.mu.Unlock()
		if dir, err = filepath.EvalSymlinks(dir); err != nil {
			bench10kErr = err
			return
		}
		gitT(b, dir, "init", "-q")
		// Files dated an hour back, so the index is never "racily clean"
		// and status does not re-read them on every call.
		old := time.Now().Add(-time.Hour)
		for i := 0; i < 10000; i++ {
			rel := filepath.Join("d"+strconv.Itoa(i%20), "e"+strconv.Itoa(i%7), "f"+strconv.Itoa(i)+".go")
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				bench10kErr = err
				return
			}
			if err := os.WriteFile(p, []byte("package x\n\nvar V"+strconv.Itoa(i)+" = 1\n"), 0o644); err != nil {
				bench10kErr = err
				return
			}
			if err := os.Chtimes(p, old, old); err != nil {
				bench10kErr = err
				return
			}
		}
		commitAll(b, dir, "10k files")
		for i := 0; i < 5; i++ {
			rel := filepath.Join("d"+strconv.Itoa(i%20), "e"+strconv.Itoa(i%7), "f"+strconv.Itoa(i)+".go")
			writeFile(b, dir, rel, "package x\n\nvar V"+strconv.Itoa(i)+" = 2\n")
		}
		gitT(b, dir, "status") // settle the index
		bench10kDir = dir
	})
	if bench10kErr != nil {
		b.Fatal(bench10kErr)
	}
	return bench10kDir
}

func BenchmarkContentRevision10k(b *testing.B) {
	dir := bench10k(b)
	ctx := context.Background()
	var g gitx.Git
	rev, err := ContentRevision(ctx, &g, dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if len(rev.Dirty) != 5 {
		b.Fatalf("got %d dirty files, want 5", len(rev.Dirty))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ContentRevision(ctx, &g, dir, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGitStatus10k is the floor: the one git status ContentRevision
// runs, on the same repository.
func BenchmarkGitStatus10k(b *testing.B) {
	dir := bench10k(b)
	ctx := context.Background()
	var g gitx.Git
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := g.Run(ctx, dir, 0, statusArgs...); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompute(b *testing.B) {
	rev := Revision{Tree: "4b825dc642cb6eb9a060e54bf8d69288fbee4904", Dirty: map[string]string{}}
	for i := 0; i < 5; i++ {
		rev.Dirty["src/f"+strconv.Itoa(i)+".go"] = sha(strconv.Itoa(i))
	}
	rev.Digest = rev.ComputeDigest()
	def := Definition{Argv: []string{"go", "test", "-race", "./..."}, Cwd: "src", Effects: []string{"workspace_write", "network"}, TimeoutMs: 600000}
	env := Env{Vars: map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "GOFLAGS": "-mod=mod", "CI": "1"}, Tools: map[string]string{"go": "go version go1.26.8 linux/amd64"}}
	env.Digest = env.ComputeDigest()
	b.ReportAllocs()
	for b.Loop() {
		_ = Compute(rev, def, env)
	}
}

func BenchmarkRevisionDigest1kDirty(b *testing.B) {
	rev := Revision{Tree: "4b825dc642cb6eb9a060e54bf8d69288fbee4904", Dirty: map[string]string{}}
	for i := 0; i < 1000; i++ {
		rev.Dirty["src/dir"+strconv.Itoa(i%10)+"/f"+strconv.Itoa(i)+".go"] = sha(strconv.Itoa(i))
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = rev.ComputeDigest()
	}
}

func BenchmarkFingerprintCached(b *testing.B) {
	bin := b.TempDir()
	fakeTool(b, bin, "go", `echo "go version go9.9.9 fake/arch"`)
	environ := []string{"PATH=" + bin, "GOFLAGS=-race", "HOME=/nowhere"}
	p := NewEnvProbe(nil)
	ctx := context.Background()
	if _, err := p.Fingerprint(ctx, []string{"go", "test"}, environ); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Fingerprint(ctx, []string{"go", "test"}, environ); err != nil {
			b.Fatal(err)
		}
	}
}
