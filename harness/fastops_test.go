package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

const awsKey = "AKIAIOSFODNN7EXAMPLE"

func fixture(t *testing.T) (*harness.Harness, string, string) {
	t.Helper()
	h := open(t)
	root := testutil.Repo(t, map[string]string{
		"README.md":    "# demo\nhello world\n",
		"src/main.go":  "package main\n\nfunc main() { println(\"hello\") }\n",
		".env":         "TOKEN=supersecret\n",
		"conf/app.ini": "name = demo\n",
	})
	r, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	return h, root, r.ID
}

func TestReadFile(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	r, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: "README.md", IncludeLatencyBreakdown: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != "# demo\nhello world\n" || r.TotalLines != 2 || r.SHA256 == "" || r.Route != "fast" {
		t.Fatalf("read = %+v", r)
	}
	l := r.Latency
	if l.RoutingMs == nil || l.ExecutionMs == nil {
		t.Fatalf("breakdown missing: %+v", l)
	}
	sum := *l.RoutingMs + *l.PolicyMs + *l.SnapshotMs + *l.ExecutionMs + *l.ReceiptMs
	if d := sum - l.TotalMs; d > 1e-6 || d < -1e-6 {
		t.Fatalf("segments sum to %f, total %f", sum, l.TotalMs)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want errs.Code
	}{
		{".env", errs.SecretPathDenied},
		{"../outside", errs.PathOutsideRoot},
		{"/etc/passwd", errs.PathOutsideRoot},
		{"escape", errs.PathOutsideRoot},
		{".git/config", errs.PathNotAllowed},
		{"src", errs.IsDirectory},
		{"missing.txt", errs.NotFound},
		{"", errs.InvalidArgument},
	}
	for _, tt := range tests {
		_, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: tt.path})
		if got := errs.CodeOf(err); got != tt.want {
			t.Errorf("read %q: %s (%v), want %s", tt.path, got, err, tt.want)
		}
	}
	if _, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: "repo_nope", Path: "README.md"}); errs.CodeOf(err) != errs.RepositoryNotRegistered {
		t.Errorf("unknown repo: %v", err)
	}
}

func TestSearchExcludesSecretsAndRedacts(t *testing.T) {
	h, root, id := fixture(t)
	testutil.WriteFile(t, root, "src/cfg.go", "package main\n// hello key "+awsKey+"\n")
	r, err := h.Search(context.Background(), harness.SearchArgs{RepoID: id, Query: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for _, m := range r.Matches {
		paths[m.Path] = m.Text
	}
	if _, ok := paths["README.md"]; !ok {
		t.Fatalf("matches %+v lack README.md", r.Matches)
	}
	if strings.Contains(paths["src/cfg.go"], awsKey) || r.Redactions == 0 {
		t.Fatalf("secret not redacted: %q (%d redactions)", paths["src/cfg.go"], r.Redactions)
	}
	r, err = h.Search(context.Background(), harness.SearchArgs{RepoID: id, Query: "supersecret"})
	if err != nil || len(r.Matches) != 0 {
		t.Fatalf("search found text of a secret file: %+v, %v", r, err)
	}
	if _, err := h.Search(context.Background(), harness.SearchArgs{RepoID: id, Query: "("}); err != nil {
		t.Fatalf("literal '(' should be fine: %v", err)
	}
	if _, err := h.Search(context.Background(), harness.SearchArgs{RepoID: id, Query: "(", Regex: true}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("bad regex: %v, want INVALID_ARGUMENT", err)
	}
}

func TestGitStatusAndDiff(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	st, err := h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id})
	if err != nil || !st.Clean || st.Branch != "main" || st.Head == "" {
		t.Fatalf("clean status = %+v, %v", st, err)
	}
	testutil.WriteFile(t, root, "README.md", "# demo\nhello world\npassword = hunter2hunter2\n")
	testutil.WriteFile(t, root, "new.txt", "x\n")
	st, err = h.GitStatus(ctx, harness.GitStatusArgs{RepoID: id})
	if err != nil || st.Clean || len(st.Unstaged) != 1 || len(st.Untracked) != 1 {
		t.Fatalf("dirty status = %+v, %v", st, err)
	}
	d, err := h.GitDiff(ctx, harness.GitDiffArgs{RepoID: id})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d.Patch, "hunter2hunter2") || d.Redactions == 0 || len(d.Files) != 1 || d.Files[0].Added != 1 {
		t.Fatalf("diff = %+v", d)
	}
	for _, bad := range []harness.GitDiffArgs{
		{RepoID: id, Rev: "--output=/tmp/x"},
		{RepoID: id, Paths: []string{"../x"}},
		{RepoID: id, Paths: []string{".env"}},
	} {
		if _, err := h.GitDiff(ctx, bad); err == nil {
			t.Errorf("diff %+v accepted", bad)
		}
	}
}

func TestRunCommandRouting(t *testing.T) {
	h, _, id := fixture(t)
	ctx := context.Background()
	r, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: []string{"git", "status", "--short"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 || r.CommandClass != "readonly" || r.TreeChanged {
		t.Fatalf("git status --short = %+v", r)
	}
	r, err = h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: []string{"cat", "README.md"}, Cwd: "."})
	if err != nil || !strings.Contains(r.Stdout.Text, "hello world") {
		t.Fatalf("cat = %+v, %v", r, err)
	}
	tests := []struct {
		name string
		argv []string
		ms   int
		want errs.Code
	}{
		{"write", []string{"touch", "x"}, 0, errs.RouteDurableRequired},
		{"unknown", []string{"python3", "-c", "print(1)"}, 0, errs.RouteDurableRequired},
		{"long", []string{"ls"}, 60_000, errs.RouteDurableRequired},
		{"destructive in the checkout goes to job_start", []string{"rm", "-rf", "src"}, 0, errs.RouteDurableRequired},
		{"destructive outside", []string{"rm", "-rf", "/"}, 0, errs.RouteRejected},
		{"git push goes to git_push", []string{"git", "push", "origin", "main"}, 0, errs.RouteDurableRequired},
		{"remote", []string{"curl", "-d", "x", "https://example.com"}, 0, errs.RouteRejected},
		{"git -c", []string{"git", "-c", "core.pager=evil", "log"}, 0, errs.RouteDurableRequired},
		{"secret arg", []string{"cat", ".env"}, 0, errs.SecretPathDenied},
		{"outside", []string{"cat", "/etc/passwd"}, 0, errs.PathOutsideRoot},
		{"empty", []string{}, 0, errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: tt.argv, TimeoutMs: tt.ms})
			if got := errs.CodeOf(err); got != tt.want {
				t.Fatalf("%v: %s (%v), want %s", tt.argv, got, err, tt.want)
			}
		})
	}
	_, err = h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: []string{"touch", "x"}})
	e := errs.From(err)
	if e.Details["suggested_operation"] != "job_start" {
		t.Fatalf("durable-required details = %+v, want suggested_operation job_start", e.Details)
	}
}

func TestRouteExplain(t *testing.T) {
	h := open(t)
	r, err := h.RouteExplain(context.Background(), harness.RouteExplainArgs{Tool: "run_command", Argv: []string{"rm", "-rf", "/"}})
	if err != nil || r.Decision.Mode != "reject" || r.Command == nil || r.Command.Class.String() != "destructive" {
		t.Fatalf("explain = %+v, %v", r, err)
	}
	r, err = h.RouteExplain(context.Background(), harness.RouteExplainArgs{Tool: "read_file"})
	if err != nil || r.Decision.Mode != "fast" {
		t.Fatalf("explain read_file = %+v, %v", r, err)
	}
}

// A changed secret file never shows in git_diff, whatever its content.
func TestGitDiffOmitsSecretFiles(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	testutil.WriteFile(t, root, ".env", "DB_HOST=internal.example\n")
	testutil.WriteFile(t, root, "README.md", "# demo\nchanged\n")
	for _, staged := range []bool{false, true} {
		if staged {
			testutil.Git(t, root, "add", "-A")
		}
		d, err := h.GitDiff(ctx, harness.GitDiffArgs{RepoID: id, Staged: staged})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(d.Patch, "internal.example") || strings.Contains(d.Patch, ".env") || d.SecretPathsOmitted != 1 {
			t.Fatalf("staged=%v: diff shows the secret file: %+v", staged, d)
		}
		if !strings.Contains(d.Patch, "changed") || len(d.Files) != 1 || d.Files[0].Path != "README.md" {
			t.Fatalf("staged=%v: diff = %+v", staged, d)
		}
	}
}

// Commands that read whole trees skip secret files.
func TestRunCommandSkipsSecretFiles(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	testutil.WriteFile(t, root, ".env", "DB_HOST=internal.example\n")
	testutil.Git(t, root, "add", "-f", ".env")
	testutil.Git(t, root, "commit", "-q", "-m", "add env")
	for _, argv := range [][]string{
		{"git", "log", "-p"},
		{"git", "show"},
		{"git", "grep", "internal"},
		{"grep", "-r", "internal", "."},
	} {
		r, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: argv})
		if err != nil {
			t.Fatalf("%v: %v", argv, err)
		}
		if strings.Contains(r.Stdout.Text, "internal.example") {
			t.Fatalf("%v printed a secret file's content:\n%s", argv, r.Stdout.Text)
		}
	}
}
