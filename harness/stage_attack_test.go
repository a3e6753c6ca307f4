package harness_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// secretsStaged returns the secret paths in the index that HEAD does not
// have as they are there (what a commit would record).
func secretsStaged(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, p := range strings.Split(testutil.Git(t, root, "diff", "--cached", "--name-only"), "\n") {
		for _, s := range []string{".env", ".env.local", "keys/id_rsa", "deploy/tls.key", "deploy/.ssh/config"} {
			if p == s {
				out = append(out, p)
			}
		}
	}
	return out
}

// git_stage with a directory or a glob never stages a secret file, tracked
// or untracked, and says which it skipped; the other changes are staged.
func TestGitStageNeverStagesSecretsAsAnAttacker(t *testing.T) {
	attacks := [][]string{{"."}, {"./"}, {"*"}, {"**"}, {".en?"}, {".env*"}, {"keys"}, {"keys/*"}, {"deploy"}, {"deploy/**"},
		{"src/.."}, {"*.key", "**/*.key"}, {"[.]env"}, {"deploy/.ssh"}}
	for i, paths := range attacks {
		t.Run(fmt.Sprint(paths), func(t *testing.T) {
			h, root, id := fixture(t)
			ctx := context.Background()
			testutil.WriteFile(t, root, ".env", "TOKEN=rotated-value\n") // tracked, modified
			testutil.WriteFile(t, root, ".env.local", "X=1234567\n")     // untracked
			testutil.WriteFile(t, root, "keys/id_rsa", "-----BEGIN KEY-----\n")
			testutil.WriteFile(t, root, "deploy/tls.key", "key\n")
			testutil.WriteFile(t, root, "deploy/.ssh/config", "Host x\n")
			testutil.WriteFile(t, root, "deploy/app.yaml", "replicas: 2\n")
			testutil.WriteFile(t, root, "keys/README", "keys live here\n")
			r, err := h.GitStage(ctx, harness.GitStageArgs{RepoID: id, RequestID: fmt.Sprint("stage-", i), Paths: paths})
			if got := secretsStaged(t, root); len(got) > 0 {
				t.Fatalf("git_stage %q staged secret files %v", paths, got)
			}
			if err != nil {
				if c := errs.CodeOf(err); c != errs.InvalidArgument && c != errs.SecretPathDenied {
					t.Fatalf("git_stage %q: %v", paths, err)
				}
				return
			}
			if broad := strings.Join(paths, ","); len(r.SkippedSecretPaths) == 0 && (broad == "." || broad == "*" || broad == "keys") {
				t.Fatalf("git_stage %q skipped nothing: %+v", paths, r)
			}
		})
	}
	// "." stages every other change and names what it skipped.
	h, root, id := fixture(t)
	testutil.WriteFile(t, root, ".env", "TOKEN=rotated-value\n")
	testutil.WriteFile(t, root, "README.md", "changed\n")
	testutil.WriteFile(t, root, "src/new.go", "package main\n")
	r, err := h.GitStage(context.Background(), harness.GitStageArgs{RepoID: id, RequestID: "all", Paths: []string{"."}})
	if err != nil {
		t.Fatal(err)
	}
	staged := testutil.Git(t, root, "diff", "--cached", "--name-only")
	if staged != "README.md\nsrc/new.go" || !slices.Equal(r.SkippedSecretPaths, []string{".env"}) {
		t.Fatalf("staged %q, skipped %v; want README.md and src/new.go staged and .env skipped", staged, r.SkippedSecretPaths)
	}
}

// git_commit with a directory commits the tracked changes below it but
// never a modified secret file.
func TestGitCommitPathsNeverCommitSecrets(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	testutil.WriteFile(t, root, ".env", "TOKEN=rotated-value\n")
	testutil.WriteFile(t, root, "README.md", "changed\n")
	c, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: id, RequestID: "c", Message: "all", Paths: []string{"."}})
	if err != nil {
		t.Fatal(err)
	}
	if files := testutil.Git(t, root, "show", "--name-only", "--format=", "HEAD"); files != "README.md" {
		t.Fatalf("commit recorded %q, want README.md only", files)
	}
	if !slices.Equal(c.SkippedSecretPaths, []string{".env"}) {
		t.Fatalf("skipped %v, want .env", c.SkippedSecretPaths)
	}
	if _, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: id, RequestID: "c2", Message: "env", Paths: []string{".en*"}}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("commit of only a secret: %v, want INVALID_ARGUMENT", err)
	}
	if strings.Contains(testutil.Git(t, root, "show", "HEAD:.env"), "rotated") {
		t.Fatal("the rotated secret was committed")
	}
}
