package patch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestApplyOps(t *testing.T) {
	base := map[string]string{
		"a.txt":     "one two two three\n",
		"sub/b.txt": "hello\n",
	}
	tests := []struct {
		name        string
		ops         []Op
		wantCode    errs.Code
		wantMatches any              // PATCH_CONFLICT "matches" detail, nil = absent
		wantFiles   map[string]entry // changed or added entries on success
		wantGone    []string         // removed entries on success
		wantRepl    []int            // Replacements per change
	}{
		{
			name:      "replace exactly once",
			ops:       []Op{{Op: OpReplace, Path: "a.txt", OldText: "one", NewText: "1"}},
			wantFiles: map[string]entry{"a.txt": fileEntry("1 two two three\n", 0o644)},
			wantRepl:  []int{1},
		},
		{
			name:        "replace not found",
			ops:         []Op{{Op: OpReplace, Path: "a.txt", OldText: "four", NewText: "4"}},
			wantCode:    errs.PatchConflict,
			wantMatches: 0,
		},
		{
			name:        "replace found twice",
			ops:         []Op{{Op: OpReplace, Path: "a.txt", OldText: "two", NewText: "2"}},
			wantCode:    errs.PatchConflict,
			wantMatches: 2,
		},
		{
			name:      "replace all",
			ops:       []Op{{Op: OpReplace, Path: "a.txt", OldText: "two", NewText: "2", All: true}},
			wantFiles: map[string]entry{"a.txt": fileEntry("one 2 2 three\n", 0o644)},
			wantRepl:  []int{2},
		},
		{
			name:        "replace all needs at least one",
			ops:         []Op{{Op: OpReplace, Path: "a.txt", OldText: "zzz", All: true}},
			wantCode:    errs.PatchConflict,
			wantMatches: 0,
		},
		{
			name:      "replace with empty new text deletes",
			ops:       []Op{{Op: OpReplace, Path: "sub/b.txt", OldText: "hello\n"}},
			wantFiles: map[string]entry{"sub/b.txt": fileEntry("", 0o644)},
			wantRepl:  []int{1},
		},
		{
			name:        "replace in missing file",
			ops:         []Op{{Op: OpReplace, Path: "nope.txt", OldText: "x", NewText: "y"}},
			wantCode:    errs.PatchConflict,
			wantMatches: 0,
		},
		{
			name: "create new file in new dirs",
			ops:  []Op{{Op: OpCreate, Path: "n/m/new.txt", Content: "new\n"}},
			wantFiles: map[string]entry{
				"n":           {Kind: "dir", Mode: 0o755},
				"n/m":         {Kind: "dir", Mode: 0o755},
				"n/m/new.txt": fileEntry("new\n", 0o644),
			},
		},
		{
			name:      "create with mode",
			ops:       []Op{{Op: OpCreate, Path: "run.sh", Content: "#!/bin/sh\n", Mode: "0755"}},
			wantFiles: map[string]entry{"run.sh": fileEntry("#!/bin/sh\n", 0o755)},
		},
		{
			name:      "create binary content",
			ops:       []Op{{Op: OpCreate, Path: "bin", Content: "\x00\xff\x00"}},
			wantFiles: map[string]entry{"bin": fileEntry("\x00\xff\x00", 0o644)},
		},
		{
			name:     "create existing",
			ops:      []Op{{Op: OpCreate, Path: "a.txt", Content: "x"}},
			wantCode: errs.PatchConflict,
		},
		{
			name:      "create existing with overwrite",
			ops:       []Op{{Op: OpCreate, Path: "a.txt", Content: "x", Overwrite: true}},
			wantFiles: map[string]entry{"a.txt": fileEntry("x", 0o644)},
		},
		{
			name:      "write new",
			ops:       []Op{{Op: OpWrite, Path: "w.txt", Content: "w"}},
			wantFiles: map[string]entry{"w.txt": fileEntry("w", 0o644)},
		},
		{
			name:      "write existing with mode",
			ops:       []Op{{Op: OpWrite, Path: "a.txt", Content: "w", Mode: "600"}},
			wantFiles: map[string]entry{"a.txt": fileEntry("w", 0o600)},
		},
		{
			name:     "delete",
			ops:      []Op{{Op: OpDelete, Path: "sub/b.txt"}},
			wantGone: []string{"sub/b.txt"},
		},
		{
			name:     "delete missing",
			ops:      []Op{{Op: OpDelete, Path: "missing.txt"}},
			wantCode: errs.PatchConflict,
		},
		{
			name: "create then replace",
			ops: []Op{
				{Op: OpCreate, Path: "c.txt", Content: "alpha beta"},
				{Op: OpReplace, Path: "c.txt", OldText: "beta", NewText: "gamma"},
			},
			wantFiles: map[string]entry{"c.txt": fileEntry("alpha gamma", 0o644)},
			wantRepl:  []int{0, 1},
		},
		{
			name: "delete then create resets mode",
			ops: []Op{
				{Op: OpDelete, Path: "a.txt"},
				{Op: OpCreate, Path: "a.txt", Content: "fresh"},
			},
			wantFiles: map[string]entry{"a.txt": fileEntry("fresh", 0o644)},
		},
		{
			name: "later op sees earlier delete",
			ops: []Op{
				{Op: OpDelete, Path: "a.txt"},
				{Op: OpReplace, Path: "a.txt", OldText: "one", NewText: "1"},
			},
			wantCode:    errs.PatchConflict,
			wantMatches: 0,
		},
		{
			name: "conflict in second op writes nothing",
			ops: []Op{
				{Op: OpWrite, Path: "sub/b.txt", Content: "changed"},
				{Op: OpReplace, Path: "a.txt", OldText: "two", NewText: "2"},
			},
			wantCode:    errs.PatchConflict,
			wantMatches: 2,
		},
		{
			name: "two paths naming one file",
			ops: []Op{
				{Op: OpReplace, Path: "sub/b.txt", OldText: "hello", NewText: "hi"},
				{Op: OpReplace, Path: "sub/../sub/b.txt", OldText: "hi", NewText: "hey"},
			},
			wantFiles: map[string]entry{"sub/b.txt": fileEntry("hey\n", 0o644)},
			wantRepl:  []int{1, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := setup(t, base)
			before := snapshot(t, dir)
			res, err := Apply(context.Background(), testRoot{dir}, tt.ops, noSync())
			if got := codeOf(err); got != tt.wantCode {
				t.Fatalf("code = %q (%v), want %q", got, err, tt.wantCode)
			}
			if tt.wantCode != "" {
				d := details(t, err)
				if d["path"] == nil || d["op_index"] == nil {
					t.Errorf("details = %v, want path and op_index", d)
				}
				if tt.wantMatches != nil && d["matches"] != tt.wantMatches {
					t.Errorf("matches = %v, want %v", d["matches"], tt.wantMatches)
				}
				assertTree(t, dir, before)
				return
			}
			want := before
			for p, e := range tt.wantFiles {
				want[p] = e
			}
			for _, p := range tt.wantGone {
				delete(want, p)
			}
			assertTree(t, dir, want)
			if len(res.Changes) != len(tt.ops) {
				t.Fatalf("changes = %d, want %d", len(res.Changes), len(tt.ops))
			}
			for i, ch := range res.Changes {
				if ch.Op != tt.ops[i].Op {
					t.Errorf("change %d op = %q, want %q", i, ch.Op, tt.ops[i].Op)
				}
				if tt.wantRepl != nil && ch.Replacements != tt.wantRepl[i] {
					t.Errorf("change %d replacements = %d, want %d", i, ch.Replacements, tt.wantRepl[i])
				}
			}
		})
	}
}

func TestChangesDigests(t *testing.T) {
	dir := setup(t, map[string]string{"a.txt": "v1"})
	ops := []Op{
		{Op: OpReplace, Path: "a.txt", OldText: "v1", NewText: "v2"},
		{Op: OpCreate, Path: "b.txt", Content: "b"},
		{Op: OpReplace, Path: "a.txt", OldText: "v2", NewText: "v3"},
		{Op: OpDelete, Path: "b.txt"},
	}
	res, err := Apply(context.Background(), testRoot{dir}, ops, noSync())
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Path: "a.txt", Op: OpReplace, Before: sha("v1"), After: sha("v2"), Replacements: 1},
		{Path: "b.txt", Op: OpCreate, Before: "", After: sha("b")},
		{Path: "a.txt", Op: OpReplace, Before: sha("v2"), After: sha("v3"), Replacements: 1},
		{Path: "b.txt", Op: OpDelete, Before: sha("b"), After: ""},
	}
	for i := range want {
		if res.Changes[i] != want[i] {
			t.Errorf("change %d = %+v, want %+v", i, res.Changes[i], want[i])
		}
	}
	// create+delete of a new file is a no-op on disk.
	assertTree(t, dir, map[string]entry{"a.txt": fileEntry("v3", 0o644)})
	if got, _ := Digest(filepath.Join(dir, "a.txt")); got != res.Changes[2].After {
		t.Errorf("Digest = %s, want %s", got, res.Changes[2].After)
	}
}

func TestValidation(t *testing.T) {
	many := make([]Op, 101)
	for i := range many {
		many[i] = Op{Op: OpWrite, Path: "x", Content: "x"}
	}
	tests := []struct {
		name     string
		ops      []Op
		opts     Options
		wantCode errs.Code
		wantPath string // "path" detail, if any
	}{
		{name: "no ops", ops: nil, wantCode: errs.InvalidArgument},
		{name: "unknown op", ops: []Op{{Op: "move", Path: "a.txt"}}, wantCode: errs.InvalidArgument},
		{name: "empty op", ops: []Op{{Path: "a.txt"}}, wantCode: errs.InvalidArgument},
		{name: "empty path", ops: []Op{{Op: OpDelete}}, wantCode: errs.InvalidArgument},
		{name: "empty old_text", ops: []Op{{Op: OpReplace, Path: "a.txt", NewText: "x"}}, wantCode: errs.InvalidArgument},
		{name: "bad mode", ops: []Op{{Op: OpWrite, Path: "a.txt", Mode: "0999"}}, wantCode: errs.InvalidArgument},
		{name: "mode too wide", ops: []Op{{Op: OpWrite, Path: "a.txt", Mode: "4755"}}, wantCode: errs.InvalidArgument},
		{name: "mode on replace", ops: []Op{{Op: OpReplace, Path: "a.txt", OldText: "a", Mode: "0644"}}, wantCode: errs.InvalidArgument},
		{name: "content on replace", ops: []Op{{Op: OpReplace, Path: "a.txt", OldText: "a", Content: "b"}}, wantCode: errs.InvalidArgument},
		{name: "old_text on write", ops: []Op{{Op: OpWrite, Path: "a.txt", OldText: "a"}}, wantCode: errs.InvalidArgument},
		{name: "overwrite on write", ops: []Op{{Op: OpWrite, Path: "a.txt", Overwrite: true}}, wantCode: errs.InvalidArgument},
		{name: "content on delete", ops: []Op{{Op: OpDelete, Path: "a.txt", Content: "x"}}, wantCode: errs.InvalidArgument},
		{name: "too many ops (default)", ops: many, wantCode: errs.InvalidArgument},
		{name: "too many ops (option)", ops: many[:3], opts: Options{MaxOps: 2}, wantCode: errs.InvalidArgument},
		{
			name:     "too many bytes",
			ops:      []Op{{Op: OpWrite, Path: "x", Content: "12345"}, {Op: OpWrite, Path: "y", Content: "123456"}},
			opts:     Options{MaxBytes: 10},
			wantCode: errs.InvalidArgument,
		},
		{
			name:     "too many bytes (default)",
			ops:      []Op{{Op: OpWrite, Path: "x", Content: strings.Repeat("x", DefaultMaxBytes+1)}},
			wantCode: errs.InvalidArgument,
		},
		{
			name:     "replace all grows past the cap",
			ops:      []Op{{Op: OpReplace, Path: "a.txt", OldText: "a", NewText: "123456", All: true}},
			opts:     Options{MaxBytes: 10},
			wantCode: errs.InvalidArgument,
			wantPath: "a.txt",
		},
		{name: "escape", ops: []Op{{Op: OpWrite, Path: "../x", Content: "x"}}, wantCode: errs.PathOutsideRoot},
		{name: "absolute", ops: []Op{{Op: OpWrite, Path: "/etc/passwd", Content: "x"}}, wantCode: errs.PathOutsideRoot},
		{
			name: "allowed paths denial writes nothing",
			ops: []Op{
				{Op: OpWrite, Path: "src/ok.go", Content: "x"},
				{Op: OpWrite, Path: "docs/no.md", Content: "x"},
			},
			opts:     Options{AllowedPaths: []string{"src/**"}},
			wantCode: errs.PathNotAllowed,
			wantPath: "docs/no.md",
		},
		{name: "bad allowed glob", ops: []Op{{Op: OpWrite, Path: "x", Content: "x"}}, opts: Options{AllowedPaths: []string{"src/[a"}}, wantCode: errs.InvalidArgument},
		{name: "directory target", ops: []Op{{Op: OpWrite, Path: "dir", Content: "x"}}, wantCode: errs.IsDirectory, wantPath: "dir"},
		{name: "delete directory", ops: []Op{{Op: OpDelete, Path: "dir"}}, wantCode: errs.IsDirectory},
		{name: "root itself", ops: []Op{{Op: OpWrite, Path: ".", Content: "x"}}, wantCode: errs.IsDirectory},
		{name: "fifo target", ops: []Op{{Op: OpWrite, Path: "fifo", Content: "x"}}, wantCode: errs.InvalidArgument, wantPath: "fifo"},
		{name: "replace through symlink leaf", ops: []Op{{Op: OpReplace, Path: "link", OldText: "a", NewText: "b"}}, wantCode: errs.InvalidArgument},
		{name: "write over symlink leaf", ops: []Op{{Op: OpWrite, Path: "link", Content: "b"}}, wantCode: errs.InvalidArgument},
		{name: "create over symlink leaf", ops: []Op{{Op: OpCreate, Path: "link", Content: "b"}}, wantCode: errs.PatchConflict},
		{name: "parent is a file", ops: []Op{{Op: OpCreate, Path: "a.txt/x", Content: "x"}}, wantCode: errs.PatchConflict, wantPath: "a.txt/x"},
		{
			name: "parent is a file of the patch",
			ops: []Op{
				{Op: OpCreate, Path: "p", Content: "x"},
				{Op: OpCreate, Path: "p/q", Content: "y"},
			},
			wantCode: errs.PatchConflict,
			wantPath: "p/q",
		},
		{
			name: "parent is a file deleted by the patch",
			ops: []Op{
				{Op: OpDelete, Path: "a.txt"},
				{Op: OpCreate, Path: "a.txt/q", Content: "y"},
			},
			wantCode: errs.PatchConflict,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := setup(t, map[string]string{"a.txt": "aaa", "dir/f": "f"})
			if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			fences := 0
			tt.opts.NoSync = true
			tt.opts.Fence = func() error { fences++; return nil }
			_, err := Apply(context.Background(), testRoot{dir}, tt.ops, tt.opts)
			if got := codeOf(err); got != tt.wantCode {
				t.Fatalf("code = %q (%v), want %q", got, err, tt.wantCode)
			}
			if tt.wantPath != "" {
				if got := details(t, err)["path"]; got != tt.wantPath {
					t.Errorf("path detail = %v, want %q", got, tt.wantPath)
				}
			}
			if fences != 0 {
				t.Errorf("fence calls = %d, want 0", fences)
			}
			assertTree(t, dir, before)
		})
	}
}

func TestApplyNilResolver(t *testing.T) {
	_, err := Apply(context.Background(), nil, []Op{{Op: OpDelete, Path: "x"}}, Options{})
	if got := codeOf(err); got != errs.InvalidArgument {
		t.Fatalf("code = %q, want %q", got, errs.InvalidArgument)
	}
}

func TestModePreserved(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "run.sh", "echo hi\n", 0o755)
	writeFile(t, dir, "secret.cfg", "k=v\n", 0o600)
	ops := []Op{
		{Op: OpReplace, Path: "run.sh", OldText: "hi", NewText: "hello"},
		{Op: OpWrite, Path: "secret.cfg", Content: "k=w\n"},
		{Op: OpCreate, Path: "run.sh", Content: "echo bye\n", Overwrite: true},
	}
	if _, err := Apply(context.Background(), testRoot{dir}, ops, Options{}); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, map[string]entry{
		"run.sh":     fileEntry("echo bye\n", 0o755),
		"secret.cfg": fileEntry("k=w\n", 0o600),
	})
}

func TestUnchangedFileIsNotWritten(t *testing.T) {
	dir := setup(t, map[string]string{"a.txt": "x"})
	fi1, _ := os.Stat(filepath.Join(dir, "a.txt"))
	fences := 0
	ops := []Op{
		{Op: OpReplace, Path: "a.txt", OldText: "x", NewText: "y"},
		{Op: OpReplace, Path: "a.txt", OldText: "y", NewText: "x"},
	}
	_, err := Apply(context.Background(), testRoot{dir}, ops, Options{Fence: func() error { fences++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	fi2, _ := os.Stat(filepath.Join(dir, "a.txt"))
	if !os.SameFile(fi1, fi2) {
		t.Errorf("file was rewritten, want it untouched")
	}
	if fences != 0 {
		t.Errorf("fence calls = %d, want 0", fences)
	}
}

func TestFenceCalledPerFile(t *testing.T) {
	dir := setup(t, map[string]string{"a": "a", "b": "b"})
	fences := 0
	ops := []Op{
		{Op: OpWrite, Path: "a", Content: "1"},
		{Op: OpReplace, Path: "a", OldText: "1", NewText: "2"},
		{Op: OpDelete, Path: "b"},
		{Op: OpCreate, Path: "c", Content: "c"},
	}
	if _, err := Apply(context.Background(), testRoot{dir}, ops, Options{Fence: func() error { fences++; return nil }}); err != nil {
		t.Fatal(err)
	}
	if fences != 3 {
		t.Errorf("fence calls = %d, want 3", fences)
	}
}

func TestLongFileName(t *testing.T) {
	dir := t.TempDir()
	name := strings.Repeat("n", 250)
	if _, err := Apply(context.Background(), testRoot{dir}, []Op{{Op: OpCreate, Path: name, Content: "x"}}, Options{}); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, map[string]entry{name: fileEntry("x", 0o644)})
}

func TestDigest(t *testing.T) {
	dir := setup(t, map[string]string{"a.txt": "abc", "d/x": "x"})
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		want     string
		wantCode errs.Code
	}{
		{name: "file", path: "a.txt", want: sha("abc")},
		{name: "absent", path: "missing", want: ""},
		{name: "absent under a file", path: "a.txt/x", want: ""},
		{name: "symlink hashes its target text", path: "link", want: sha("a.txt")},
		{name: "directory", path: "d", wantCode: errs.IsDirectory},
		{name: "fifo", path: "fifo", wantCode: errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Digest(filepath.Join(dir, tt.path))
			if code := codeOf(err); code != tt.wantCode {
				t.Fatalf("code = %q (%v), want %q", code, err, tt.wantCode)
			}
			if got != tt.want {
				t.Errorf("Digest = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    os.FileMode
		wantErr bool
	}{
		{in: "0755", want: 0o755},
		{in: "644", want: 0o644},
		{in: "0", want: 0},
		{in: "0777", want: 0o777},
		{in: "1777", wantErr: true},
		{in: "8", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "0x1ff", wantErr: true},
		{in: "rwx", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMode(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("ParseMode(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestIsTempName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{name: ".a.txt.harnessd-tmp-123456", want: true},
		{name: "." + tempPrefix("x") + "9", want: true},
		{name: "a.txt", want: false},
		{name: ".a.txt.harnessd-tmp-", want: false},
		{name: "a.harnessd-tmp-1", want: false},
		{name: "", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsTempName(tt.name); got != tt.want {
				t.Errorf("IsTempName(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
	dir := t.TempDir()
	p, err := writeTemp(dir, "file.go", []byte("x"), 0o644, false)
	if err != nil {
		t.Fatal(err)
	}
	if !IsTempName(filepath.Base(p)) {
		t.Errorf("IsTempName(%q) = false, want true", filepath.Base(p))
	}
}
