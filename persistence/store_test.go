package persistence

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type sample struct {
	Name  string    `json:"name"`
	Count int       `json:"count"`
	When  time.Time `json:"when"`
}

func openMem(t *testing.T) *Store {
	t.Helper()
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestPutGetDelete(t *testing.T) {
	s := openMem(t)
	k := RepoKey("r1")
	want := sample{Name: "a", Count: 3}
	if err := s.PutSync(k, want); err != nil {
		t.Fatal(err)
	}
	var got sample
	if err := s.Get(k, &got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if ok, err := s.Has(k); !ok || err != nil {
		t.Fatalf("Has = %v, %v, want true, nil", ok, err)
	}
	if err := s.Delete(k); err != nil {
		t.Fatal(err)
	}
	if err := s.Get(k, &got); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after delete: err = %v, want ErrNotFound", err)
	}
	if ok, err := s.Has(k); ok || err != nil {
		t.Fatalf("Has after delete = %v, %v, want false, nil", ok, err)
	}
}

func TestScanPrefixInOrder(t *testing.T) {
	s := openMem(t)
	for i := uint64(0); i < 300; i += 7 {
		if err := s.Put(AuditKey(i), sample{Count: int(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(RepoKey("x"), sample{}); err != nil {
		t.Fatal(err)
	}
	prev := -1
	n := 0
	err := s.Scan([]byte(PrefixAudit), func(key []byte, decode func(any) error) error {
		var v sample
		if err := decode(&v); err != nil {
			return err
		}
		if v.Count <= prev {
			t.Fatalf("scan order: %d after %d", v.Count, prev)
		}
		if seq, _ := SeqOf(key); int(seq) != v.Count {
			t.Fatalf("key seq %d, value %d", seq, v.Count)
		}
		prev = v.Count
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := 43; n != want {
		t.Fatalf("scanned %d, want %d", n, want)
	}
	if c, _ := s.Count([]byte(PrefixAudit)); c != n {
		t.Fatalf("Count = %d, want %d", c, n)
	}
}

func TestUpdateAtomic(t *testing.T) {
	s := openMem(t)
	boom := errors.New("boom")
	err := s.Update(true, func(tx *Txn) error {
		if err := tx.Put(RepoKey("a"), sample{Name: "a"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if ok, _ := s.Has(RepoKey("a")); ok {
		t.Fatal("failed transaction left a write behind")
	}
}

func TestReopenDurable(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, GCInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutSync(RepoKey("r"), sample{Name: "kept"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got sample
	if err := s.Get(RepoKey("r"), &got); err != nil || got.Name != "kept" {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
}

func TestDecodeUnknownVersion(t *testing.T) {
	var v sample
	err := Decode([]byte(`{"v":2,"state":{"name":"x"}}`), &v)
	if !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("err = %v, want ErrUnknownVersion", err)
	}
	if v.Name != "" {
		t.Fatalf("decode of unknown version filled the value: %+v", v)
	}
	for _, bad := range []string{``, `{}`, `{"v":1}`, `[]`, `{"v":1,"state":"x"}`} {
		if err := Decode([]byte(bad), &v); err == nil {
			t.Errorf("Decode(%q) = nil, want error", bad)
		}
	}
}

// TestGolden pins the on-disk format of the envelope.
func TestGolden(t *testing.T) {
	v := sample{Name: "golden", Count: 7, When: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	got, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "envelope_v1.golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("encode = %s, want %s", got, want)
	}
	var back sample
	if err := Decode(want, &back); err != nil || back != v {
		t.Fatalf("decode golden = %+v, %v, want %+v", back, err, v)
	}
}

func TestReadable(t *testing.T) {
	tests := []struct {
		key  []byte
		want string
	}{
		{RepoKey("repo_1"), "reg/repo/repo_1"},
		{AuditKey(42), "audit/#42"},
		{ReceiptKey("r", 7), "receipt/r/#7"},
	}
	for _, tt := range tests {
		if got := Readable(tt.key); got != tt.want {
			t.Errorf("Readable = %q, want %q", got, tt.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"state":{"name":"x","count":1}}`))
	f.Add([]byte(`{"v":2,"state":{}}`))
	f.Add([]byte(`{"v":1,"state":null}`))
	f.Add([]byte(`garbage`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v sample
		err := Decode(b, &v)
		if err == nil {
			// Whatever decodes must re-encode and decode to the same value.
			re, err := Encode(v)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			var again sample
			if err := Decode(re, &again); err != nil || !again.When.Equal(v.When) || again.Name != v.Name || again.Count != v.Count {
				t.Fatalf("round trip: %+v vs %+v (%v)", again, v, err)
			}
		}
	})
}

func FuzzKeys(f *testing.F) {
	f.Add("repo", uint64(1))
	f.Fuzz(func(t *testing.T, id string, seq uint64) {
		k := ReceiptKey(id, seq)
		if got, ok := SeqOf(k); !ok || got != seq {
			t.Fatalf("SeqOf(ReceiptKey(%q, %d)) = %d, %v", id, seq, got, ok)
		}
		_ = Readable(k)
	})
}

// A walk still running when the store closes (a task of an actor that
// outlived the shutdown) gets ErrClosed, never Badger's "DB Closed" panic.
func TestUseAfterCloseAnswersErrClosed(t *testing.T) {
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := s.Put([]byte{'k', byte(i)}, sample{Name: "x", Count: i}); err != nil {
			t.Fatal(err)
		}
	}
	started := make(chan struct{})
	release := make(chan struct{})
	walked := make(chan error, 1)
	go func() {
		walked <- s.Scan([]byte("k"), func(key []byte, decode func(v any) error) error {
			if key[1] == 0 {
				close(started)
				<-release
			}
			return nil
		})
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Close must wait for the walk in flight; new calls are refused at once.
	for {
		var v sample
		if err := s.Get([]byte{'k', 1}, &v); errors.Is(err, ErrClosed) {
			break
		}
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a walk was in flight", err)
	default:
	}
	close(release)
	if err := <-walked; err != nil {
		t.Fatalf("walk in flight: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	calls := map[string]error{
		"Put":     s.Put([]byte("a"), sample{}),
		"Scan":    s.Scan([]byte("k"), func([]byte, func(any) error) error { return nil }),
		"ScanRaw": s.ScanRaw([]byte("k"), func(_, _ []byte) error { return nil }),
		"Delete":  s.Delete([]byte("a")),
	}
	_, calls["Count"] = s.Count([]byte("k"))
	_, calls["Has"] = s.Has([]byte("k"))
	for name, err := range calls {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

func TestPruneOldestKeepsTheNewest(t *testing.T) {
	s := openMem(t)
	for i := uint64(1); i <= 10; i++ {
		if err := s.Put(ReceiptKey("repo_a", i), i); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ReceiptKey("repo_b", 1), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.PruneOldest(ReceiptPrefix("repo_a"), 4); err != nil {
		t.Fatal(err)
	}
	var kept []uint64
	if err := s.Scan(ReceiptPrefix("repo_a"), func(_ []byte, decode func(any) error) error {
		var v uint64
		if err := decode(&v); err != nil {
			return err
		}
		kept = append(kept, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(kept) != "[7 8 9 10]" {
		t.Errorf("kept %v, want the newest four [7 8 9 10]", kept)
	}
	if n, _ := s.Count(ReceiptPrefix("repo_b")); n != 1 {
		t.Errorf("another owner's receipts: %d, want 1 (untouched)", n)
	}
	if err := s.PruneOldest(ReceiptPrefix("repo_a"), 10); err != nil {
		t.Fatal(err)
	}
}

// A record encoded by its owner is written as it is by another writer's
// transaction; what is not an envelope of this build, has no key or is a
// fencing mark is refused, and a refused record fails its transaction
// whole.
func TestPutEncoded(t *testing.T) {
	s := openMem(t)
	v, err := Encode(sample{Name: "a", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(true, func(tx *Txn) error { return tx.PutEncoded(LedgerKey("r1"), v) }); err != nil {
		t.Fatal(err)
	}
	var got sample
	if err := s.Get(LedgerKey("r1"), &got); err != nil || got.Name != "a" || got.Count != 1 {
		t.Fatalf("got %+v, %v", got, err)
	}
	for name, rec := range map[string][2][]byte{
		"not an envelope": {LedgerKey("r2"), []byte(`{"name":"b"}`)},
		"unknown version": {LedgerKey("r2"), []byte(`{"v":9,"state":{}}`)},
		"no key":          {nil, v},
		"a fencing mark":  {FenceKey("co", "path:co:a"), v},
	} {
		if err := CheckEncoded(rec[0], rec[1]); err == nil {
			t.Errorf("%s: accepted", name)
		}
		err := s.Update(true, func(tx *Txn) error {
			if err := tx.Put(LedgerKey("r3"), sample{Name: "c"}); err != nil {
				return err
			}
			return tx.PutEncoded(rec[0], rec[1])
		})
		if err == nil {
			t.Errorf("%s: written", name)
		}
	}
	for _, k := range [][]byte{LedgerKey("r2"), LedgerKey("r3")} {
		if has, err := s.Has(k); err != nil || has {
			t.Fatalf("%s after refused transactions: %v, %v", k, has, err)
		}
	}
}
