package persistence

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestBackupRestoreKeepsDataAndFencing(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: filepath.Join(dir, "store"), MarksPath: filepath.Join(dir, "store.marks")}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(true, func(tx *Txn) error {
		if err := tx.Put(RepoKey("r1"), sample{Name: "kept"}); err != nil {
			return err
		}
		return tx.Put(FenceKey("c", "path:a"), uint64(100))
	}); err != nil {
		t.Fatal(err)
	}
	var backup bytes.Buffer
	if _, err := s.Backup(&backup); err != nil {
		t.Fatal(err)
	}
	// After the backup: more tokens and a request the backup lacks.
	if err := s.Update(true, func(tx *Txn) error {
		if err := tx.Put(LedgerKey("after"), sample{Name: "lost"}); err != nil {
			return err
		}
		return tx.Put(FenceKey("c", "path:a"), uint64(900))
	}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify()
	if err != nil || rep.FenceHigh != 900 || rep.Keys < 3 {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
	id := s.Identity().StoreID
	s.Close()

	moved, m, err := Restore(o, &backup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(moved); err != nil {
		t.Fatalf("the replaced store was not kept: %v", err)
	}
	if m.FenceFloor < 900 || m.StoreID != id {
		t.Fatalf("marks after restore = %+v, want floor >= 900 and store %s", m, id)
	}
	s, err = Open(o)
	if err != nil {
		t.Fatalf("open the restored store: %v", err)
	}
	defer s.Close()
	var got sample
	if err := s.Get(RepoKey("r1"), &got); err != nil || got.Name != "kept" {
		t.Fatalf("restored r1 = %+v, %v", got, err)
	}
	if ok, _ := s.Has(LedgerKey("after")); ok {
		t.Fatal("the restored store holds a key written after the backup")
	}
	if s.FenceFloor() < 900 {
		t.Fatalf("FenceFloor = %d, want >= 900", s.FenceFloor())
	}
}

func TestResetStartsEmptyAboveTheFencingMarks(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 5)
	o := Options{Dir: filepath.Join(dir, "store"), MarksPath: filepath.Join(dir, "store.marks")}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(true, func(tx *Txn) error { return tx.Put(FenceKey("c", "k"), uint64(4096)) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Damage the store, then reset it.
	if err := os.Remove(filepath.Join(dir, "store", "MANIFEST")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(o); err == nil {
		t.Fatal("a damaged store opened")
	}
	moved, m, err := Reset(o)
	if err != nil || moved == "" || m.FenceFloor < 4096 {
		t.Fatalf("reset = %q %+v %v", moved, m, err)
	}
	s, err = Open(o)
	if err != nil {
		t.Fatalf("open after reset: %v", err)
	}
	defer s.Close()
	if n, _ := s.Count([]byte(PrefixLedger)); n != 0 {
		t.Fatalf("a reset store holds %d ledger entries", n)
	}
	if s.FenceFloor() < 4096 {
		t.Fatalf("FenceFloor after reset = %d", s.FenceFloor())
	}
}
