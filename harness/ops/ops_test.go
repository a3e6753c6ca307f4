package ops

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The wiring Open installs is whole: every hook of the write path and
// every service is registered (a write never runs without its
// verification gate, pre-images or trailers).
func TestWiringIsWhole(t *testing.T) {
	w := Wiring()
	if err := w.Check(); err != nil {
		t.Fatal(err)
	}
	hooks := reflect.ValueOf(w.Hooks)
	for i := range hooks.NumField() {
		if hooks.Field(i).IsNil() {
			t.Errorf("hook %s is not registered", hooks.Type().Field(i).Name)
		}
	}
}

// siblingImports are the imports of one operation package by another that
// remain, each with its reason. Everything else an operation needs of a
// sibling goes through op: the write hooks (op.WriteHooks), the checker
// (op.Checker) and the Durable Path (op.Durable).
var siblingImports = map[string]map[string]string{
	"batch": {"command": "a run_command step's default timeout bounds the step (command.FastTimeoutDefault)"},
}

// Operations are leaves: no operation package imports a sibling beyond
// siblingImports (mutation calls neither run nor undo nor provenance; run
// does not call check; check does not call job).
func TestOperationsAreLeaves(t *testing.T) {
	const prefix = "github.com/harnessd/harnessd/harness/ops/"
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "testdata" {
			continue
		}
		pkg := d.Name()
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]bool{}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range af.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				if sib, ok := strings.CutPrefix(p, prefix); ok {
					imports[sib] = true
				}
			}
		}
		seen++
		var bad []string
		for sib := range imports {
			if _, ok := siblingImports[pkg][sib]; !ok {
				bad = append(bad, sib)
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			t.Errorf("harness/ops/%s imports its siblings %v: reach them through op (a write hook, op.Checker, op.Durable) or add the import to siblingImports with its reason", pkg, bad)
		}
		for sib, why := range siblingImports[pkg] {
			if !imports[sib] {
				t.Errorf("siblingImports lists %s -> %s (%s), which is gone: remove it", pkg, sib, why)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("read %d operation packages: is the test running in harness/ops?", seen)
	}
}
