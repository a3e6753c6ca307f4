package odb

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type repo struct {
	t    testing.TB
	root string
}

func newRepo(t testing.TB) *repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	r := &repo{t: t, root: t.TempDir()}
	r.git(nil, "init", "-q", ".")
	return r
}

func (r *repo) git(stdin []byte, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.root
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out.String()
}

func (r *repo) objects() string { return filepath.Join(r.root, ".git", "objects") }

// history commits rounds of edits to a few files, so packs get deltas.
func (r *repo) history(rounds int) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var lines []string
	for i := range 400 {
		lines = append(lines, fmt.Sprintf("line %d of a file that changes a little each commit", i))
	}
	for round := range rounds {
		for f := range 4 {
			i := rnd.IntN(len(lines))
			lines[i] = fmt.Sprintf("edited %d/%d", round, f)
			body := strings.Join(lines, "\n") + "\n"
			if f == 3 {
				body = strings.Repeat(body, 3) // a larger one
			}
			if err := os.WriteFile(filepath.Join(r.root, "f"+strconv.Itoa(f)+".txt"), []byte(body), 0o644); err != nil {
				r.t.Fatal(err)
			}
		}
		r.git(nil, "add", "-A")
		r.git(nil, "commit", "-q", "-m", "round "+strconv.Itoa(round))
	}
}

// allObjects lists every object git has, with its type and content.
func (r *repo) allObjects() map[string][]byte {
	list := r.git(nil, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
	names := strings.Fields(list)
	out := r.git([]byte(strings.Join(names, "\n")+"\n"), "cat-file", "--batch")
	objs := map[string][]byte{}
	br := bufio.NewReader(strings.NewReader(out))
	for range names {
		hdr, err := br.ReadString('\n')
		if err != nil {
			r.t.Fatal(err)
		}
		f := strings.Fields(hdr)
		n, _ := strconv.Atoi(f[2])
		data := make([]byte, n+1)
		if _, err := ioReadFull(br, data); err != nil {
			r.t.Fatal(err)
		}
		objs[f[0]] = data[:n]
	}
	return objs
}

func ioReadFull(br *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := br.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// checkAll reads every object through a Store and compares with git.
func checkAll(t *testing.T, r *repo, what string) {
	t.Helper()
	s, err := Open(r.objects())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	objs := r.allObjects()
	if len(objs) == 0 {
		t.Fatalf("%s: no objects", what)
	}
	for name, want := range objs {
		id, _ := hex.DecodeString(name)
		_, got, err := s.Read(id, 1<<30)
		if err != nil {
			t.Fatalf("%s: read %s: %v", what, name, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %s differs from git's (%d vs %d bytes)", what, name, len(got), len(want))
		}
	}
	missing, _ := hex.DecodeString(strings.Repeat("ab", HashSize))
	if _, _, err := s.Read(missing, 1<<30); !errors.Is(err, ErrNotFound) {
		t.Fatalf("%s: a missing object: %v, want ErrNotFound", what, err)
	}
}

func TestStoreReadsWhatGitWrote(t *testing.T) {
	r := newRepo(t)
	r.history(30)
	checkAll(t, r, "loose")
	r.git(nil, "gc", "-q", "--aggressive")
	checkAll(t, r, "gc (offset deltas)")
	r.git(nil, "-c", "repack.useDeltaBaseOffset=false", "repack", "-q", "-a", "-d", "-f")
	checkAll(t, r, "reference deltas")
	r.git(nil, "-c", "pack.indexVersion=1", "repack", "-q", "-a", "-d", "-f")
	checkAll(t, r, "index v1")
	// Every offset but the first in the large-offset table (git refuses
	// an index whose table holds them all).
	packs, _ := filepath.Glob(filepath.Join(r.objects(), "pack", "*.pack"))
	for _, p := range packs {
		idx := strings.TrimSuffix(p, ".pack") + ".idx"
		os.Remove(idx)
		r.git(nil, "index-pack", "--index-version=2,12", p)
	}
	checkAll(t, r, "large offsets")
	// New loose objects beside the packs, and a second pack.
	r.history(3)
	checkAll(t, r, "packs and loose")
	r.git(nil, "repack", "-q", "-d")
	checkAll(t, r, "two packs")
}

func TestStoreRefusesWhatItDoesNotModel(t *testing.T) {
	r := newRepo(t)
	r.history(1)
	if err := os.WriteFile(filepath.Join(r.objects(), "info", "alternates"), []byte("/nowhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(r.objects()); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("alternates: %v, want ErrUnsupported", err)
	}
	os.Remove(filepath.Join(r.objects(), "info", "alternates"))
	r.git(nil, "repack", "-q", "-a", "-d")
	r.git(nil, "multi-pack-index", "write")
	if _, err := Open(r.objects()); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("multi-pack-index: %v, want ErrUnsupported", err)
	}
}

func TestStoreFollowsRepacks(t *testing.T) {
	r := newRepo(t)
	r.history(5)
	s, err := Open(r.objects())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	head := strings.TrimSpace(r.git(nil, "rev-parse", "HEAD:f0.txt"))
	id, _ := hex.DecodeString(head)
	want := r.git(nil, "cat-file", "blob", head)
	for _, step := range [][]string{{"gc", "-q"}, {"repack", "-q", "-a", "-d", "-f"}, {"gc", "-q", "--aggressive"}} {
		r.git(nil, step...)
		got, err := s.Blob(id, 1<<20)
		if err != nil || string(got) != want {
			t.Fatalf("after %v: %v (%d bytes)", step, err, len(got))
		}
	}
	if _, err := s.Blob(id, 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 10-byte bound: %v, want ErrTooLarge", err)
	}
}

// TestAbbrevMatchesGit: for objects that exist and names that do not but
// share long prefixes with ones that do, packed and loose, Abbrev gives
// what `git rev-parse --short` gives.
func TestAbbrevMatchesGit(t *testing.T) {
	r := newRepo(t)
	// Enough blobs (in one pack, by fast-import) that git's automatic
	// length is 8, and loose ones beside them.
	var fi strings.Builder
	const blobs = 17000
	for i := range blobs {
		data := "blob " + strconv.Itoa(i) + "\n"
		fmt.Fprintf(&fi, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(data), data)
	}
	r.git([]byte(fi.String()), "fast-import", "--quiet")
	r.history(2)
	s, err := Open(r.objects())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.AutoAbbrev(); got != 8 {
		t.Fatalf("AutoAbbrev with %d packed objects = %d, want 8", s.ObjectCount(), got)
	}
	names := strings.Fields(r.git(nil, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"))
	rnd := rand.New(rand.NewPCG(3, 4))
	var ask []string
	for range 40 {
		n := names[rnd.IntN(len(names))]
		ask = append(ask, n)
		// A missing name sharing k digits with n.
		k := 4 + rnd.IntN(34)
		b := []byte(n)
		b[k] = "0123456789abcdef"[(strings.IndexByte("0123456789abcdef", b[k])+1+rnd.IntN(15))%16]
		ask = append(ask, string(b))
	}
	for _, minLen := range []int{-1, 4, 7, 12} {
		short := "--short"
		if minLen > 0 {
			short += "=" + strconv.Itoa(minLen)
		}
		for _, n := range ask {
			want := strings.TrimSpace(r.git(nil, "rev-parse", short, n))
			id, _ := hex.DecodeString(n)
			got, err := s.Abbrev(id, minLen)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("Abbrev(%s, %d) = %s, git says %s", n, minLen, got, want)
			}
		}
	}
}
