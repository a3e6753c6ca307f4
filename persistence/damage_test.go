package persistence

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// storeAt opens a store in dir/store with its marks file in dir.
func storeAt(t *testing.T, dir string) (*Store, error) {
	t.Helper()
	return Open(Options{Dir: filepath.Join(dir, "store"), MarksPath: filepath.Join(dir, "store.marks")})
}

// fill writes n synced entries and closes the store, so its data lands
// in tables (CompactL0OnClose).
func fill(t *testing.T, dir string, n int) {
	t.Helper()
	s, err := storeAt(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := s.Update(i == n-1, func(tx *Txn) error {
			return tx.Put(LedgerKey(fmt.Sprintf("req-%04d", i)), sample{Name: strings.Repeat("x", 200), Count: i})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func wantDamage(t *testing.T, err error, file string, words ...string) {
	t.Helper()
	var de *DamageError
	if !errors.As(err, &de) {
		t.Fatalf("open = %v, want a *DamageError", err)
	}
	if !strings.HasSuffix(de.File, file) {
		t.Errorf("damage names %q, want a path ending in %q (%v)", de.File, file, err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if de.ErrorCode() != "STORE_DAMAGED" || !strings.Contains(err.Error(), "store restore BACKUP") {
		t.Errorf("error %q lacks the code or the recovery", err)
	}
}

func files(t *testing.T, dir, glob string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "store", glob))
	if err != nil || len(m) == 0 {
		t.Fatalf("no %s in %s (%v)", glob, dir, err)
	}
	return m
}

func TestOpenRefusesDamage(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		file   string
		words  []string
	}{
		{"missing MANIFEST", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "store", "MANIFEST")); err != nil {
				t.Fatal(err)
			}
		}, "MANIFEST", []string{"MANIFEST is missing"}},
		{"garbage in a table", func(t *testing.T, dir string) {
			f := files(t, dir, "*.sst")[0]
			b, _ := os.ReadFile(f)
			for i := 100; i < 600 && i < len(b); i++ {
				b[i] ^= 0x5a
			}
			if err := os.WriteFile(f, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, ".sst", []string{"check"}},
		{"truncated table", func(t *testing.T, dir string) {
			f := files(t, dir, "*.sst")[0]
			st, _ := os.Stat(f)
			if err := os.Truncate(f, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, ".sst", nil},
		{"empty table", func(t *testing.T, dir string) {
			if err := os.Truncate(files(t, dir, "*.sst")[0], 0); err != nil {
				t.Fatal(err)
			}
		}, ".sst", []string{"empty"}},
		{"garbled key registry", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "store", "KEYREGISTRY"), []byte("garbage garbage garbage garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "KEYREGISTRY", []string{"key registry"}},
		{"store removed", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "store")); err != nil {
				t.Fatal(err)
			}
		}, "store", []string{"missing"}},
		{"store emptied", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "store")); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, "store"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "store", []string{"empty"}},
		{"another store in its place", func(t *testing.T, dir string) {
			other := t.TempDir()
			fill(t, other, 3)
			if err := os.RemoveAll(filepath.Join(dir, "store")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(other, "store"), filepath.Join(dir, "store")); err != nil {
				t.Fatal(err)
			}
		}, "store", []string{"another store"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fill(t, dir, 300)
			tt.damage(t, dir)
			before := listing(t, filepath.Join(dir, "store"))
			s, err := storeAt(t, dir)
			if err == nil {
				s.Close()
			}
			wantDamage(t, err, tt.file, tt.words...)
			if after := listing(t, filepath.Join(dir, "store")); after != before {
				t.Errorf("a refused open changed the store:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func listing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "(none)"
	}
	var b strings.Builder
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".vlog") || e.Name() == "DISCARD" || e.Name() == "LOCK" {
			continue // Badger makes these when it opens; they hold no data of ours
		}
		info, _ := e.Info()
		fmt.Fprintf(&b, "%s:%d ", e.Name(), info.Size())
	}
	return b.String()
}

func TestOpenIntactStoreTwice(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 50)
	fill(t, dir, 50) // reopens: the marks match
	s, err := storeAt(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Identity().StoreID == "" || s.Marks().StoreID != s.Identity().StoreID || s.Marks().Version == 0 {
		t.Fatalf("identity %+v, marks %+v", s.Identity(), s.Marks())
	}
}

// crashWriterEnv makes the test binary a writer that exits without closing
// the store, as a kill -9 would leave it.
const crashWriterEnv = "PERSISTENCE_CRASH_WRITER"

func TestCrashWriterHelper(t *testing.T) {
	dir := os.Getenv(crashWriterEnv)
	if dir == "" {
		t.Skip("a helper of TestOpenRefusesLostWALEntries")
	}
	s, err := storeAt(t, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for i := 0; i < 200; i++ {
		if err := s.PutSync(LedgerKey("acked-"+strconv.Itoa(i)), sample{Name: strings.Repeat("y", 300), Count: i}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
	}
	os.Exit(0) // no Close: the WAL holds the writes
}

// A write-ahead log garbled or cut after a crash loses acknowledged
// writes; Badger replays what is left and says nothing. The marks catch it.
func TestOpenRefusesLostWALEntries(t *testing.T) {
	for _, mode := range []string{"truncated", "garbled"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			fill(t, dir, 10)
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriterHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashWriterEnv+"="+dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("writer: %v\n%s", err, out)
			}
			var wal string
			var size int64
			for _, f := range files(t, dir, "*.mem") {
				st, _ := os.Stat(f)
				if st.Size() > size {
					wal, size = f, st.Size()
				}
			}
			b, err := os.ReadFile(wal)
			if err != nil {
				t.Fatal(err)
			}
			end := len(b)
			for end > 0 && b[end-1] == 0 {
				end--
			}
			if end < 1000 {
				t.Fatalf("the WAL holds %d bytes of entries", end)
			}
			switch mode {
			case "truncated":
				err = os.Truncate(wal, int64(end-end/4))
			case "garbled":
				for i := end - end/4; i < end-end/4+64; i++ {
					b[i] ^= 0xff
				}
				err = os.WriteFile(wal, b, 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			s, err := storeAt(t, dir)
			if err == nil {
				s.Close()
			}
			wantDamage(t, err, "store", "acknowledged writes are missing", ".mem")
		})
	}
}

func TestGuardRefusesWritesWhenFull(t *testing.T) {
	dir := t.TempDir()
	s, err := storeAt(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutSync(RepoKey("r"), sample{Name: "before"}); err != nil {
		t.Fatal(err)
	}
	free := uint64(0)
	s.guard.statfs = func(_ string, fs *syscall.Statfs_t) error {
		fs.Bsize, fs.Blocks, fs.Bavail = 4096, 1<<20, free/4096
		return nil
	}
	writes := s.Writes()
	err = s.PutSync(RepoKey("r"), sample{Name: "after"})
	var fe *FullError
	if !errors.As(err, &fe) || fe.ErrorCode() != "STORAGE_FULL" {
		t.Fatalf("put on a full disk = %v, want a *FullError", err)
	}
	if s.Writes() != writes {
		t.Fatal("a refused write committed")
	}
	var got sample
	if err := s.Get(RepoKey("r"), &got); err != nil || got.Name != "before" {
		t.Fatalf("read on a full disk = %+v, %v", got, err)
	}
	free = 1 << 30 // space returns
	if err := s.PutSync(RepoKey("r"), sample{Name: "after"}); err != nil {
		t.Fatalf("put after space returned: %v", err)
	}
}

func TestGuardNoticesRemovedDir(t *testing.T) {
	dir := t.TempDir()
	s, err := storeAt(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dir, "moved")
	if err := os.Rename(filepath.Join(dir, "store"), moved); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err == nil {
		t.Fatal("Check after the store dir was removed = nil")
	}
	if err := s.PutSync(RepoKey("r"), sample{}); err == nil {
		t.Fatal("a write after the store dir was removed succeeded")
	}
	if err := os.Mkdir(filepath.Join(dir, "store"), 0o700); err != nil {
		t.Fatal(err)
	}
	var de *DamageError
	if err := s.PutSync(RepoKey("r"), sample{}); !errors.As(err, &de) || !strings.Contains(err.Error(), "replaced") {
		t.Fatalf("write into a replaced store dir = %v", err)
	}
	_ = os.RemoveAll(filepath.Join(dir, "store"))
	_ = os.Rename(moved, filepath.Join(dir, "store"))
}

func TestMarksKeepFencingHighWater(t *testing.T) {
	dir := t.TempDir()
	s, err := storeAt(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(true, func(tx *Txn) error { return tx.Put(FenceKey("c", "path:a"), uint64(4242)) }); err != nil {
		t.Fatal(err)
	}
	if got := s.Marks().FenceHigh; got != 4242 {
		t.Fatalf("FenceHigh = %d, want 4242", got)
	}
	s.Close()
	m, ok, err := ReadMarks(filepath.Join(dir, "store.marks"))
	if err != nil || !ok || m.FenceHigh != 4242 {
		t.Fatalf("ReadMarks = %+v %v %v", m, ok, err)
	}
}

func TestDecodeMarksRejectsGarbage(t *testing.T) {
	good := encodeMarks(Marks{StoreID: newStoreID(), Version: 9, FenceHigh: 3})
	if m, err := decodeMarks(good); err != nil || m.Version != 9 {
		t.Fatalf("decode good = %+v, %v", m, err)
	}
	for i := range good {
		b := append([]byte(nil), good...)
		b[i] ^= 1
		if _, err := decodeMarks(b); err == nil {
			t.Fatalf("a flipped bit at %d was accepted", i)
		}
	}
	if _, err := decodeMarks(good[:10]); err == nil {
		t.Fatal("a short file was accepted")
	}
}

// What a kill -9 leaves behind is not damage: a table cut while it was
// being written (not in MANIFEST; Badger removes it) and an empty
// memtable file (created, not yet sized).
func TestOpenAcceptsCrashLeftovers(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 50)
	store := filepath.Join(dir, "store")
	if err := os.WriteFile(filepath.Join(store, "000099.sst"), make([]byte, 188604), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, "00077.mem"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := storeAt(t, dir)
	if err != nil {
		t.Fatalf("open after a kill's leftovers: %v", err)
	}
	defer s.Close()
	var got sample
	if err := s.Get(LedgerKey("req-0049"), &got); err != nil || got.Count != 49 {
		t.Fatalf("data after open = %+v, %v", got, err)
	}
}

func TestOpenRefusesAListedTableMissing(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 50)
	if err := os.Remove(files(t, dir, "*.sst")[0]); err != nil {
		t.Fatal(err)
	}
	s, err := storeAt(t, dir)
	if err == nil {
		s.Close()
	}
	wantDamage(t, err, ".sst", "missing")
}
