package harness_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/harnessd/harnessd/"

// layer ranks the module's packages by their folder alone: an import must
// point to a lower rank, or to the same rank within a group of siblings
// that may use each other (the contract; the leaf mechanisms; the
// operation packages; the surfaces; the mains). DESIGN §3: cmd, bench ->
// surfaces -> harness -> harness/ops -> harness/op -> harness/govern ->
// harness/runtime -> supervisors -> actors -> internal -> messages,
// persistence, contract. The rank is the folder's: no package is named
// here apart from its folder.
func layer(pkg string) (rank int, siblings bool) {
	switch top, _, _ := strings.Cut(pkg, "/"); top {
	case "messages", "persistence":
		return 0, false
	case "contract":
		return 0, true
	case "internal":
		return 1, true
	case "actors":
		return 2, false
	case "supervisors":
		return 3, false
	case "surfaces":
		return 10, true
	case "cmd", "bench":
		return 11, true
	}
	switch {
	case pkg == "harness/runtime":
		return 4, false
	case pkg == "harness/govern":
		return 5, false
	case pkg == "harness/op":
		return 6, false
	case strings.HasPrefix(pkg, "harness/ops/"):
		return 7, true
	case pkg == "harness/ops":
		return 8, false
	case pkg == "harness":
		return 9, false
	}
	return 12, true
}

// TestDependencyDirection fails on an import against the direction of the
// layers: a new arrow must be a visible change of this test.
func TestDependencyDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, "|")
		pkg = strings.TrimPrefix(pkg, module)
		pr, psib := layer(pkg)
		seen++
		for _, imp := range strings.Fields(imports) {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			ir, _ := layer(imp)
			switch {
			case pkg == "messages":
				t.Errorf("messages imports %s: messages import nothing of the module", imp)
			case ir < pr:
			case ir == pr && psib && sameGroup(pkg, imp):
			default:
				t.Errorf("%s (rank %d) imports %s (rank %d): imports point down the layers", pkg, pr, imp, ir)
			}
		}
	}
	if seen < 30 {
		t.Fatalf("go list saw %d packages: the test is not looking at the module", seen)
	}
}

func sameGroup(a, b string) bool {
	group := func(p string) string {
		if strings.HasPrefix(p, "harness/ops/") {
			return "harness/ops"
		}
		top, _, _ := strings.Cut(p, "/")
		if top == "bench" {
			return "cmd"
		}
		return top
	}
	return group(a) == group(b)
}

// TestNoInitWiringNoPackageState fails on a func init() or a package-level
// variable in harness/ or supervisors/: wiring is explicit (harness.Open,
// the tree literal) and state lives in the instances.
func TestNoInitWiringNoPackageState(t *testing.T) {
	allowed := map[string]string{
		"harness.Version": "set at link time with -ldflags -X",
	}
	root := ".."
	fset := token.NewFileSet()
	checked := 0
	for _, dir := range []string{"harness", "supervisors"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			checked++
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && d.Name.Name == "init" {
						t.Errorf("%s: func init(): wire components explicitly in harness.Open", path)
					}
				case *ast.GenDecl:
					if d.Tok != token.VAR {
						continue
					}
					for _, spec := range d.Specs {
						for _, name := range spec.(*ast.ValueSpec).Names {
							if name.Name == "_" {
								continue
							}
							if _, ok := allowed[f.Name.Name+"."+name.Name]; !ok {
								t.Errorf("%s: package-level var %s: keep state in the instance (op.Env, the actors)", path, name.Name)
							}
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d files: the test is not looking at the code", checked)
	}
}
