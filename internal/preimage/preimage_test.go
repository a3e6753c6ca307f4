package preimage

import (
	"bytes"
	"os"
	"path/filepath"
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
