package secrets

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/testutil"
)

// listTracked is the reference of trackedSecrets' paths: it returns the paths of the index and of HEAD that deny matches,
// sorted. Outside a repository, and for an unborn HEAD, there are none.
func listTracked(ctx context.Context, git *gitx.Git, root string, deny *pathsafe.Denylist) ([]string, error) {
	var paths []string
	add := func(out []byte, truncated bool) {
		recs := bytes.Split(out, []byte{0})
		if truncated && len(recs) > 0 {
			recs = recs[:len(recs)-1] // cut mid-path
		}
		for _, r := range recs {
			if p := string(r); p != "" {
				if _, ok := deny.Match(p); ok {
					paths = append(paths, p)
				}
			}
		}
	}
	out, trunc, err := git.Run(ctx, root, 0, "ls-files", "-z")
	if err != nil {
		if errs.CodeOf(err) == errs.NotAGitRepository {
			return nil, nil
		}
		return nil, err
	}
	add(out, trunc)
	out, trunc, err = git.Run(ctx, root, 0, "ls-tree", "-r", "-z", "--name-only", "HEAD")
	switch {
	case err == nil:
		add(out, trunc)
	case errs.CodeOf(err) != errs.NotFound: // NotFound: unborn HEAD
		return nil, err
	}
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// trackedSecrets answers, in two listings, what listTracked and
// trackedBlobs answer in four: the secret paths of the index and HEAD, the
// blobs of them (what the Set's Blobs hold) and of the files below a secret
// directory (what Learn reads), with a staged change, a file only in HEAD
// and a secret directory.
func TestTrackedSecretsAgreesWithTheListings(t *testing.T) {
	root := testutil.Repo(t, map[string]string{".env": "A=" + fake(80, 16) + "\n", "x/prod.key": "k\n", ".ssh/id": "i\n",
		".ssh/deep/cfg": "c\n", "main.go": "package main\n", "old.pem": "p\n"})
	testutil.Git(t, root, "rm", "-q", "--cached", "old.pem")
	writeFile(t, root, ".env", "A="+fake(81, 16)+"\n")
	testutil.Git(t, root, "add", ".env")
	ctx, deny := testCtx(t), defaultDeny(t)
	paths, blobs, err := trackedSecrets(ctx, testGit, root, deny)
	if err != nil {
		t.Fatal(err)
	}
	want, err := listTracked(ctx, testGit, root, deny)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(paths, want) {
		t.Errorf("paths = %q, want %q", paths, want)
	}
	for _, set := range [][]string{want, union(want, []string{".ssh"}), {".ssh"}, {".env"}} {
		ref, err := trackedBlobs(ctx, testGit, root, set)
		if err != nil {
			t.Fatal(err)
		}
		var got []blob
		for _, b := range blobs {
			if wanted(set, b.path) {
				got = append(got, b)
			}
		}
		if !slices.Equal(got, ref) {
			t.Errorf("blobs of %q = %v, want %v", set, got, ref)
		}
	}
	if len(blobs) < 5 {
		t.Errorf("blobs = %v, want both .env versions, the key, the .ssh files and the pem of HEAD", blobs)
	}
}
