package harness_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDocSaysWhereTheTypesLive: doc.go's "Where the types live" names the
// package of every alias the facade declares, and the facade's own types
// (the rest) by name, so go doc answers where a type is defined.
func TestDocSaysWhereTheTypesLive(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "// # Where the types live")
	if !ok {
		t.Fatal(`doc.go has no "# Where the types live" section`)
	}
	section, _, _ = strings.Cut(section, "// # ")
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	aliases, own := 0, 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{} // local name -> path in the module
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			local := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				local = im.Name.Name
			}
			imports[local] = strings.TrimPrefix(p, "github.com/harnessd/harnessd/")
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				ts := spec.(*ast.TypeSpec)
				if !ts.Name.IsExported() {
					continue
				}
				sel, isSel := ts.Type.(*ast.SelectorExpr)
				if !ts.Assign.IsValid() || !isSel {
					own++
					if !strings.Contains(section, ts.Name.Name) && !(strings.HasPrefix(ts.Name.Name, "Audit") && strings.Contains(section, "Audit*")) {
						t.Errorf("%s: the facade's own type %s is not named in doc.go's \"Where the types live\"", path, ts.Name.Name)
					}
					continue
				}
				aliases++
				pkg := imports[sel.X.(*ast.Ident).Name]
				if !strings.Contains(section, " "+pkg+" ") && !strings.Contains(section, " "+pkg+"\n") {
					t.Errorf("%s: %s is an alias of %s.%s, but doc.go's \"Where the types live\" does not name %s", path, ts.Name.Name, pkg, sel.Sel.Name, pkg)
				}
			}
		}
	}
	if aliases < 100 || own < 5 {
		t.Fatalf("saw %d aliases and %d own types: the test is not reading the facade", aliases, own)
	}
}
