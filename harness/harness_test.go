package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/testutil"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the test binary is the launcher of confined checks and jobs
	goleak.VerifyTestMain(m)
}

func open(t *testing.T) *harness.Harness {
	t.Helper()
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return h
}

func TestRegisterErrors(t *testing.T) {
	h := open(t)
	ctx := context.Background()
	notGit := t.TempDir()
	file := filepath.Join(notGit, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want errs.Code
	}{
		{"missing path", "", errs.InvalidArgument},
		{"does not exist", filepath.Join(notGit, "nope"), errs.NotFound},
		{"not a git repo", notGit, errs.NotAGitRepository},
		{"a file", file, errs.NotAGitRepository},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: tt.path})
			if got := errs.CodeOf(err); got != tt.want {
				t.Fatalf("code = %s (%v), want %s", got, err, tt.want)
			}
		})
	}
}

func TestRegisterCanonicalisesAndIsIdempotent(t *testing.T) {
	h := open(t)
	ctx := context.Background()
	root := testutil.Repo(t, map[string]string{"src/a.go": "package a\n"})
	// A subdirectory and a symlink to the repository name the same work tree.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	r1, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Created || r1.Root != root {
		t.Fatalf("register = %+v, want created with root %s", r1, root)
	}
	for _, p := range []string{filepath.Join(root, "src"), link, root + "/"} {
		r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: p})
		if err != nil {
			t.Fatal(err)
		}
		if r.Created || r.ID != r1.ID || r.CheckoutID != r1.CheckoutID {
			t.Fatalf("register %s = %+v, want the same ids, not created", p, r)
		}
	}
	l, err := h.Repositories(ctx, harness.ListArgs{})
	if err != nil || len(l.Repositories) != 1 {
		t.Fatalf("list = %+v, %v", l, err)
	}
	if _, err := h.UnregisterRepository(ctx, harness.UnregisterArgs{RepoID: r1.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.UnregisterRepository(ctx, harness.UnregisterArgs{RepoID: r1.ID}); errs.CodeOf(err) != errs.RepositoryNotRegistered {
		t.Fatalf("second unregister: %v, want REPOSITORY_NOT_REGISTERED", err)
	}
}

func TestCallOpValidatesInput(t *testing.T) {
	h := open(t)
	ctx := context.Background()
	tests := []struct {
		name string
		op   string
		args string
		want errs.Code
	}{
		{"unknown op", "nope", `{}`, errs.NotFound},
		{"not json", "repository_register", `{`, errs.InvalidArgument},
		{"not an object", "repository_register", `[1]`, errs.InvalidArgument},
		{"missing required", "repository_register", `{}`, errs.InvalidArgument},
		{"wrong type", "repository_register", `{"path": 3}`, errs.InvalidArgument},
		{"unknown field", "repository_register", `{"path": "/x", "bogus": 1}`, errs.InvalidArgument},
		{"unknown repo", "repository_unregister", `{"repo_id": "repo_0000"}`, errs.RepositoryNotRegistered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.CallOp(ctx, tt.op, json.RawMessage(tt.args))
			if got := errs.CodeOf(err); got != tt.want {
				t.Fatalf("code = %s (%v), want %s", got, err, tt.want)
			}
		})
	}
}

func TestOpsHaveObjectSchemas(t *testing.T) {
	for _, o := range harness.Ops() {
		if o.InputSchema == nil || o.InputSchema.Type != "object" {
			t.Errorf("%s: input schema %+v, want an object schema", o.Name, o.InputSchema)
		}
		if o.Description == "" {
			t.Errorf("%s: no description", o.Name)
		}
	}
}

func TestPersistentReopen(t *testing.T) {
	dir := t.TempDir()
	root := testutil.Repo(t, nil)
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Repositories(ctx, harness.ListArgs{}); errs.CodeOf(err) != errs.Unavailable {
		t.Fatalf("call after Close: %v, want UNAVAILABLE", err)
	}
	h, err = harness.Open(ctx, harness.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	l, err := h.Repositories(ctx, harness.ListArgs{})
	if err != nil || len(l.Repositories) != 1 || l.Repositories[0].ID != r.ID {
		t.Fatalf("after reopen: %+v, %v", l, err)
	}
	st, err := h.Status(ctx)
	if err != nil || st.Repositories != 1 || st.Actors["checkout"] != 1 {
		t.Fatalf("status = %+v, %v", st, err)
	}
}

func testNow() time.Time { return time.Now() }

// A checkout that holds harnessd's data dir (a dotfiles repository that is
// $HOME) is refused: its commands could read the token and the store.
func TestRegisterRefusesACheckoutHoldingTheDataDir(t *testing.T) {
	ctx := context.Background()
	root := testutil.Repo(t, map[string]string{"README.md": "dotfiles\n"})
	data := filepath.Join(root, ".local", "state", "harnessd")
	h, err := harness.Open(ctx, harness.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	if _, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root}); errs.CodeOf(err) != errs.PathNotAllowed || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("register a checkout holding the data dir: %v, want PATH_NOT_ALLOWED naming --data-dir", err)
	}
	if _, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: filepath.Join(root, ".local")}); errs.CodeOf(err) != errs.PathNotAllowed {
		t.Fatalf("register a subdirectory of it that still holds the data dir: %v, want PATH_NOT_ALLOWED", err)
	}
}
