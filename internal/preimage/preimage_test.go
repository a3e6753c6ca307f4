package preimage

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func stores(t *testing.T, cfg Config) map[string]*Store {
	t.Helper()
	out := map[string]*Store{}
	mem, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out["memory"] = mem
	cfg.Dir = filepath.Join(t.TempDir(), "preimages")
	disk, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out["disk"] = disk
	return out
}

func TestPutGetDedupAndLayout(t *testing.T) {
	for name, s := range stores(t, Config{}) {
		t.Run(name, func(t *testing.T) {
			d1, err := s.Put([]byte("hello"))
			if err != nil {
				t.Fatal(err)
			}
			d2, _ := s.Put([]byte("hello"))
			if d1 != d2 || d1 != Digest([]byte("hello")) {
				t.Fatalf("digests %s %s", d1, d2)
			}
			if st := s.Stats(); st.Count != 1 || st.Bytes != 5 {
				t.Fatalf("dedup: stats %+v", st)
			}
			b, err := s.Get(d1)
			if err != nil || string(b) != "hello" {
				t.Fatalf("get %q %v", b, err)
			}
			if s.cfg.Dir != "" {
				fi, err := os.Stat(filepath.Join(s.cfg.Dir, d1[:2], d1[2:]))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o600 {
					t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
				}
			}
			if _, err := s.Put(nil); err != nil { // an empty file is a pre-image too
				t.Fatal(err)
			}
			if b, err := s.Get(Digest(nil)); err != nil || len(b) != 0 {
				t.Fatalf("empty: %q %v", b, err)
			}
		})
	}
}

func TestAgeBoundPrunesOldestAndNamesTheSetting(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	for name, s := range stores(t, Config{MaxAge: time.Hour, Now: c.now}) {
		t.Run(name, func(t *testing.T) {
			old, _ := s.Put([]byte("old"))
			c.t = c.t.Add(50 * time.Minute)
			young, _ := s.Put([]byte("young"))
			c.t = c.t.Add(20 * time.Minute) // old is 70 min, young 20 min
			if n := s.Sweep(); n != 1 {
				t.Fatalf("swept %d, want 1", n)
			}
			_, err := s.Get(old)
			if errs.CodeOf(err) != errs.NotFound || !strings.Contains(err.Error(), "PreImageMaxAge") {
				t.Fatalf("pruned get: %v", err)
			}
			if _, err := s.Get(young); err != nil {
				t.Fatalf("young pruned: %v", err)
			}
			if s.cfg.Dir != "" {
				if _, err := os.Stat(filepath.Join(s.cfg.Dir, old[:2], old[2:])); !os.IsNotExist(err) {
					t.Fatalf("old file still on disk: %v", err)
				}
			}
		})
	}
}

func TestSizeBoundPrunesOldestFirst(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	for name, s := range stores(t, Config{MaxBytes: 25, Now: c.now}) {
		t.Run(name, func(t *testing.T) {
			var ds []string
			for i := 0; i < 3; i++ {
				d, err := s.Put(bytes.Repeat([]byte{byte('a' + i)}, 10))
				if err != nil {
					t.Fatal(err)
				}
				ds = append(ds, d)
				c.t = c.t.Add(time.Second)
			}
			// 30 bytes > 25: the oldest (a) went on the third Put.
			if s.Has(ds[0]) || !s.Has(ds[1]) || !s.Has(ds[2]) {
				t.Fatalf("has %v %v %v, want false true true", s.Has(ds[0]), s.Has(ds[1]), s.Has(ds[2]))
			}
			if st := s.Stats(); st.Bytes > 25 {
				t.Fatalf("total %d over the bound", st.Bytes)
			}
			// Storing b again refreshes it: the next prune takes c.
			_, _ = s.Put(bytes.Repeat([]byte{'b'}, 10))
			c.t = c.t.Add(time.Second)
			_, _ = s.Put(bytes.Repeat([]byte{'d'}, 10))
			if !s.Has(ds[1]) || s.Has(ds[2]) {
				t.Fatalf("refresh: b %v c %v, want true false", s.Has(ds[1]), s.Has(ds[2]))
			}
			_, err := s.Put(bytes.Repeat([]byte{'x'}, 26))
			if err == nil || !strings.Contains(err.Error(), "PreImageMaxBytes") {
				t.Fatalf("oversized put: %v", err)
			}
		})
	}
}

func TestReopenIndexesAndSweepsDisk(t *testing.T) {
	c := &clock{t: time.Now()}
	dir := filepath.Join(t.TempDir(), "p")
	s, err := Open(Config{Dir: dir, Now: c.now, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := s.Put([]byte("kept"))
	// A crash left a temp file behind.
	_ = os.WriteFile(filepath.Join(dir, d[:2], ".tmp-123"), []byte("x"), 0o600)
	s2, err := Open(Config{Dir: dir, Now: c.now, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s2.Get(d); err != nil || string(b) != "kept" {
		t.Fatalf("reopened get %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, d[:2], ".tmp-123")); !os.IsNotExist(err) {
		t.Fatal("temp file left after reopen")
	}
	c.t = c.t.Add(2 * time.Hour)
	s3, _ := Open(Config{Dir: dir, Now: c.now, MaxAge: time.Hour})
	if s3.Has(d) {
		t.Fatal("open did not sweep an expired pre-image")
	}
	// A tampered file is reported, never returned as the pre-image.
	d4, _ := s3.Put([]byte("orig"))
	_ = os.WriteFile(filepath.Join(dir, d4[:2], d4[2:]), []byte("evil"), 0o600)
	if _, err := s3.Get(d4); errs.CodeOf(err) != errs.StoreDamaged {
		t.Fatalf("tampered: %v", err)
	}
	if _, err := s3.Get("../../etc/passwd"); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("bad digest: %v", err)
	}
}

// The count bound: beyond MaxCount the oldest go, down to 90% of it, so a
// store at its bound sweeps once in a tenth of it, not on every Put; the
// index stays at most MaxCount records however small the pre-images.
func TestCountBoundPrunesOldestToNinetyPercent(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	for name, s := range stores(t, Config{MaxCount: 20, Now: c.now}) {
		t.Run(name, func(t *testing.T) {
			var ds []string
			for i := 0; i < 21; i++ {
				d, err := s.Put([]byte{byte(i)})
				if err != nil {
					t.Fatal(err)
				}
				ds = append(ds, d)
				c.t = c.t.Add(time.Second)
			}
			// The 21st Put went over 20: the 3 oldest went (18 = 90%).
			if st := s.Stats(); st.Count != 18 || st.Bytes != 18 {
				t.Fatalf("stats %+v, want 18 pre-images of 18 bytes", st)
			}
			for i, d := range ds {
				if s.Has(d) != (i >= 3) {
					t.Fatalf("pre-image %d kept %v, want %v", i, s.Has(d), i >= 3)
				}
			}
			_, err := s.Get(ds[0])
			if errs.CodeOf(err) != errs.NotFound {
				t.Fatalf("pruned get: %v", err)
			}
			if s.cfg.Dir != "" {
				if _, err := os.Stat(filepath.Join(s.cfg.Dir, ds[0][:2], ds[0][2:])); !os.IsNotExist(err) {
					t.Fatalf("pruned file still on disk: %v", err)
				}
			}
			// Two more fit without a sweep.
			for i := 21; i < 23; i++ {
				_, _ = s.Put([]byte{byte(i)})
				c.t = c.t.Add(time.Second)
			}
			if st := s.Stats(); st.Count != 20 {
				t.Fatalf("count %d, want 20 (no sweep below the bound)", st.Count)
			}
		})
	}
}

// prune's decision: age first, then the oldest until within 90% of the
// size and count bounds, only when a bound is exceeded; equal ages go in
// digest order.
func TestPrune(t *testing.T) {
	key := func(b byte) sum { var k sum; k[0] = b; return k }
	// Four pre-images of 10 bytes, aged 40, 30, 20 and 10 ns (at 60).
	index := map[sum]entry{key(1): {10, 20}, key(2): {10, 30}, key(3): {10, 40}, key(4): {10, 50}}
	tie := map[sum]entry{key(9): {10, 5}, key(8): {10, 5}, key(7): {10, 5}}
	for _, tc := range []struct {
		name  string
		index map[sum]entry
		cfg   Config
		want  []byte
	}{
		{"within every bound", index, Config{MaxAge: time.Hour, MaxBytes: 40, MaxCount: 4}, nil},
		{"no bounds", index, Config{MaxAge: -1, MaxBytes: -1, MaxCount: -1}, nil},
		{"age", index, Config{MaxAge: 25, MaxBytes: -1, MaxCount: -1}, []byte{1, 2}},
		{"size over: to 90% (36)", index, Config{MaxBytes: 39, MaxCount: -1}, []byte{1}},
		{"size over: to 90% (27)", index, Config{MaxBytes: 30, MaxCount: -1}, []byte{1, 2}},
		{"count over: to 90% of 3 (3)", index, Config{MaxBytes: -1, MaxCount: 3}, []byte{1}},
		{"count over: to 90% of 2 (2)", index, Config{MaxBytes: -1, MaxCount: 2}, []byte{1, 2}},
		{"age, then what is left fits", index, Config{MaxAge: 35, MaxBytes: 30, MaxCount: 3}, []byte{1}},
		{"age, then count", index, Config{MaxAge: 35, MaxBytes: -1, MaxCount: 2}, []byte{1, 2}},
		{"equal ages in digest order", tie, Config{MaxBytes: -1, MaxCount: 1}, []byte{7, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := prune(tc.index, 60, tc.cfg)
			var ids []byte
			for _, k := range got {
				ids = append(ids, k[0])
			}
			if !bytes.Equal(ids, tc.want) {
				t.Fatalf("pruned %v, want %v", ids, tc.want)
			}
		})
	}
}

// The index costs a fixed record a pre-image, whatever its size: at the
// default bound it stays far below what the store keeps on disk.
func TestIndexSizeAtTheDefaultCountBound(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates the index of DefaultMaxCount pre-images")
	}
	index := make(map[sum]entry)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < DefaultMaxCount; i++ {
		index[sum(sha256.Sum256([]byte(strconv.Itoa(i))))] = entry{size: 1, at: int64(i)}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / DefaultMaxCount
	t.Logf("index: %.0f bytes a pre-image, %.1f MiB at %d", per, per*DefaultMaxCount/(1<<20), len(index))
	if per > 80 {
		t.Fatalf("the index costs %.0f bytes a pre-image, want at most 80 (the package doc says about 70, under 16 MiB at the default bound)", per)
	}
}
