package gitx

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// benchRepo is a small repository: 50 committed files, a few changes.
func benchRepo(b *testing.B) string {
	b.Helper()
	dir := newRepo(b)
	for i := 0; i < 50; i++ {
		writeFile(b, dir, "pkg/file"+strconv.Itoa(i)+".go", "package pkg\n\nvar X"+strconv.Itoa(i)+" = 1\n")
	}
	commitAll(b, dir, "base")
	writeFile(b, dir, "pkg/file1.go", "package pkg\n\nvar X1 = 2\n")
	writeFile(b, dir, "new.txt", "new\n")
	// Settle the index so both benchmarks see the same, stat-clean state.
	gitT(b, dir, "status")
	return dir
}

func BenchmarkStatus(b *testing.B) {
	dir := benchRepo(b)
	ctx := context.Background()
	var g Git
	if _, err := g.Status(ctx, dir); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := g.Status(ctx, dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatusRaw is the baseline: the same status call with plain
// exec.Command and no hardening, parsing or output capping.
func BenchmarkStatusRaw(b *testing.B) {
	dir := benchRepo(b)
	bin, err := exec.LookPath("git")
	if err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all")
		cmd.Dir = dir
		cmd.Env = env
		if _, err := cmd.Output(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiff(b *testing.B) {
	dir := benchRepo(b)
	ctx := context.Background()
	var g Git
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := g.Diff(ctx, dir, DiffOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseStatus(b *testing.B) {
	modes := "100644 100644 100644 " + oidA + " " + oidB
	var recs []string
	recs = append(recs, "# branch.oid "+oidA, "# branch.head main", "# branch.upstream origin/main", "# branch.ab +1 -2")
	for i := 0; i < 100; i++ {
		recs = append(recs, "1 .M N... "+modes+" dir/file"+strconv.Itoa(i)+".go", "? untracked/"+strconv.Itoa(i))
	}
	in := z(recs...)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseStatus(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHardenedEnv(b *testing.B) {
	env := os.Environ()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = HardenedEnv(env)
	}
}

func BenchmarkDriverOverrides(b *testing.B) {
	dir := benchRepo(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := driverOverrides(dir); err != nil {
			b.Fatal(err)
		}
	}
}
