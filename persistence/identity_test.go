package persistence

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func removeAll(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
}

// With store.marks deleted, the data dir's identity (the second copy of
// the marks) still catches a store that is gone, emptied or rolled back;
// a store that is intact opens and both files are written again; a
// fresh data dir opens.
func TestLossDetectedWithoutTheMarksFile(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		file   string   // the damage names it; "" = the open succeeds
		words  []string // the refusal says them
	}{
		{"marks deleted, store removed", func(t *testing.T, dir string) {
			removeAll(t, filepath.Join(dir, "store.marks"), filepath.Join(dir, "store"))
		}, "store", []string{"missing", IdentityFile}},
		{"marks deleted, Badger's files deleted", func(t *testing.T, dir string) {
			ents, err := os.ReadDir(filepath.Join(dir, "store"))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				removeAll(t, filepath.Join(dir, "store", e.Name()))
			}
			removeAll(t, filepath.Join(dir, "store.marks"))
		}, "store", []string{"empty", IdentityFile}},
		{"marks deleted, another store put in its place", func(t *testing.T, dir string) {
			other := t.TempDir()
			fill(t, other, 3)
			removeAll(t, filepath.Join(dir, "store.marks"), filepath.Join(dir, "store"))
			if err := os.Rename(filepath.Join(other, "store"), filepath.Join(dir, "store")); err != nil {
				t.Fatal(err)
			}
		}, "store", []string{"another store"}},
		{"the identity of another data dir", func(t *testing.T, dir string) {
			other := t.TempDir()
			fill(t, other, 3)
			b, err := os.ReadFile(filepath.Join(other, IdentityFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, IdentityFile), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, IdentityFile, []string{"belongs to store"}},
		{"a garbled identity", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, IdentityFile), make([]byte, marksSize), 0o600); err != nil {
				t.Fatal(err)
			}
		}, IdentityFile, []string{"magic"}},
		{"marks deleted, store intact", func(t *testing.T, dir string) {
			removeAll(t, filepath.Join(dir, "store.marks"))
		}, "", nil},
		{"identity deleted, store intact", func(t *testing.T, dir string) {
			removeAll(t, filepath.Join(dir, IdentityFile))
		}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fill(t, dir, 300)
			before, _, err := ReadMarks(filepath.Join(dir, "store.marks"))
			if err != nil || before.Version == 0 || before.StoreID == "" {
				t.Fatalf("marks after fill = %+v, %v", before, err)
			}
			tt.damage(t, dir)
			s, err := storeAt(t, dir)
			if tt.file != "" {
				if err == nil {
					s.Close()
				}
				var de *DamageError
				if tt.file == IdentityFile {
					// Refused before the store is looked at: the file names its own recovery.
					if !errors.As(err, &de) || filepath.Base(de.File) != IdentityFile || de.ErrorCode() != "STORE_DAMAGED" {
						t.Fatalf("open = %v, want STORE_DAMAGED naming %s", err, IdentityFile)
					}
					for _, w := range tt.words {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("error %q does not say %q", err, w)
						}
					}
					return
				}
				wantDamage(t, err, tt.file, tt.words...)
				return
			}
			if err != nil {
				t.Fatalf("open of an intact store: %v", err)
			}
			var got sample
			if err := s.Get(LedgerKey("req-0299"), &got); err != nil || got.Count != 299 {
				t.Fatalf("data after open = %+v, %v", got, err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"store.marks", IdentityFile} {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatalf("%s not written again: %v", f, err)
				}
				mk, err := decodeMarks(b)
				if err != nil || mk.StoreID != before.StoreID || mk.Version < before.Version {
					t.Fatalf("%s = %+v, %v; want store %s at version >= %d", f, mk, err, before.StoreID, before.Version)
				}
			}
		})
	}

	t.Run("fresh data dir", func(t *testing.T) {
		dir := t.TempDir()
		s, err := storeAt(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		mk, ok, err := ReadMarks(filepath.Join(dir, "store.marks"))
		if err != nil || !ok || mk.StoreID == "" {
			t.Fatalf("marks of a fresh store = %+v %v %v", mk, ok, err)
		}
		if _, err := os.Stat(filepath.Join(dir, IdentityFile)); err != nil {
			t.Fatalf("no identity beside a fresh store: %v", err)
		}
	})
}

// A crash that loses the write-ahead log's tail, with store.marks
// deleted too: the identity still records the last synced version, and
// the rolled-back store is refused.
func TestLostWALDetectedWithoutTheMarksFile(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 10)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriterHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashWriterEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writer: %v\n%s", err, out)
	}
	for _, f := range files(t, dir, "*.mem") {
		removeAll(t, f) // the whole WAL lost
	}
	removeAll(t, filepath.Join(dir, "store.marks"))
	s, err := storeAt(t, dir)
	if err == nil {
		s.Close()
	}
	wantDamage(t, err, "store", "acknowledged writes are missing", IdentityFile)
}

// After `store reset` the fencing floor is kept by both files: deleting
// store.marks does not let tokens go back.
func TestResetFloorSurvivesWithoutTheMarksFile(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: filepath.Join(dir, "store"), MarksPath: filepath.Join(dir, "store.marks")}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(true, func(tx *Txn) error { return tx.Put(FenceKey("c", "k"), uint64(5000)) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Reset(o); err != nil {
		t.Fatal(err)
	}
	removeAll(t, o.MarksPath)
	s, err = Open(o)
	if err != nil {
		t.Fatalf("open after reset: %v", err)
	}
	defer s.Close()
	if s.FenceFloor() < 5000 {
		t.Fatalf("FenceFloor after reset and a deleted store.marks = %d, want >= 5000", s.FenceFloor())
	}
}
