package preimage

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

func diskStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	cfg.Dir = filepath.Join(t.TempDir(), "preimages")
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// What PutPending does with each content: small new content is written
// without an fsync and stays pending (its durable copy rides the write's
// commit); large content, content already synced, and any content in
// memory are not pending and a large one is fsynced at once.
func TestPutPending(t *testing.T) {
	big := bytes.Repeat([]byte("x"), InlineMax+1)
	for _, c := range []struct {
		name        string
		before      func(s *Store) // what the store holds first
		data        []byte
		memory      bool
		wantPending bool
		wantFsyncs  uint64
	}{
		{name: "small and new", data: []byte("small"), wantPending: true},
		{name: "at the inline bound", data: bytes.Repeat([]byte("y"), InlineMax), wantPending: true},
		{name: "larger than the bound", data: big, wantFsyncs: 1},
		{name: "already stored and synced", before: func(s *Store) { _, _ = s.Put([]byte("kept")) }, data: []byte("kept")},
		{name: "already pending", before: func(s *Store) { _, _ = s.PutPending([]byte("twice")) }, data: []byte("twice"), wantPending: true},
		{name: "written unsynced by a tree snapshot", before: func(s *Store) { _, _ = s.put([]byte("tree"), false, false) }, data: []byte("tree"), wantPending: true},
		{name: "in memory", data: []byte("small"), memory: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s *Store
			if c.memory {
				s, _ = Open(Config{})
			} else {
				s = diskStore(t, Config{})
			}
			if c.before != nil {
				c.before(s)
			}
			fsyncs := s.Stats().Fsyncs
			d, err := s.PutPending(c.data)
			if err != nil {
				t.Fatal(err)
			}
			if n := s.Stats().Fsyncs - fsyncs; n != c.wantFsyncs {
				t.Errorf("%d fsyncs, want %d", n, c.wantFsyncs)
			}
			got, pending := s.Pending(d)
			if pending != c.wantPending || pending && !bytes.Equal(got, c.data) {
				t.Errorf("pending %v (%d bytes), want %v", pending, len(got), c.wantPending)
			}
			if b, err := s.Get(d); err != nil || !bytes.Equal(b, c.data) {
				t.Errorf("get: %d bytes, %v", len(b), err)
			}
		})
	}
}

// Settle syncs the pending files with one syncfs and returns their
// digests; afterwards nothing is pending. A pending file pruned meanwhile
// is not returned. A synced Put of content written without an fsync
// fsyncs it.
func TestSettle(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	s := diskStore(t, Config{MaxAge: time.Hour, Now: clk.now})
	old, _ := s.PutPending([]byte("old"))
	clk.t = clk.t.Add(2 * time.Hour)
	var want []string
	for i := range 3 {
		d, err := s.PutPending([]byte("content " + strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, d)
	}
	// The first Put an hour on swept the old one, past MaxAge.
	if s.Has(old) {
		t.Fatal("the old pre-image was not pruned")
	}
	if _, ok := s.Pending(old); ok {
		t.Fatal("a pruned pre-image is still pending")
	}
	fsyncs := s.Stats().Fsyncs
	got, err := s.Settle()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("settled %v, want %v", got, want)
	}
	for _, d := range want {
		if _, ok := s.Pending(d); ok {
			t.Errorf("%s still pending after Settle", d[:8])
		}
	}
	if n := s.Stats().Fsyncs - fsyncs; n != 1 {
		t.Errorf("%d syncs, want one syncfs for the 3 files", n)
	}
	if st := s.Stats(); st.Pending != 0 {
		t.Errorf("stats %+v, want none pending", st)
	}
	if again, err := s.Settle(); err != nil || len(again) != 0 {
		t.Errorf("second settle %v, %v; want nothing", again, err)
	}

	d, _ := s.put([]byte("snapshot"), false, false)
	fsyncs = s.Stats().Fsyncs
	if _, err := s.Put([]byte("snapshot")); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().Fsyncs - fsyncs; n != 1 {
		t.Errorf("a synced Put of content written unsynced made %d fsyncs, want 1", n)
	}
	if s.unsynced[mustParse(t, d)] {
		t.Error("still unsynced after a synced Put")
	}
}

// Due claims a settle once enough are pending, and only one at a time.
func TestDue(t *testing.T) {
	s := diskStore(t, Config{})
	for i := range settleCount - 1 {
		_, _ = s.PutPending([]byte("c" + strconv.Itoa(i)))
	}
	if s.Due() {
		t.Fatal("due below the count")
	}
	_, _ = s.PutPending([]byte("last"))
	if !s.Due() {
		t.Fatal("not due at the count")
	}
	if s.Due() {
		t.Fatal("due twice: a second settle claimed while the first runs")
	}
	if _, err := s.Settle(); err != nil {
		t.Fatal(err)
	}
	_, _ = s.PutPending(bytes.Repeat([]byte("z"), settleBytes/2+1))
	if s.Due() {
		t.Fatal("due: one pending of less than the byte bound")
	}
}

// Restore rewrites a pre-image a power loss lost or garbled from its
// durable copy, keeps an intact one, and refuses a copy that is not its
// digest's content.
func TestRestore(t *testing.T) {
	for _, c := range []struct {
		name  string
		crash func(t *testing.T, path string)
	}{
		{"intact", func(*testing.T, string) {}},
		{"lost", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}},
		{"garbled", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("\x00\x00\x00"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"empty", func(t *testing.T, p string) {
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "preimages")
			s, _ := Open(Config{Dir: dir})
			data := []byte("before the write\n")
			d, _ := s.PutPending(data)
			c.crash(t, s.path(d))
			// The next start: a new store over the same directory.
			s2, err := Open(Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if err := s2.Restore(d, data); err != nil {
				t.Fatal(err)
			}
			if b, err := s2.Get(d); err != nil || !bytes.Equal(b, data) {
				t.Fatalf("after restore: %q, %v", b, err)
			}
			if st := s2.Stats(); st.Count != 1 || st.Bytes != int64(len(data)) {
				t.Fatalf("stats %+v", st)
			}
			if err := s2.Restore(d, []byte("other content")); errs.CodeOf(err) != errs.StoreDamaged {
				t.Fatalf("a copy of other content: %v, want STORE_DAMAGED", err)
			}
		})
	}
}

func mustParse(t *testing.T, d string) sum {
	t.Helper()
	k, ok := parse(d)
	if !ok {
		t.Fatalf("bad digest %q", d)
	}
	return k
}
