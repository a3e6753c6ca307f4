package secrets

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/testutil"
)

func TestLearnWorkTreeIndexHead(t *testing.T) {
	var (
		headOld   = "head-" + fake(10, 12)  // committed, then changed in the work tree
		workNew   = "work-" + fake(11, 12)  // the work tree's version
		indexOnly = "index-" + fake(12, 12) // staged, then deleted from the work tree
		headOnly  = "headonly-" + fake(13, 12)
		quoted    = "quoted value " + fake(14, 6)
		commented = "old-" + fake(15, 12)
		weird     = "weird-" + fake(16, 12)
		pemBody   = []string{fake(17, 64), fake(18, 64), fake(19, 12) + "=="}
	)
	pem := "-----BEGIN EC PRIVATE" + " KEY-----\n" + strings.Join(pemBody, "\n") + "\n-----END EC PRIVATE KEY-----\n"
	root := testutil.Repo(t, map[string]string{
		".env":                 "API_KEY=" + headOld + "\n",
		"config/.env.prod":     "export DB_PASS=" + headOnly + " # prod\n",
		"certs/tls.key":        pem,
		"we ird/[x]*.pem":      "K=" + weird + "\n",
		"app/secrets.yaml":     "db:\n  password: \"" + quoted + "\" # yaml comment\n#  token=" + commented + "\n",
		"app/not-a-secret.txt": "K=" + fake(20, 12) + "\n",
	})
	writeFile(t, root, ".env", "API_KEY="+workNew+"\n")
	writeFile(t, root, "staged/.env", "T="+indexOnly+"\n")
	testutil.Git(t, root, "add", "staged/.env")
	os.Remove(filepath.Join(root, "staged/.env"))
	testutil.Git(t, root, "rm", "-q", "--cached", "config/.env.prod", "we ird/[x]*.pem")
	os.Remove(filepath.Join(root, "config/.env.prod"))
	os.Remove(filepath.Join(root, "we ird/[x]*.pem"))

	files := []string{".env", "staged/.env", "config/.env.prod", "certs/tls.key", "we ird/[x]*.pem", "app/secrets.yaml", "absent/.env"}
	got, err := Learn(testCtx(t), testGit, root, files)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{headOld, workNew, indexOnly, headOnly, quoted, commented, weird, strings.Join(pemBody, "")}, pemBody[:2]...)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("value %q not learned", w)
		}
	}
	if slices.Contains(got, fake(20, 12)) {
		t.Error("learned a value of a file that was not asked for")
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Error("values not sorted and distinct")
	}

	// Without git only the work tree is read.
	wt, err := Learn(testCtx(t), nil, root, files)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(wt, workNew) || slices.Contains(wt, headOld) || slices.Contains(wt, indexOnly) || slices.Contains(wt, headOnly) {
		t.Errorf("work tree only: got %d values, want the work tree's", len(wt))
	}
}

func TestLearnDirectoryPath(t *testing.T) {
	v := "deploy-" + fake(30, 20)
	root := testutil.Repo(t, map[string]string{".ssh/deploy": "KEY=" + v + "\n"})
	os.RemoveAll(filepath.Join(root, ".ssh"))
	got, err := Learn(testCtx(t), testGit, root, []string{".ssh"})
	if err != nil || !slices.Contains(got, v) {
		t.Errorf("Learn(.ssh) = %d values, %v; want the file below it from HEAD", len(got), err)
	}
}

func TestLearnManyFiles(t *testing.T) {
	files := map[string]string{}
	var paths []string
	for i := range maxPathspecs + 6 {
		p := fmt.Sprintf("d%02d/.env", i)
		files[p] = fmt.Sprintf("K=value-%02d-%s\n", i, fake(uint64(i), 8))
		paths = append(paths, p)
	}
	root := testutil.Repo(t, files)
	for _, p := range paths {
		os.Remove(filepath.Join(root, p))
	}
	got, err := Learn(testCtx(t), testGit, root, paths[:len(paths)-1])
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		v := strings.TrimSpace(strings.TrimPrefix(files[p], "K="))
		if in := slices.Contains(got, v); in != (i < len(paths)-1) {
			t.Errorf("%s: learned %v", p, in)
		}
	}
}

func TestLearnNoRepository(t *testing.T) {
	root := t.TempDir()
	v := "plain-" + fake(40, 12)
	writeFile(t, root, ".env", "A="+v+"\n")
	got, err := Learn(testCtx(t), testGit, root, []string{".env", "missing.pem"})
	if err != nil || !slices.Equal(got, []string{v}) {
		t.Errorf("Learn outside a repository = %q, %v", got, err)
	}
}

func TestLearnUnbornHead(t *testing.T) {
	root := t.TempDir()
	testutil.Git(t, root, "init", "-q")
	v := "staged-" + fake(41, 12)
	writeFile(t, root, ".env", "A="+v+"\n")
	testutil.Git(t, root, "add", ".env")
	os.Remove(filepath.Join(root, ".env"))
	got, err := Learn(testCtx(t), testGit, root, []string{".env"})
	if err != nil || !slices.Equal(got, []string{v}) {
		t.Errorf("Learn with an unborn HEAD = %q, %v", got, err)
	}
}

func TestLearnSkipsSpecialFiles(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	inside := "inside-" + fake(42, 12)
	writeFile(t, outside, "target", "A=outside-"+fake(43, 12)+"\n")
	writeFile(t, root, "real.txt", "A="+inside+"\n")
	if err := os.Symlink(filepath.Join(outside, "target"), filepath.Join(root, ".env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.txt", filepath.Join(root, "in.pem")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.env"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "dir.pem/x", "A=not-read-"+fake(44, 12))
	got, err := Learn(testCtx(t), nil, root, []string{".env", "out/target", "in.pem", "fifo.env", "dir.pem"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{inside}) {
		t.Errorf("Learn = %q, want only the value behind the symlink that stays inside", got)
	}
}

func TestLearnErrors(t *testing.T) {
	root := t.TempDir()
	v := "secret-" + fake(45, 12)
	writeFile(t, root, ".env", "A="+v+"\n")
	for _, bad := range []string{"../.env", "/etc/passwd", "a/../.env", "", "./.env", "a//b"} {
		_, err := Learn(testCtx(t), nil, root, []string{bad})
		if errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("Learn(%q) error %v, want INVALID_ARGUMENT", bad, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Learn(ctx, testGit, root, []string{".env"})
	if errs.CodeOf(err) != errs.Cancelled || strings.Contains(err.Error(), v) {
		t.Errorf("cancelled Learn: %v", err)
	}
	_, err = Learn(testCtx(t), testGit, filepath.Join(root, "missing"), []string{".env"})
	if errs.CodeOf(err) != errs.NotFound {
		t.Errorf("Learn in a missing root: %v", err)
	}
}

func TestLearnReadsAtMostMaxFileBytes(t *testing.T) {
	root := t.TempDir()
	early, late := "early-"+fake(46, 12), "late-"+fake(47, 12)
	writeFile(t, root, ".env", "A="+early+"\n"+strings.Repeat("#\n", MaxFileBytes/2)+"B="+late+"\n")
	got, err := Learn(testCtx(t), nil, root, []string{".env"})
	if err != nil || !slices.Contains(got, early) || slices.Contains(got, late) {
		t.Errorf("Learn = %d values, %v; want only the value in the first %d bytes", len(got), err, MaxFileBytes)
	}
}
