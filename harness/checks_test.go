package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// fakeGo puts a fake `go` first on PATH (the check runs with the daemon's
// environment) and returns a counter of the `go test` runs. Each run
// prints a token of its own (a uuid: a check in a pid namespace has the
// same pid every time) that its results carry (reused and joined ones the
// token of the run they share), and appends it to a file in $GOCACHE,
// which only an unconfined check can write (a confined one writes a
// copy-on-write layer dropped with it): runs counts the distinct tokens
// seen either way. `go test ... -run TestFail` fails; `go version`
// answers like the real toolchain for the environment probe.
func fakeGo(t testing.TB) *runCounter {
	t.Helper()
	bin := t.TempDir()
	cache := t.TempDir()
	t.Setenv("GOCACHE", cache)
	c := &runCounter{file: filepath.Join(cache, "runs"), seen: map[string]bool{}}
	script := `#!/bin/sh
case "$1" in
version) echo "go version go1.26.0-fake linux/amd64"; exit 0 ;;
test)
  tok="run $(cat /proc/sys/kernel/random/uuid)"
  echo "$tok"
  echo "$tok" >> '` + c.file + `' 2>/dev/null
  sleep 0.4
  case "$*" in
  *TestFail*) echo "--- FAIL: TestFail (0.00s)"; echo "    x_test.go:3: boom"; echo FAIL; exit 1 ;;
  esac
  echo "ok  	example.com/demo/pkg	0.01s"
  exit 0 ;;
esac
echo "fake go: unsupported $*" >&2
exit 2
`
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return c
}

// runCounter counts the distinct runs of the fake go: those its file
// recorded (unconfined checks) and those the results seen came from.
type runCounter struct {
	file string
	mu   sync.Mutex
	seen map[string]bool
}

var runToken = regexp.MustCompile(`run [0-9a-f-]{36}`)

// see records the runs results came from.
func (c *runCounter) see(rs ...*harness.RunCheckResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rs {
		if r != nil {
			for _, tok := range runToken.FindAllString(r.Stdout, -1) {
				c.seen[tok] = true
			}
		}
	}
}

func runs(t testing.TB, c *runCounter) int {
	t.Helper()
	b, err := os.ReadFile(c.file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	all := map[string]bool{}
	for k := range c.seen {
		all[k] = true
	}
	for _, tok := range runToken.FindAllString(string(b), -1) {
		all[tok] = true
	}
	return len(all)
}

func checkFixture(t testing.TB, h *harness.Harness) (root, id string) {
	t.Helper()
	root = testutil.Repo(t, map[string]string{
		"go.mod":        "module example.com/demo\n\ngo 1.22\n",
		"pkg/a.go":      "package pkg\n\nfunc A() int { return 1 }\n",
		"pkg/a_test.go": "package pkg\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n",
	})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	return root, r.ID
}

var focusedCheck = []string{"go", "test", "./pkg", "-run", "TestX"}

func TestRunCheckSingleFlight(t *testing.T) {
	counter := fakeGo(t)
	h := open(t)
	_, id := checkFixture(t, h)
	const n = 20
	results := make([]*harness.RunCheckResult, n)
	errList := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], errList[i] = h.RunCheck(context.Background(), harness.RunCheckArgs{RepoID: id, Argv: focusedCheck})
		}(i)
	}
	wg.Wait()
	counter.see(results...)
	if got := runs(t, counter); got != 1 {
		t.Fatalf("got %d processes, want 1", got)
	}
	starters := 0
	for i, r := range results {
		if errList[i] != nil {
			t.Fatalf("call %d: %v", i, errList[i])
		}
		if r.Identity != results[0].Identity || r.OriginalRun.Pid != results[0].OriginalRun.Pid || r.OriginalRun.Pid == 0 {
			t.Fatalf("call %d: got identity %s pid %d, want %s pid %d", i, r.Identity, r.OriginalRun.Pid, results[0].Identity, results[0].OriginalRun.Pid)
		}
		if !r.Passed || !r.Focused || r.Path != "fast" || r.Shared != checksPrivateTmp() {
			t.Fatalf("call %d: got %+v, want a passed, focused Fast Path check, shared where checks get a private temp dir", i, r)
		}
		if !r.Reused && !r.Joined {
			starters++
		}
	}
	if starters != 1 {
		t.Fatalf("got %d calls with reused=false and joined=false, want 1", starters)
	}
}

func TestRunCheckEvidence(t *testing.T) {
	counter := fakeGo(t)
	h := open(t)
	root, id := checkFixture(t, h)
	ctx := context.Background()
	run := func(argv []string) *harness.RunCheckResult {
		t.Helper()
		r, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: argv, IncludeLatencyBreakdown: true})
		if err != nil {
			t.Fatal(err)
		}
		counter.see(r)
		return r
	}
	first := run(focusedCheck)
	if first.Reused || len(first.MissReasons) == 0 || !first.Passed {
		t.Fatalf("first run: got %+v, want a passing new run with a miss reason", first)
	}
	again := run(focusedCheck)
	if !again.Reused || again.OriginalRun.Pid != first.OriginalRun.Pid || len(again.MissReasons) != 0 {
		t.Fatalf("second run: got %+v, want evidence of pid %d reused", again, first.OriginalRun.Pid)
	}
	if again.Latency.ExecutionMs == nil {
		t.Fatalf("latency breakdown missing: %+v", again.Latency)
	}

	testutil.WriteFile(t, root, "pkg/a.go", "package pkg\n\nfunc A() int { return 2 }\n")
	changed := run(focusedCheck)
	if changed.Reused || changed.Identity == first.Identity || changed.Shared {
		t.Fatalf("after an edit: got %+v, want a new unshared run", changed)
	}
	if !strings.Contains(strings.Join(changed.MissReasons, "\n"), "pkg/a.go") {
		t.Fatalf("miss reasons %q, want them to name pkg/a.go", changed.MissReasons)
	}
	testutil.WriteFile(t, root, "pkg/a.go", "package pkg\n\nfunc A() int { return 1 }\n")
	reverted := run(focusedCheck)
	if !reverted.Reused || reverted.Identity != first.Identity || reverted.OriginalRun.Pid != first.OriginalRun.Pid {
		t.Fatalf("after revert: got %+v, want the first evidence reused", reverted)
	}
	if got := runs(t, counter); got != 2 {
		t.Fatalf("got %d processes, want 2", got)
	}

	failing := []string{"go", "test", "./pkg", "-run", "TestFail"}
	for i := 0; i < 2; i++ {
		r := run(failing)
		if r.Reused || r.Passed || r.ExitCode != 1 || len(r.Summary) == 0 {
			t.Fatalf("failing run %d: got %+v, want a new failed run with a summary", i, r)
		}
	}
	if got := runs(t, counter); got != 4 {
		t.Fatalf("got %d processes, want 4 (failures are never reused)", got)
	}
}

func TestRunCheckEvidenceSurvivesReopen(t *testing.T) {
	counter := fakeGo(t)
	dir := t.TempDir()
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	root, id := checkFixture(t, h)
	first, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: focusedCheck})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h, err = harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if _, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root}); err != nil {
		t.Fatal(err)
	}
	r, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: focusedCheck})
	if err != nil {
		t.Fatal(err)
	}
	counter.see(first, r)
	if !r.Reused || r.OriginalRun.Pid != first.OriginalRun.Pid {
		t.Fatalf("after reopen: got %+v, want pid %d reused", r, first.OriginalRun.Pid)
	}
	if got := runs(t, counter); got != 1 {
		t.Fatalf("got %d processes, want 1", got)
	}
}

func TestRunCheckAcrossCheckouts(t *testing.T) {
	testutil.NeedSandbox(t, testutil.Landlock, checksPrivateTmp(), "checks get a private temp directory only from a confining sandbox")
	counter := fakeGo(t)
	h := open(t)
	root, id := checkFixture(t, h)
	ctx := context.Background()
	wt := filepath.Join(t.TempDir(), "second")
	testutil.Git(t, root, "worktree", "add", "-q", "--detach", wt)
	r2, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: wt})
	if err != nil {
		t.Fatal(err)
	}
	first, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: id, Argv: focusedCheck})
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: r2.ID, Argv: focusedCheck})
	if err != nil {
		t.Fatal(err)
	}
	if !other.Reused || other.OriginalRun.RepoID != id || other.OriginalRun.Pid != first.OriginalRun.Pid {
		t.Fatalf("clean second checkout: got %+v, want the first checkout's evidence", other)
	}
	writes, err := h.RunCheck(ctx, harness.RunCheckArgs{RepoID: r2.ID, Argv: focusedCheck, Effects: []string{"workspace_write"}})
	if err != nil {
		t.Fatal(err)
	}
	if writes.Reused || writes.Shared {
		t.Fatalf("check declaring writes: got %+v, want its own run", writes)
	}
	counter.see(first, other, writes)
	if got := runs(t, counter); got != 2 {
		t.Fatalf("got %d processes, want 2", got)
	}
}

func TestRunCheckErrors(t *testing.T) {
	fakeGo(t)
	h := open(t)
	_, id := checkFixture(t, h)
	tests := []struct {
		name string
		args harness.RunCheckArgs
		want errs.Code
	}{
		{"no repo", harness.RunCheckArgs{Argv: focusedCheck}, errs.InvalidArgument},
		{"unknown repo", harness.RunCheckArgs{RepoID: "repo_nope", Argv: focusedCheck}, errs.RepositoryNotRegistered},
		{"empty argv", harness.RunCheckArgs{RepoID: id}, errs.InvalidArgument},
		{"negative timeout", harness.RunCheckArgs{RepoID: id, Argv: focusedCheck, TimeoutMs: -1}, errs.InvalidArgument},
		{"bad effect", harness.RunCheckArgs{RepoID: id, Argv: focusedCheck, Effects: []string{"two words"}}, errs.InvalidArgument},
		{"destructive", harness.RunCheckArgs{RepoID: id, Argv: []string{"rm", "-rf", "."}}, errs.RouteRejected},
		{"cwd outside", harness.RunCheckArgs{RepoID: id, Argv: focusedCheck, Cwd: "../x"}, errs.PathOutsideRoot},
		{"cwd not a dir", harness.RunCheckArgs{RepoID: id, Argv: focusedCheck, Cwd: "pkg/a.go"}, errs.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.RunCheck(context.Background(), tc.args)
			if got := errs.CodeOf(err); got != tc.want {
				t.Fatalf("got %v (%s), want %s", err, got, tc.want)
			}
		})
	}
}

func BenchmarkRunCheckReused(b *testing.B) {
	fakeGo(b)
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(context.Background())
	_, id := checkFixture(b, h)
	ctx := context.Background()
	args := harness.RunCheckArgs{RepoID: id, Argv: focusedCheck}
	if _, err := h.RunCheck(ctx, args); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := h.RunCheck(ctx, args)
		if err != nil || !r.Reused {
			b.Fatalf("got %+v, %v; want reused", r, err)
		}
	}
}

func TestRunCheckUnfocusedRunsAsDurableJob(t *testing.T) {
	counter := fakeGo(t)
	h := open(t)
	_, id := checkFixture(t, h)
	ctx := context.Background()
	args := harness.RunCheckArgs{RepoID: id, Argv: []string{"go", "test", "./..."}, TimeoutMs: 60_000}
	r, err := h.RunCheck(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	if r.Focused || r.Path != "durable" || r.OriginalRun.JobID == "" || !r.Passed || r.Reused {
		t.Fatalf("got %+v, want a passing durable job", r)
	}
	again, err := h.RunCheck(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Reused || again.OriginalRun.JobID != r.OriginalRun.JobID {
		t.Fatalf("second call: got %+v, want job %s reused", again, r.OriginalRun.JobID)
	}
	counter.see(r, again)
	if got := runs(t, counter); got != 1 {
		t.Fatalf("got %d processes, want 1", got)
	}
}
