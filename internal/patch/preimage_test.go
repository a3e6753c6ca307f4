package patch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

type dirResolver string

func (d dirResolver) ResolveWrite(p string) (string, string, error) {
	return filepath.Join(string(d), p), p, nil
}

// The PreImage hook sees every changed file's original state before the
// first write; Expect refuses a file whose digest differs, with nothing
// written.
func TestPreImageHookAndExpect(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("A"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "same"), []byte("S"), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen []PreImage
	ops := []Op{{Op: OpWrite, Path: "a", Content: "B"}, {Op: OpCreate, Path: "n", Content: "N"}, {Op: OpWrite, Path: "same", Content: "S"}}
	_, err := Apply(context.Background(), dirResolver(dir), ops, Options{NoSync: true, PreImage: func(p PreImage) error {
		if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "A" {
			t.Errorf("hook called after a write")
		}
		seen = append(seen, p)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0].Rel != "a" || string(seen[0].Data) != "A" || seen[0].Mode != 0o640 || seen[0].Digest != digestBytes([]byte("A")) ||
		seen[1].Rel != "n" || seen[1].Existed {
		t.Fatalf("pre-images %+v (want a and n; same is unchanged)", seen)
	}
	tests := []struct {
		name   string
		expect map[string]string
		code   errs.Code
	}{
		{"matches", map[string]string{"a": digestBytes([]byte("B")), "n": digestBytes([]byte("N"))}, ""},
		{"differs", map[string]string{"a": digestBytes([]byte("A"))}, errs.PatchConflict},
		{"expected absent", map[string]string{"n": ""}, errs.PatchConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Apply(context.Background(), dirResolver(dir), []Op{{Op: OpWrite, Path: "a", Content: "B"}, {Op: OpWrite, Path: "n", Content: "N"}},
				Options{NoSync: true, Expect: tt.expect})
			if errs.CodeOf(err) != tt.code && !(tt.code == "" && err == nil) {
				t.Fatalf("%v, want %q", err, tt.code)
			}
		})
	}
	// A failing hook aborts with nothing written.
	_, err = Apply(context.Background(), dirResolver(dir), []Op{{Op: OpWrite, Path: "a", Content: "Z"}}, Options{NoSync: true,
		PreImage: func(PreImage) error { return errs.New(errs.Internal, "no") }})
	if err == nil {
		t.Fatal("a failing hook did not abort")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "B" {
		t.Fatalf("a = %q after an aborted patch", b)
	}
}
