package route

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The seed table in docs/DESIGN.md names, for every "Must use Durable"
// and "Must reject" row, the tests that show it: each must exist, so the
// table cannot rot.
func TestSeedTableNamesRealTests(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "docs", "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start, end := strings.Index(doc, "<!-- seed-table -->"), strings.Index(doc, "<!-- /seed-table -->")
	if start < 0 || end < start {
		t.Fatal("docs/DESIGN.md has no <!-- seed-table --> ... <!-- /seed-table --> section")
	}
	ref := regexp.MustCompile("`([a-z][a-z0-9_/]*)\\.(Test[A-Za-z0-9_]+)`")
	rows, durable, reject := 0, 0, 0
	for _, line := range strings.Split(doc[start:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "Must ") {
			continue
		}
		rows++
		switch {
		case strings.HasPrefix(strings.TrimSpace(cells[1]), "Must use Durable"):
			durable++
		case strings.HasPrefix(strings.TrimSpace(cells[1]), "Must reject"):
			reject++
		}
		refs := ref.FindAllStringSubmatch(cells[3], -1)
		if len(refs) == 0 {
			t.Errorf("row %q names no test", strings.TrimSpace(cells[1]))
		}
		for _, m := range refs {
			if !testExists(t, filepath.Join(root, filepath.FromSlash(m[1])), m[2]) {
				t.Errorf("row %q: %s.%s does not exist (no func %s( in %s/*_test.go)", strings.TrimSpace(cells[1]), m[1], m[2], m[2], m[1])
			}
		}
	}
	if durable < 5 || reject < 4 {
		t.Errorf("the seed table has %d Must use Durable and %d Must reject rows, want the seed's (at least 5 and 4)", durable, reject)
	}
	t.Logf("%d rows checked", rows)
}

func testExists(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\nfunc "+name+"(") {
			return true
		}
	}
	return false
}
