package harness_test

import (
	"context"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// TestCommitWithoutIdentity: git_commit in a repository where git has no
// author identity answers GIT_IDENTITY_REQUIRED with the commands that
// set one, not INTERNAL with git's text; nothing is committed.
func TestCommitWithoutIdentity(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"} {
		t.Setenv(k, "")
	}
	h, root, id := fixture(t)
	testutil.Git(t, root, "config", "--unset", "user.name")
	testutil.Git(t, root, "config", "--unset", "user.email")
	testutil.Git(t, root, "config", "user.useConfigOnly", "true") // no guessing from the host name
	head := testutil.Git(t, root, "rev-parse", "HEAD")
	testutil.WriteFile(t, root, "README.md", "# demo\nchanged\n")
	ctx := context.Background()
	if _, err := h.GitStage(ctx, harness.GitStageArgs{RepoID: id, RequestID: "s1", Paths: []string{"README.md"}}); err != nil {
		t.Fatal(err)
	}
	_, err := h.GitCommit(ctx, harness.GitCommitArgs{RepoID: id, RequestID: "c1", Message: "change"})
	if errs.CodeOf(err) != errs.GitIdentityRequired {
		t.Fatalf("commit without identity: %v, want GIT_IDENTITY_REQUIRED", err)
	}
	if msg := errs.From(err).Message; !strings.Contains(msg, "git config --global user.name") || !strings.Contains(msg, "user.email") {
		t.Errorf("message does not name the fix: %s", msg)
	}
	if got := testutil.Git(t, root, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved to %s", got)
	}
}
