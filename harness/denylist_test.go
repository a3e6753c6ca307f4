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

// A person's secret exception opens exactly its paths of one repository,
// on every surface, and follows the policy: a reload that drops it closes
// the files again. The refusal names the exception that would open a path.
func TestDenylistExceptionsFollowThePolicy(t *testing.T) {
	ctx := context.Background()
	fixture, envValue, otherValue := "FIXTUREpubKEYmaterial0123456789", "ENVvalue9876543210zyxwvutsrqpon", "OTHERkey5555544444333332222211111"
	root := testutil.Repo(t, map[string]string{
		"test/key.pem":  "-----BEGIN PUBLIC KEY-----\n" + fixture + "\n-----END PUBLIC KEY-----\n",
		"test/.env":     "TOKEN=" + envValue + "\n",
		"other/key.pem": "KEY=" + otherValue + "\n",
		"main.go":       "package main\n",
	})
	dir := t.TempDir()
	polPath := filepath.Join(dir, "policy.yaml")
	writePolicy := func(body string) {
		t.Helper()
		if err := os.WriteFile(polPath, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writePolicy("version: 1\n")
	h, err := harness.Open(ctx, harness.Config{InMemory: true, PolicyPath: polPath})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) (*harness.ReadFileResult, error) {
		return h.ReadFile(ctx, harness.ReadFileArgs{RepoID: r.ID, Path: p})
	}
	closed := func(when string) {
		t.Helper()
		for _, p := range []string{"test/key.pem", "test/.env", "other/key.pem"} {
			_, err := read(p)
			if errs.CodeOf(err) != errs.SecretPathDenied {
				t.Fatalf("%s: read_file %s = %v, want SECRET_PATH_DENIED", when, p, err)
			}
			if want := "policy secret_exceptions {repo: " + root + ", paths: [" + p + "]}"; !strings.Contains(errs.From(err).Message, want) {
				t.Errorf("%s: the refusal %q does not name the fix %q", when, errs.From(err).Message, want)
			}
		}
		res, err := h.Search(ctx, harness.SearchArgs{RepoID: r.ID, Query: fixture})
		if err != nil || len(res.Matches) != 0 {
			t.Errorf("%s: search for the fixture: %+v, %v, want no match", when, res, err)
		}
	}
	closed("the default policy")

	writePolicy("version: 1\nsecret_exceptions:\n  - repo: " + root + "\n    paths: [\"test/*.pem\"]\n    justification: test fixtures\n")
	if _, err := h.ReloadPolicy(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := read("test/key.pem")
	if err != nil || !strings.Contains(got.Content, fixture) || got.Redactions != 0 {
		t.Fatalf("read_file of the excepted fixture: %+v, %v", got, err)
	}
	for _, p := range []string{"test/.env", "other/key.pem", "TEST/key.pem"} {
		if _, err := read(p); errs.CodeOf(err) != errs.SecretPathDenied && !(p == "TEST/key.pem" && errs.CodeOf(err) == errs.NotFound) {
			t.Errorf("with the exception: read_file %s = %v, want SECRET_PATH_DENIED", p, err)
		}
	}
	res, err := h.Search(ctx, harness.SearchArgs{RepoID: r.ID, Query: fixture})
	if err != nil || len(res.Matches) != 1 || res.Matches[0].Path != "test/key.pem" || !strings.Contains(res.Matches[0].Text, fixture) {
		t.Errorf("search for the excepted fixture: %+v, %v", res, err)
	}
	for _, v := range []string{envValue, otherValue} {
		if res, err := h.Search(ctx, harness.SearchArgs{RepoID: r.ID, Query: v}); err != nil || len(res.Matches) != 0 {
			t.Errorf("search for a secret beside the fixture: %+v, %v", res, err)
		}
	}
	out, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: r.ID, Argv: []string{"cat", "test/key.pem"}})
	if err != nil || !strings.Contains(out.Stdout.Text, fixture) {
		t.Errorf("cat of the excepted fixture: %+v, %v", out, err)
	}
	if _, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: r.ID, Argv: []string{"cat", "test/.env"}}); errs.CodeOf(err) != errs.SecretPathDenied {
		t.Errorf("cat test/.env with the exception: %v, want SECRET_PATH_DENIED", err)
	}

	writePolicy("version: 1\n")
	if _, err := h.ReloadPolicy(ctx); err != nil {
		t.Fatal(err)
	}
	closed("after the exception was dropped")
}

// A repository whose root is a credential directory (<tmp>/home/.aws): its
// credentials are a secret by the absolute path on every surface.
func TestDenylistRootIsACredentialDirectory(t *testing.T) {
	ctx := context.Background()
	value := "AWSsecretKEY0123456789abcdefghij"
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "home", ".aws")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, root, "init", "-q", "-b", "main")
	testutil.WriteFile(t, root, "credentials", "[default]\naws_secret_access_key = "+value+"\n")
	testutil.WriteFile(t, root, "notes.txt", "see credentials\n")
	h := open(t)
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: r.ID, Path: "credentials"}); errs.CodeOf(err) != errs.SecretPathDenied {
		t.Errorf("read_file credentials under %s: %v, want SECRET_PATH_DENIED", root, err)
	}
	if got, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: r.ID, Path: "notes.txt"}); err != nil || !strings.Contains(got.Content, "see credentials") {
		t.Errorf("read_file notes.txt (the positive control): %+v, %v", got, err)
	}
	if res, err := h.Search(ctx, harness.SearchArgs{RepoID: r.ID, Query: value[:12]}); err != nil || len(res.Matches) != 0 {
		t.Errorf("search for the credential: %+v, %v", res, err)
	}
	if _, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: r.ID, Argv: []string{"cat", "credentials"}}); errs.CodeOf(err) != errs.SecretPathDenied {
		t.Errorf("cat credentials: %v, want SECRET_PATH_DENIED", err)
	}
	if out, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: r.ID, Argv: []string{"grep", "-r", "aws_secret", "."}}); err == nil && strings.Contains(out.Stdout.Text, value) {
		t.Errorf("grep -r read the credential: %q", out.Stdout.Text)
	}
}
