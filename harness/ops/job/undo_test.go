package job

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/harnessd/harnessd/internal/preimage"
)

func TestUndoScope(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "real/dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(root, "via")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		argv    []string
		cwd     string
		scope   []string
		ignored bool
	}{
		{"rm -rf operand", []string{"rm", "-rf", "pkg"}, "", []string{"pkg"}, true},
		{"rm operands after --", []string{"rm", "-r", "--", "-odd", "b/"}, "", []string{"-odd", "b"}, true},
		{"rm in a cwd", []string{"rm", "-rf", "gen"}, "sub", []string{"sub/gen"}, true},
		{"rm of the root", []string{"rm", "-rf", "."}, "", nil, true},
		{"rm escaping", []string{"rm", "-rf", "../x"}, "", nil, true},
		{"rm absolute", []string{"rm", "-f", "/tmp/x"}, "", nil, false},
		{"rm through a link", []string{"rm", "-rf", "via/dir"}, "", nil, true},
		{"rm of a link itself", []string{"rm", "-f", "via"}, "", []string{"via"}, true},
		{"rm of a link's target", []string{"rm", "-rf", "via/"}, "", nil, true},
		{"rm without operand", []string{"rm", "-f"}, "", nil, false},
		{"find -delete", []string{"find", "build", "-name", "*.o", "-delete"}, "", []string{"build"}, true},
		{"find default start", []string{"find", "-name", "*.o", "-delete"}, "", nil, true},
		{"find -exec", []string{"find", "pkg", "-exec", "rm", "{}", ";"}, "", nil, false},
		{"find -L", []string{"find", "-L", "pkg", "-delete"}, "", nil, true},
		{"git clean -fdx", []string{"git", "clean", "-fdx"}, "", nil, true},
		{"a build", []string{"make", "generate"}, "", nil, false},
		{"a script", []string{"sh", "-c", "echo x > a"}, "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scope, ignored := undoScope(root, tt.argv, tt.cwd)
			if !slices.Equal(scope, tt.scope) || ignored != tt.ignored {
				t.Fatalf("undoScope(%q, cwd %q) = %q, ignored %v; want %q, %v", tt.argv, tt.cwd, scope, ignored, tt.scope, tt.ignored)
			}
		})
	}
}

func TestDeltaChange(t *testing.T) {
	file := func(sha string, m uint32) *preimage.Entry {
		return &preimage.Entry{Path: "p", Kind: preimage.KindFile, SHA256: sha, Mode: m}
	}
	dir := &preimage.Entry{Path: "p", Kind: preimage.KindDir, Mode: 0o750}
	link := &preimage.Entry{Path: "p", Kind: preimage.KindLink, SHA256: "t", Mode: 0o777}
	tests := []struct {
		name   string
		d      preimage.Delta
		op     string
		before string
		after  string
		ref    preimage.Ref
	}{
		{"removed file", preimage.Delta{Path: "p", Before: file("a", 0o755)}, "delete", "a", "", preimage.Ref{Path: "p", SHA256: "a", Mode: "0755"}},
		{"created file", preimage.Delta{Path: "p", After: file("b", 0o644)}, "create", "", "b", preimage.Ref{Path: "p", Absent: true}},
		{"overwritten", preimage.Delta{Path: "p", Before: file("a", 0o644), After: file("b", 0o644)}, "write", "a", "b", preimage.Ref{Path: "p", SHA256: "a", Mode: "0644"}},
		{"chmod file", preimage.Delta{Path: "p", Before: file("a", 0o644), After: file("a", 0o600)}, "write", "a", "a", preimage.Ref{Path: "p", SHA256: "a", Mode: "0644"}},
		{"removed link", preimage.Delta{Path: "p", Before: link}, "delete", "t", "", preimage.Ref{Path: "p", SHA256: "t", Link: true}},
		{"removed dir", preimage.Delta{Path: "p", Before: dir}, "rmdir", "", "", preimage.Ref{Path: "p", Dir: true, Mode: "0750"}},
		{"made dir", preimage.Delta{Path: "p", After: dir}, "mkdir", "", "", preimage.Ref{Path: "p", Dir: true, Absent: true}},
		{"dir became file", preimage.Delta{Path: "p", Before: dir, After: file("b", 0o644)}, "write", "", "b",
			preimage.Ref{Path: "p", NotKept: "a directory was replaced by a file or the reverse: revert does not restore that"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, refs := deltaChange(tt.d)
			if ch.Op != tt.op || ch.Before != tt.before || ch.After != tt.after || len(refs) != 1 || refs[0] != tt.ref {
				t.Fatalf("got %+v %+v; want op %s %q->%q ref %+v", ch, refs, tt.op, tt.before, tt.after, tt.ref)
			}
		})
	}
}
