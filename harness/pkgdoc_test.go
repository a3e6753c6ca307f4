package harness_test

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestPackageDocs fails when a package of the module has no package doc
// comment, or one that does not say what it is: a library's starts
// "Package NAME ", a main's "Command NAME " (NAME its folder), as godoc
// shows them. Put one real paragraph in the package's doc.go: what the
// package is for and what it must not do.
func TestPackageDocs(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\x1f{{.Name}}\x1f{{.Doc}}", "github.com/harnessd/harnessd/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 50 {
		t.Fatalf("go list found %d packages, want the module's (over 50)", len(lines))
	}
	for _, line := range lines {
		f := strings.Split(line, "\x1f")
		if len(f) != 3 {
			t.Fatalf("go list line %q: want import path, name and doc", line)
		}
		pkg, name, doc := f[0], f[1], f[2]
		if problem := docProblem(pkg, name, doc); problem != "" {
			t.Errorf("%s: %s", pkg, problem)
		}
	}
}

// docProblem says what is wrong with the synopsis doc of package name at
// import path pkg, or "".
func docProblem(pkg, name, doc string) string {
	want := "Package " + name + " "
	if name == "main" {
		want = "Command " + path.Base(pkg) + " "
	}
	switch {
	case doc == "":
		return "no package doc comment: add a doc.go whose comment starts " + strings.TrimSpace(want) + " and says what the package is for and what it must not do"
	case !strings.HasPrefix(doc, want):
		return "the package doc starts " + firstWords(doc) + ", want " + strings.TrimSpace(want)
	}
	return ""
}

func firstWords(s string) string {
	w := strings.Fields(s)
	if len(w) > 3 {
		w = w[:3]
	}
	return `"` + strings.Join(w, " ") + `..."`
}

func TestDocProblem(t *testing.T) {
	tests := []struct {
		pkg, name, doc string
		want           string
	}{
		{"m/internal/watch", "watch", "Package watch reads inotify events.", ""},
		{"m/cmd/harness", "main", "Command harness is the CLI.", ""},
		{"m/internal/watch", "watch", "", "no package doc comment: add a doc.go whose comment starts Package watch"},
		{"m/internal/watch", "watch", "Watch reads events.", `the package doc starts "Watch reads events....", want Package watch`},
		{"m/internal/watch", "watch", "Package watcher reads events.", "want Package watch"},
		{"m/cmd/harness", "main", "Package main is the CLI.", "want Command harness"},
	}
	for _, tt := range tests {
		got := docProblem(tt.pkg, tt.name, tt.doc)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("docProblem(%q, %q, %q) = %q, want %q", tt.pkg, tt.name, tt.doc, got, tt.want)
		}
	}
}
