package persistence

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func faultyStore(t *testing.T, f *Faults, o Options) *Store {
	t.Helper()
	dir := t.TempDir()
	o.Dir, o.MarksPath, o.Faults = filepath.Join(dir, "store"), filepath.Join(dir, "store.marks"), f
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A disk that refuses writes (EROFS after ext4's errors=remount-ro, EIO)
// answers STORAGE_UNAVAILABLE (ENOSPC from Badger STORAGE_FULL); later
// writes are refused at once without reaching the disk; reads go on;
// a repaired disk is noticed by the next probe.
func TestDiskThatRefusesWrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		code  string
	}{
		{"read-only", syscall.EROFS, "STORAGE_UNAVAILABLE"},
		{"io error", syscall.EIO, "STORAGE_UNAVAILABLE"},
		{"no space", syscall.ENOSPC, "STORAGE_FULL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &Faults{}
			s := faultyStore(t, f, Options{RetryWritesAfter: 300 * time.Millisecond})
			defer s.Close()
			if err := s.PutSync(RepoKey("r"), sample{Name: "before"}); err != nil {
				t.Fatal(err)
			}
			writes := s.Writes()
			f.FailWrites(tc.cause)
			err := s.PutSync(RepoKey("r"), sample{Name: "after"})
			if got := codeOf(err); got != tc.code || !errors.Is(err, tc.cause) {
				t.Fatalf("put on a failing disk = %v (code %q), want %s wrapping %v", err, got, tc.code, tc.cause)
			}
			if s.Down() == nil {
				t.Fatal("the store is not down after the disk refused a write")
			}
			// Fail fast: a disk that would now take a second per write is
			// not touched.
			f.DelayWrites(time.Second)
			start := time.Now()
			for range 20 {
				if err := s.Put(RepoKey("x"), sample{}); codeOf(err) != tc.code {
					t.Fatalf("put while down = %v, want %s", err, tc.code)
				}
			}
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Fatalf("20 writes while down took %s: they went to the disk", d)
			}
			if s.Writes() != writes {
				t.Fatal("a refused write committed")
			}
			var got sample
			if err := s.Get(RepoKey("r"), &got); err != nil || got.Name != "before" {
				t.Fatalf("read while down = %+v, %v", got, err)
			}
			// The disk is repaired: a probe after RetryWritesAfter goes through.
			f.FailWrites(nil)
			f.DelayWrites(0)
			deadline := time.Now().Add(5 * time.Second)
			for s.PutSync(RepoKey("r"), sample{Name: "after"}) != nil {
				if time.Now().After(deadline) {
					t.Fatal("writes did not resume after the disk was repaired")
				}
				time.Sleep(50 * time.Millisecond) // polling the store's probe window
			}
			if s.Down() != nil {
				t.Fatalf("down after a probe went through: %v", s.Down())
			}
		})
	}
}

func codeOf(err error) string {
	var c interface{ ErrorCode() string }
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return ""
}

// statfs says the file system is mounted read-only: refused before Badger.
func TestGuardRefusesWritesWhenReadOnly(t *testing.T) {
	s := faultyStore(t, nil, Options{})
	defer s.Close()
	s.guard.statfs = func(_ string, fs *syscall.Statfs_t) error {
		fs.Bsize, fs.Blocks, fs.Bavail, fs.Flags = 4096, 1<<20, 1<<19, stRdonly
		return nil
	}
	writes := s.Writes()
	err := s.PutSync(RepoKey("r"), sample{Name: "x"})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.ErrorCode() != "STORAGE_UNAVAILABLE" || !strings.Contains(err.Error(), "remount it read-write") {
		t.Fatalf("put on a read-only file system = %v, want an *UnavailableError naming the fix", err)
	}
	if s.Writes() != writes {
		t.Fatal("a refused write committed")
	}
}

// A store whose disk refuses writes closes at once, without Badger's
// flush (which would retry into the read-only file system forever), and
// says what was not flushed.
func TestCloseOnARefusingDiskDoesNotFlush(t *testing.T) {
	f := &Faults{}
	s := faultyStore(t, f, Options{})
	if err := s.PutSync(RepoKey("r"), sample{Name: "kept"}); err != nil {
		t.Fatal(err)
	}
	f.FailWrites(syscall.EROFS)
	if err := s.Put(RepoKey("r"), sample{Name: "refused"}); codeOf(err) != "STORAGE_UNAVAILABLE" {
		t.Fatalf("put = %v", err)
	}
	start := time.Now()
	err := s.Close()
	if err == nil || !strings.Contains(err.Error(), "not flushed") {
		t.Fatalf("Close on a refusing disk = %v, want an error saying the store was not flushed", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %s", d)
	}
	// The test's disk is fine: close Badger for real so no goroutine is
	// left, and check the synced write is there at the next open.
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(Options{Dir: s.dir, MarksPath: filepath.Join(filepath.Dir(s.dir), "store.marks")})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var got sample
	if err := s2.Get(RepoKey("r"), &got); err != nil || got.Name != "kept" {
		t.Fatalf("after reopen = %+v, %v, want the synced write", got, err)
	}
}

// A write hung on a frozen disk does not hold Close past CloseWait.
func TestCloseReturnsWithinItsWait(t *testing.T) {
	f := &Faults{}
	s := faultyStore(t, f, Options{CloseWait: 300 * time.Millisecond})
	f.DelayWrites(2 * time.Second)
	put := make(chan error, 1)
	go func() { put <- s.PutSync(RepoKey("r"), sample{Name: "slow"}) }()
	// Wait until the write is in flight (it holds Close's drain).
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.life.Lock()
		n := s.inflight
		s.life.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the write never started")
		}
		time.Sleep(5 * time.Millisecond) // polling a goroutine of this test
	}
	start := time.Now()
	err := s.Close()
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close took %s, want about its CloseWait of 300ms", d)
	}
	if err == nil || !strings.Contains(err.Error(), "did not close within 300ms") {
		t.Fatalf("Close = %v, want the timeout named", err)
	}
	if err := <-put; err != nil {
		t.Fatalf("the slow write: %v", err)
	}
	<-s.dbClosed // the close finishes once the disk thaws: no goroutine left
}

// Badger's Sync joins the errors of its WAL and value log as text: the
// errno's text still decides the code.
func TestMapErrReadsJoinedErrnoText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
	}{
		{errors.New("read-only file system; read-only file system"), "STORAGE_UNAVAILABLE"},
		{errors.New("sync wal: input/output error"), "STORAGE_UNAVAILABLE"},
		{errors.New("write vlog: no space left on device"), "STORAGE_FULL"},
		{errors.New("some other failure"), ""},
	} {
		if got := codeOf(mapErr(tc.err)); got != tc.code {
			t.Errorf("mapErr(%q) code = %q, want %q", tc.err, got, tc.code)
		}
	}
}
