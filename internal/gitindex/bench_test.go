package gitindex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/testutil"
)

// benchRepos caches the generated repositories of the benchmarks by name,
// so -count=N builds each once; TestMain removes them.
var benchRepos = map[string]string{}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range benchRepos {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// bigRepo makes (once per name) a committed repository of n files (100
// per directory, three levels deep, 100 B to 4 KiB each, all older than
// the index) and dirties the first `dirty` of them; it returns the root
// and the dirty paths.
func bigRepo(b *testing.B, name string, n, dirty int) (string, []string, bool) {
	b.Helper()
	if dir, ok := benchRepos[name]; ok {
		return dir, nil, false
	}
	tmp, err := os.MkdirTemp("", "gitindex-bench-")
	if err != nil {
		b.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(tmp)
	if err != nil {
		b.Fatal(err)
	}
	benchRepos[name] = dir
	testutil.Git(b, dir, "init", "-q", "-b", "main")
	var paths []string
	old := time.Now().Add(-time.Hour)
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i/1000, (i/100)%10, i)
		paths = append(paths, p)
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		body := strings.Repeat(fmt.Sprintf("// line of file %d\n", i), 5+(i*37)%200)
		if err := os.WriteFile(abs, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(abs, old, old); err != nil {
			b.Fatal(err)
		}
	}
	testutil.Git(b, dir, "add", "-A")
	testutil.Git(b, dir, "commit", "-q", "-m", "big")
	for _, p := range paths[:dirty] {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), []byte("dirty\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir, paths[:dirty], true
}

// loop runs f in b.Loop and also reports the process CPU time per op
// (cpu-ns/op), which a loaded machine inflates less than wall time.
func loop(b *testing.B, f func()) {
	b.ReportAllocs()
	start, n := cpuTime(), 0
	for b.Loop() {
		f()
		n++
	}
	if n > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
	}
}

// refreshState is what BenchmarkRefresh measures against.
type refreshState struct {
	base  gitx.Status
	ix    *Index
	dirty []string
}

var refreshStates = map[string]*refreshState{}

// BenchmarkRefresh: status of a 10,000-file repository with 5 dirty files,
// from a clean base and the 5 changed paths (no git process).
func BenchmarkRefresh(b *testing.B) {
	dir, _, fresh := bigRepo(b, "refresh", 10000, 0)
	if fresh {
		ix, err := ReadFile(filepath.Join(dir, ".git", "index"), 20)
		if err != nil {
			b.Fatal(err)
		}
		st := &refreshState{base: execStatus(b, dir), ix: ix}
		for _, p := range []string{"pkg00/sub0/file0000.go", "pkg03/sub4/file3456.go", "pkg05/sub0/file5000.go", "pkg07/sub7/file7777.go", "pkg09/sub9/file9999.go"} {
			testutil.WriteFile(b, dir, p, "dirty\n")
			st.dirty = append(st.dirty, p)
		}
		refreshStates["refresh"] = st
	}
	st := refreshStates["refresh"]
	lsOthers := func([]string) ([]string, error) { b.Fatal("lsOthers called"); return nil, nil }
	got, err := Refresh(st.base, st.ix, dir, st.dirty, lsOthers)
	if want := execStatus(b, dir); err != nil || len(got.Unstaged) != 5 || fmt.Sprint(got) != fmt.Sprint(want) {
		b.Fatalf("Refresh = %+v, %v; git says %+v", got, err, want)
	}
	loop(b, func() {
		if _, err := Refresh(st.base, st.ix, dir, st.dirty, lsOthers); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkRefreshWholeTree: the same tree after a watcher overflow
// (changed = "."): every entry lstat'ed (the 5 dirty files hashed, the
// rest trusted by their stat data) and one real `git ls-files --others`.
func BenchmarkRefreshWholeTree(b *testing.B) {
	dir, _, _ := bigRepo(b, "refresh", 10000, 0)
	if refreshStates["refresh"] == nil {
		b.Skip("needs BenchmarkRefresh's state")
	}
	st := refreshStates["refresh"]
	calls := 0
	lsOthers := realLsOthers(b, dir, &calls)
	got, err := Refresh(st.base, st.ix, dir, []string{"."}, lsOthers)
	if want := execStatus(b, dir); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		b.Fatalf("Refresh = %+v, %v; git says %+v", got, err, want)
	}
	loop(b, func() {
		if _, err := Refresh(st.base, st.ix, dir, []string{"."}, lsOthers); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkExecStatus: the exec path Refresh replaces, on the same tree.
func BenchmarkExecStatus(b *testing.B) {
	dir, _, _ := bigRepo(b, "exec", 10000, 5)
	g := &gitx.Git{}
	for b.Loop() {
		if _, err := g.Status(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse: decoding the index of the 10,000-file repository.
func BenchmarkParse(b *testing.B) {
	dir, _, _ := bigRepo(b, "parse", 10000, 0)
	for _, ver := range []string{"2", "4"} {
		testutil.Git(b, dir, "update-index", "--index-version", ver)
		data := readIndex(b, dir)
		b.Run("v"+ver, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			loop(b, func() {
				if _, err := Parse(data, 20); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
