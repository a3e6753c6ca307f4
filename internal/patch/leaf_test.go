package patch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

// A patch through a pathsafe.Root refuses to replace, write over or delete
// a hard link to a file outside the root, before anything is written or
// kept: the link's content stays the other name's, not a file of its own.
func TestPatchRefusesHardLinks(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, outside := filepath.Join(base, "repo"), filepath.Join(base, "outside")
	for _, d := range []string{dir, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, ".env")
	if err := os.WriteFile(secret, []byte("TOKEN=outside-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(dir, "notes.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain.txt"), []byte("TOKEN=plain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := pathsafe.NewRoot(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		op   Op
	}{
		{"replace", Op{Op: OpReplace, Path: "notes.txt", OldText: "TOKEN", NewText: "T"}},
		{"write", Op{Op: OpWrite, Path: "notes.txt", Content: "x\n"}},
		{"create overwrite", Op{Op: OpCreate, Path: "notes.txt", Content: "x\n", Overwrite: true}},
		{"delete", Op{Op: OpDelete, Path: "notes.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, base)
			kept := 0
			_, err := Apply(context.Background(), root, []Op{{Op: OpReplace, Path: "plain.txt", OldText: "plain", NewText: "PLAIN"}, tt.op},
				Options{NoSync: true, PreImage: func(PreImage) error { kept++; return nil }})
			if errs.CodeOf(err) != errs.PathNotAllowed {
				t.Fatalf("Apply %s of a hard link: got %v, want %s", tt.name, err, errs.PathNotAllowed)
			}
			if kept != 0 {
				t.Errorf("%d pre-images handed out before the refusal", kept)
			}
			assertTree(t, base, before)
		})
	}
	// The positive control: the plain file is patched.
	if _, err := Apply(context.Background(), root, []Op{{Op: OpReplace, Path: "plain.txt", OldText: "plain", NewText: "PLAIN"}}, Options{NoSync: true}); err != nil {
		t.Fatalf("a plain file: %v", err)
	}
}
