package preimage

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestDiff(t *testing.T) {
	e := func(p, k, h string, m uint32) Entry { return Entry{Path: p, Kind: k, SHA256: h, Mode: m} }
	before := &Tree{Entries: []Entry{
		e("a", KindFile, "1", 0o644), e("b", KindFile, "2", 0o644), e("d", KindDir, "", 0o755),
		e("d/x", KindFile, "3", 0o600), e("l", KindLink, "4", 0o777), e("m", KindFile, "5", 0o644),
	}}
	after := &Tree{Entries: []Entry{
		e("a", KindFile, "1", 0o644), e("b", KindFile, "9", 0o644), e("c", KindFile, "6", 0o644),
		e("l", KindFile, "4", 0o644), e("m", KindFile, "5", 0o755),
	}}
	var got []string
	for _, d := range Diff(before, after) {
		s := d.Path + ":"
		if d.Before != nil {
			s += d.Before.Kind
		}
		s += ">"
		if d.After != nil {
			s += d.After.Kind
		}
		got = append(got, s)
	}
	want := []string{"b:f>f", "c:>f", "d:d>", "d/x:f>", "l:l>f", "m:f>f"}
	if !slices.Equal(got, want) {
		t.Fatalf("Diff = %q, want %q", got, want)
	}
	if len(Diff(before, before)) != 0 {
		t.Fatal("a tree differs from itself")
	}
}

func treeFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range map[string]string{"a.txt": "a", "pkg/b.txt": "bb", "pkg/c/d.txt": "ddd", ".git/HEAD": "ref", "secret.env": "S=1", "out/o": "o"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func paths(tr *Tree) []string {
	var out []string
	for _, e := range tr.Entries {
		out = append(out, e.Path)
	}
	return out
}

// A tree leaves out .git, secrets and skipped paths, walks only its
// scope, keeps every content, and refuses beyond its budget.
func TestTakeTree(t *testing.T) {
	root := treeFixture(t)
	st, _ := Open(Config{})
	o := TreeOptions{Root: root, Store: st,
		Secret: func(rel string) bool { return rel == "secret.env" },
		Skip:   func(rel string, dir bool) bool { return dir && rel == "out" }}
	tr, err := TakeTree(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(tr), []string{"a.txt", "pkg", "pkg/b.txt", "pkg/c", "pkg/c/d.txt"}; !slices.Equal(got, want) {
		t.Fatalf("paths %q, want %q", got, want)
	}
	if tr.Bytes != 6 || st.Stats().Count != 3 || !st.Has(Digest([]byte("ddd"))) || st.Has(Digest([]byte("S=1"))) {
		t.Fatalf("bytes %d, store %+v: want 6 bytes, the 3 contents, no secret", tr.Bytes, st.Stats())
	}
	o.Scope = []string{"pkg/c", "pkg", "missing"}
	tr, err = TakeTree(context.Background(), o)
	if err != nil || !slices.Equal(paths(tr), []string{"pkg", "pkg/b.txt", "pkg/c", "pkg/c/d.txt"}) || !tr.Has("pkg/c") || tr.Has("pk") {
		t.Fatalf("scoped: %q, %v", paths(tr), err)
	}
	for _, b := range []struct {
		bytes int64
		files int
		name  string
	}{{4, 0, "JobUndoMaxBytes"}, {0, 2, "JobUndoMaxFiles"}} {
		o.MaxBytes, o.MaxFiles = b.bytes, b.files
		_, err := TakeTree(context.Background(), o)
		if errs.CodeOf(err) != errs.BudgetExceeded || errs.From(err).Details["budget"] != b.name {
			t.Fatalf("over %s: got %v, want BUDGET_EXCEEDED naming it", b.name, err)
		}
	}
}

// A file whose stat did not change since the previous tree (and not too
// close to it) is not read again; one changed close to it is.
func TestTakeTreeCache(t *testing.T) {
	root := treeFixture(t)
	st, _ := Open(Config{})
	o := TreeOptions{Root: root, Store: st, Scope: []string{"a.txt"}}
	prev, err := TakeTree(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// A stand-in digest the store holds: a cached answer shows it.
	stand, _ := st.Put([]byte("stand-in"))
	prev.Entries[0].SHA256 = stand
	prev.At = time.Now().Add(2 * time.Second)
	o.Prev = prev
	tr, err := TakeTree(context.Background(), o)
	if err != nil || tr.Entries[0].SHA256 != stand {
		t.Fatalf("unchanged file: digest %s, %v; want the cached one", tr.Entries[0].SHA256, err)
	}
	prev.At = time.Now() // racy: changed within a second of that tree
	tr, _ = TakeTree(context.Background(), o)
	if tr.Entries[0].SHA256 != Digest([]byte("a")) {
		t.Fatal("a file changed close to the previous tree was not read again")
	}
	file := filepath.Join(t.TempDir(), "tree.json")
	if err := SaveTree(file, tr); err != nil {
		t.Fatal(err)
	}
	back, err := LoadTree(file)
	if err != nil || TreeHash(back) != TreeHash(tr) {
		t.Fatalf("saved tree read back differs: %v", err)
	}
}
