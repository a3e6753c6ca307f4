package read_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

func TestListDir(t *testing.T) {
	root := testutil.Repo(t, map[string]string{"README.md": "hello\n", "src/app.go": "package app\n", ".env": "K=v\n", ".ssh/config": "Host x\n"})
	h, id := openRegistered(t, root)
	ctx := context.Background()
	res, err := h.ListDir(ctx, harness.ListDirArgs{RepoID: id})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range res.Entries {
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != "README.md,src" || res.Omitted != 3 || res.Path != "." {
		t.Fatalf("list_dir of the root: %v (omitted %d, path %q), want README.md,src with .env, .git and .ssh left out", names, res.Omitted, res.Path)
	}
	// The MCP text block is the listing as ls -p writes it; the
	// structured content its metadata, without the entries.
	text, note, ok := res.TextBlock()
	if !ok || text != "README.md\t6\nsrc/\n" || !strings.Contains(note, "2 entries") || !strings.Contains(note, "3 left out") {
		t.Fatalf("text block %q, note %q", text, note)
	}
	meta, err := json.Marshal(res.WithoutText())
	if err != nil || strings.Contains(string(meta), "README") || !strings.Contains(string(meta), `"count":2`) {
		t.Fatalf("structured content without the entries: %s %v", meta, err)
	}
	for _, tt := range []struct {
		path string
		want errs.Code
	}{{".ssh", errs.SecretPathDenied}, {".git", errs.PathNotAllowed}, {"../", errs.PathOutsideRoot}, {"README.md", errs.InvalidArgument}, {"nope", errs.NotFound}} {
		if _, err := h.ListDir(ctx, harness.ListDirArgs{RepoID: id, Path: tt.path}); errs.CodeOf(err) != tt.want {
			t.Errorf("list_dir %q: %v, want %s", tt.path, err, tt.want)
		}
	}
	// Through the JSON surface, with the names models guess.
	out, err := h.CallOp(ctx, "list_dir", json.RawMessage(`{"repo_id":"`+id+`","path":"src"}`))
	if err != nil {
		t.Fatal(err)
	}
	if l := out.(*harness.ListDirResult); len(l.Entries) != 1 || l.Entries[0].Name != "app.go" || l.Entries[0].Size != 12 {
		t.Fatalf("list_dir src: %+v", l)
	}
}

// A secret file rewritten the moment before a read_file is redacted by
// that read: the secrets cache serves its set without the stamps only
// while its watch reports nothing, and a rewrite is in the watch's queue
// before the read begins.
func TestReadRedactsASecretChangedJustBefore(t *testing.T) {
	root := testutil.Repo(t, map[string]string{"main.go": "package main\n"})
	env := filepath.Join(root, ".env")
	if err := os.WriteFile(env, []byte("TOKEN=start-value-000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, id := openRegistered(t, root)
	ctx := context.Background()
	for i := range 40 {
		v := "rotated" + strings.Repeat(string(rune('a'+i%26)), 8) + "Q9z" + string(rune('a'+(i/26)))
		// The value is in main.go first (an ordinary file, read as is),
		// then it becomes the secret file's value, and the next read must
		// redact it.
		if err := os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\n// "+v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: "main.go"}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(env, []byte("TOKEN="+v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: "main.go"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Content, v) || res.Redactions == 0 {
			t.Fatalf("round %d: read_file right after .env changed shows its value: %q", i, res.Content)
		}
	}
}
