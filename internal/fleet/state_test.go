package fleet

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/internal/worktree"
)

// dirtyRepo makes a repository with a commit and, on top of it, every
// kind of uncommitted change a worktree job carries over, plus secret
// files it does not: it answers the root and the commit.
func dirtyRepo(t *testing.T) (string, string) {
	t.Helper()
	root := testutil.Repo(t, map[string]string{
		"text.txt":          "one\n",
		"bin.dat":           "\x00\x01\x02binary\x00\xff\n",
		"del.txt":           "to delete\n",
		"mode.sh":           "#!/bin/sh\necho hi\n",
		"crlf.txt":          "a\r\nb\r\n",
		"config/secret.key": "SECRETVALUE-committed\n",
		".gitignore":        "*.log\n",
	})
	if err := os.Symlink("text.txt", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, root, "add", "link")
	testutil.Git(t, root, "commit", "-q", "-m", "a link")
	commit := testutil.Git(t, root, "rev-parse", "HEAD")

	w := func(name, body string, perm fs.FileMode) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil {
			t.Fatal(err)
		}
	}
	w("text.txt", "one\ntwo\n", 0o644)                       // a change
	w("bin.dat", "\x00\x09binary, changed\x00\xfe\n", 0o644) // a binary change
	if err := os.Remove(filepath.Join(root, "del.txt")); err != nil {
		t.Fatal(err) // a deletion
	}
	if err := os.Chmod(filepath.Join(root, "mode.sh"), 0o755); err != nil {
		t.Fatal(err) // a mode change
	}
	w("crlf.txt", "a\r\nb\r\nc\r\n", 0o644) // CRLF kept
	if err := os.Remove(filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bin.dat", filepath.Join(root, "link")); err != nil {
		t.Fatal(err) // a symlink retargeted
	}
	testutil.Git(t, root, "add", "text.txt") // staged and unstaged alike
	w("new/dir/u.txt", "untracked\n", 0o600)
	if err := os.Chmod(filepath.Join(root, "new", "dir"), 0o750); err != nil {
		t.Fatal(err)
	}
	w("new/run.sh", "#!/bin/sh\necho run\n", 0o755)
	w("new/empty", "", 0o644)
	if err := os.Symlink("../text.txt", filepath.Join(root, "new", "ulink")); err != nil {
		t.Fatal(err) // an untracked symlink
	}
	w("x.log", "ignored\n", 0o644)                       // ignored: not carried
	w(".env", "SECRET=hunter2\n", 0o600)                 // an untracked secret file
	w("config/secret.key", "SECRETVALUE-dirty\n", 0o600) // a tracked secret file's change
	return root, commit
}

// secretSkip is what job.WorktreeSkip answers for dirtyRepo: the known
// secret files (Paths) and names the denylist matches (File).
var secretSkip = worktree.Skip{Paths: []string{"config/secret.key"}, File: func(rel string, _ fs.FileInfo) bool { return rel == ".env" }}

// entry is one file of a tree as a job sees it.
type entry struct {
	mode fs.FileMode
	data string
}

// snapshot answers every entry below dir but .git: type, permissions,
// content or link target.
func snapshot(t *testing.T, dir string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if rel == ".git" { // a directory in a clone, a file in a worktree
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := entry{mode: fi.Mode()}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e.data = target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.data = string(b)
		}
		out[filepath.ToSlash(rel)] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStateRoundTripIsWhatALocalWorktreeGets: the state captured on one
// node and rebuilt on another (a clone with the commit) gives the job
// exactly the files a local worktree job gets (a binary change, a
// deletion, a mode change, CRLF, symlinks, untracked files and their
// directories' modes), staged alike; both nodes compute the same tree
// id; the user's index is untouched; the secret files' values are not
// in the blob.
func TestStateRoundTripIsWhatALocalWorktreeGets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := &gitx.Git{}
	root, commit := dirtyRepo(t)
	indexBefore, err := os.ReadFile(filepath.Join(root, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "local")
	if _, err := worktree.CreateSkipping(ctx, g, root, local, secretSkip); err != nil {
		t.Fatal(err)
	}

	st, err := CaptureState(ctx, g, root, commit, secretSkip)
	if err != nil {
		t.Fatal(err)
	}
	blob, err := EncodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := EncodeState(st)
	if !bytes.Equal(blob, again) {
		t.Fatal("the same state encodes to different blobs")
	}
	treeHere, err := StateTree(ctx, g, root, commit, st)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(root, ".git", "index")); !bytes.Equal(after, indexBefore) {
		t.Fatal("capturing the state changed the checkout's index")
	}
	if left, _ := filepath.Glob(filepath.Join(root, ".git", "harnessd-state-*")); len(left) > 0 {
		t.Fatalf("temporary index files left behind: %v", left)
	}
	raw := gunzip(t, blob)
	for _, secret := range []string{"hunter2", "SECRETVALUE", "ignored"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the blob carries %q", secret)
		}
	}

	// Another node: a clone that has the commit.
	other := filepath.Join(t.TempDir(), "other")
	testutil.Git(t, filepath.Dir(other), "clone", "-q", "--no-hardlinks", root, other)
	got, err := DecodeState(blob)
	if err != nil {
		t.Fatal(err)
	}
	treeThere, err := StateTree(ctx, g, other, commit, got)
	if err != nil {
		t.Fatal(err)
	}
	if treeThere != treeHere || !isCommit(treeHere) {
		t.Fatalf("tree %s on the other node, %s here", treeThere, treeHere)
	}
	rebuilt := filepath.Join(t.TempDir(), "inputs", "job_1-2")
	if err := MaterializeState(ctx, g, other, commit, rebuilt, got); err != nil {
		t.Fatal(err)
	}
	want, have := snapshot(t, local), snapshot(t, rebuilt)
	for name, w := range want {
		if h, ok := have[name]; !ok || h != w {
			t.Errorf("%s: rebuilt %v %q, a local worktree has %v %q", name, h.mode, h.data, w.mode, w.data)
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is in the rebuilt inputs, not in a local worktree", name)
		}
	}
	// Spot checks that the comparison saw every kind of change.
	for name, w := range map[string]entry{
		"bin.dat":           {0o644, "\x00\x09binary, changed\x00\xfe\n"},
		"mode.sh":           {0o755, "#!/bin/sh\necho hi\n"},
		"crlf.txt":          {0o644, "a\r\nb\r\nc\r\n"},
		"link":              {fs.ModeSymlink | 0o777, "bin.dat"},
		"new/dir":           {fs.ModeDir | 0o750, ""},
		"new/dir/u.txt":     {0o600, "untracked\n"},
		"new/ulink":         {fs.ModeSymlink | 0o777, "../text.txt"},
		"new/empty":         {0o644, ""},
		"config/secret.key": {0o644, "SECRETVALUE-committed\n"},
	} {
		if have[name] != w {
			t.Errorf("rebuilt %s = %v %q, want %v %q", name, have[name].mode, have[name].data, w.mode, w.data)
		}
	}
	for _, gone := range []string{"del.txt", ".env", "x.log"} {
		if _, ok := have[gone]; ok {
			t.Errorf("rebuilt inputs have %s", gone)
		}
	}
	// Staged alike: the tracked changes are in the index of both.
	if l, r := testutil.Git(t, local, "diff", "--cached", "--raw"), testutil.Git(t, rebuilt, "diff", "--cached", "--raw"); l != r || l == "" {
		t.Fatalf("staged changes differ:\nlocal:\n%s\nrebuilt:\n%s", l, r)
	}

	// One byte of difference is another tree.
	changed := got
	changed.Files = append([]StateFile(nil), got.Files...)
	for i, f := range changed.Files {
		if f.Name == "new/dir/u.txt" {
			changed.Files[i].Data = []byte("untracked!\n")
		}
	}
	if tr, err := StateTree(ctx, g, other, commit, changed); err != nil || tr == treeHere {
		t.Fatalf("a changed state has tree %s (%v), the same as the original's", tr, err)
	}
}

// TestCaptureStateRefusesTooBig: a state over StateMax is not shipped
// (BUDGET_EXCEEDED), and an empty one ships nothing.
func TestCaptureStateRefusesTooBig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := &gitx.Git{}
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	commit := testutil.Git(t, root, "rev-parse", "HEAD")
	st, err := CaptureState(ctx, g, root, commit, worktree.Skip{})
	if err != nil || !st.Empty() {
		t.Fatalf("a clean checkout's state = %d bytes of patch, %d files, %v; want empty", len(st.Patch), len(st.Files), err)
	}
	f, err := os.Create(filepath.Join(root, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(StateMax + 1); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if _, err := CaptureState(ctx, g, root, commit, worktree.Skip{}); errs.CodeOf(err) != errs.BudgetExceeded || !strings.Contains(err.Error(), "64 MiB") {
		t.Fatalf("a state over StateMax: %v, want BUDGET_EXCEEDED naming the limit", err)
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// tarGz builds a blob of raw tar headers (and bodies), as an attacker
// could.
func tarGz(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		body := []byte(strings.Repeat("x", int(h.Size)))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeStateRefusesWhatEncodeStateDoesNotMake: names that leave the
// work tree or reach into .git, entries below a symlink of the state,
// other types, duplicates, another layout, or not gzip at all.
func TestDecodeStateRefusesWhatEncodeStateDoesNotMake(t *testing.T) {
	reg := func(name string) tar.Header {
		return tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: 2}
	}
	for _, tc := range []struct {
		name string
		blob []byte
		want string
	}{
		{"traversal", tarGz(t, reg("files/../../etc/passwd")), "outside the work tree"},
		{"traversal inside", tarGz(t, reg("files/a/../../x")), "clean relative path"},
		{"absolute", tarGz(t, reg("files//etc/passwd")), "clean relative path"},
		{"into .git", tarGz(t, reg("files/.git/hooks/pre-commit")), "into .git"},
		{"into .GIT", tarGz(t, reg("files/sub/.GIT/config")), "into .git"},
		{"below a symlink", tarGz(t, tar.Header{Typeflag: tar.TypeSymlink, Name: "files/l", Linkname: "/etc", Mode: 0o777}, reg("files/l/passwd")), "below its symlink"},
		{"a fifo", tarGz(t, tar.Header{Typeflag: tar.TypeFifo, Name: "files/f", Mode: 0o644}), "only files"},
		{"a hard link", tarGz(t, tar.Header{Typeflag: tar.TypeLink, Name: "files/h", Linkname: "files/a", Mode: 0o644}), "only files"},
		{"twice", tarGz(t, reg("files/a"), reg("files/a")), "twice"},
		{"out of order", tarGz(t, reg("files/b"), reg("files/a")), "out of order"},
		{"patch after files", tarGz(t, reg("files/a"), reg("patch")), "first entry"},
		{"another layout", tarGz(t, reg("etc/passwd")), "unexpected entry"},
		{"not gzip", []byte("patch\x00\x00"), "not gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeState(tc.blob)
			if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeState = %v; want INVALID_ARGUMENT with %q", err, tc.want)
			}
		})
	}
	// The encoder refuses the same names.
	if _, err := EncodeState(State{Files: []StateFile{{Name: "../x", Data: []byte("x")}}}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("EncodeState of ../x = %v; want INVALID_ARGUMENT", err)
	}
}

// TestJobStateStoredFetchedAndRefused: a state blob stored in etcd (in
// chunks) comes back byte for byte on another node; a chunk substituted
// under the right key (right digest in the record, wrong content) is
// refused; a blob too large for etcd without a remote cache is not
// shipped; the job's end removes its state from etcd.
func TestJobStateStoredFetchedAndRefused(t *testing.T) {
	prefix := testPrefix(t)
	ns := joinN(t, []string{shared[0].ClientURL(), shared[1].ClientURL()}, prefix, 2, 2*time.Second)
	a, b := ns[0], ns[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	blob := make([]byte, 2*stateChunk+12345) // 3 chunks, incompressible
	_, _ = rand.Read(blob)
	rec := jobRec("job_state1", "state-1")
	d, err := a.PutJobState(ctx, rec.JobID, blob)
	if err != nil {
		t.Fatal(err)
	}
	rec.StateBlob, rec.StateTree = d, rootA
	got, err := b.JobState(ctx, rec)
	if err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("JobState on b = %d bytes, %v; want the %d bytes a stored", len(got), err, len(blob))
	}

	// Substituted content under the right key.
	cli := rawClient(t, []string{shared[2].ClientURL()})
	if _, err := cli.Put(ctx, stateChunkKey(a.keys, rec.JobID, 1), strings.Repeat("A", stateChunk)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JobState(ctx, rec); errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), "does not match its digest") {
		t.Fatalf("a substituted chunk: %v; want it refused", err)
	}
	// An extra chunk appended.
	if _, err := a.PutJobState(ctx, rec.JobID, blob); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, stateChunkKey(a.keys, rec.JobID, 3), "more"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JobState(ctx, rec); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("an extra chunk: %v; want it refused", err)
	}
	if _, err := b.JobState(ctx, JobRecord{JobID: "job_nostate", StateBlob: d}); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("a job without stored state: %v; want NOT_FOUND", err)
	}
	big := make([]byte, StateEtcdMax+1)
	if _, err := a.PutJobState(ctx, "job_big", big); errs.CodeOf(err) != errs.BudgetExceeded || !strings.Contains(err.Error(), "--remote-cache") {
		t.Fatalf("a state over StateEtcdMax without a remote cache: %v; want BUDGET_EXCEEDED naming --remote-cache", err)
	}

	// Started and finished: the state goes with the job's end.
	a.DropJobState(ctx, rec.JobID)
	if _, err := a.PutJobState(ctx, rec.JobID, blob); err != nil {
		t.Fatal(err)
	}
	_, claim, _, err := a.StartJob(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.FinishJob(ctx, rec.JobID, claim.Token, JobRecord{State: "succeeded"}); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, a.keys.jobState(rec.JobID), clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("after the job's end, %d state keys are left (%v)", len(resp.Kvs), err)
	}
}

// TestLargeJobStateGoesToTheRemoteCache: a state blob over StateEtcdMax
// goes to the remote cache by its digest (nothing in etcd) and comes
// back on another node; the cache answering other bytes is refused.
func TestLargeJobStateGoesToTheRemoteCache(t *testing.T) {
	remote := &bazelRemote{ac: map[string][]byte{}, cas: map[string][]byte{}}
	srv := httptest.NewServer(remote)
	t.Cleanup(srv.Close)
	prefix := testPrefix(t)
	cfg := func(name string) Config {
		hc, err := NewHTTPCache(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		return Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: name, Cache: hc}
	}
	a, b := join(t, cfg("a")), join(t, cfg("b"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	blob := make([]byte, StateEtcdMax+1)
	_, _ = rand.Read(blob)
	d, err := a.PutJobState(ctx, "job_large", blob)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := a.cli.Get(ctx, a.keys.jobState("job_large"), clientv3.WithPrefix(), clientv3.WithKeysOnly()); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("a large state went to etcd (%d keys, %v)", len(resp.Kvs), err)
	}
	rec := JobRecord{JobID: "job_large", StateBlob: d}
	if got, err := b.JobState(ctx, rec); err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("JobState on b = %d bytes, %v", len(got), err)
	}
	remote.mu.Lock()
	remote.cas[d.Hash] = bytes.Repeat([]byte("A"), len(blob))
	remote.mu.Unlock()
	if _, err := b.JobState(ctx, rec); errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), "the remote cache") {
		t.Fatalf("other bytes from the remote cache: %v; want them refused", err)
	}
}

// TestSealedJobStateIsCiphertext: with the fleet key, what etcd holds of
// a state is ciphertext (its plain bytes appear nowhere), a node with the
// key reads it back, and the stored bytes moved to another job (its
// record naming their digest) do not open.
func TestSealedJobStateIsCiphertext(t *testing.T) {
	prefix := testPrefix(t)
	key := []byte("fleet key of the test, 32 bytes!")
	cfg := func(name string) Config {
		return Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: name, SealKey: key}
	}
	a, b := join(t, cfg("a")), join(t, cfg("b"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plain := []byte("package main // uncommitted code of the checkout, a marker: 7f3a9c")
	d, err := a.PutJobState(ctx, "job_sealed", plain)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.cli.Get(ctx, a.keys.jobState("job_sealed"), clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("stored state: %d keys, %v", len(resp.Kvs), err)
	}
	stored := resp.Kvs[0].Value
	if bytes.Contains(stored, []byte("7f3a9c")) || d != DigestOf(stored) {
		t.Fatalf("etcd holds the plain state (or its digest is not the stored bytes')")
	}
	if got, err := b.JobState(ctx, JobRecord{JobID: "job_sealed", StateBlob: d}); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("JobState on b = %q, %v", got, err)
	}
	if _, err := a.cli.Put(ctx, stateChunkKey(a.keys, "job_moved", 0), string(stored)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JobState(ctx, JobRecord{JobID: "job_moved", StateBlob: d}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("another job's sealed state: %v; want it refused", err)
	}
}
