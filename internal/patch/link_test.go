package patch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// A write with Link makes a symbolic link (a revert restoring one): over
// a regular file, over another link, where nothing was; a failure later in
// the patch puts every path back as it was.
func TestWriteLink(t *testing.T) {
	dir := setup(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	if err := os.Symlink("b.txt", filepath.Join(dir, "old")); err != nil {
		t.Fatal(err)
	}
	ops := []Op{
		{Op: OpWrite, Path: "a.txt", Content: "b.txt", Link: true},
		{Op: OpWrite, Path: "old", Content: "a.txt", Link: true},
		{Op: OpWrite, Path: "sub/new", Content: "../b.txt", Link: true},
	}
	res, err := Apply(context.Background(), testRoot{dir}, ops, noSync())
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"a.txt": "b.txt", "old": "a.txt", "sub/new": "../b.txt"} {
		got, err := os.Readlink(filepath.Join(dir, p))
		if err != nil || got != want {
			t.Fatalf("%s: readlink = %q, %v; want %q", p, got, err, want)
		}
	}
	if res.Changes[0].After != digestBytes([]byte("b.txt")) {
		t.Fatalf("after digest %s, want the target text's", res.Changes[0].After)
	}

	// The same link again is no change; a fence failure rolls back.
	before := snapshot(t, dir)
	fail := Options{NoSync: true, Fence: func() error { return errors.New("lost") }}
	_, err = Apply(context.Background(), testRoot{dir}, []Op{
		{Op: OpWrite, Path: "old", Content: "a.txt", Link: true},
		{Op: OpWrite, Path: "b.txt", Content: "x", Link: true},
	}, fail)
	if errs.CodeOf(err) != errs.LeaseLost {
		t.Fatalf("got %v, want LEASE_LOST", err)
	}
	assertTree(t, dir, before)

	// Link is a write without mode, nothing else.
	for _, op := range []Op{{Op: OpCreate, Path: "c", Content: "x", Link: true}, {Op: OpWrite, Path: "c", Content: "x", Mode: "0644", Link: true}} {
		if _, err := Apply(context.Background(), testRoot{dir}, []Op{op}, noSync()); errs.CodeOf(err) != errs.InvalidArgument {
			t.Fatalf("%+v: got %v, want INVALID_ARGUMENT", op, err)
		}
	}
}
