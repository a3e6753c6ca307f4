package messages_test

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"strings"
	"testing"
)

// TestMessagesAreData walks every exported type of this package and fails
// on a field (at any depth: slices, maps, pointers, nested structs) that
// carries behaviour rather than data: a func, a chan, a context.Context,
// or an interface with methods (error included). Messages must be able to
// cross a process or a node.
func TestMessagesAreData(t *testing.T) {
	fset := token.NewFileSet()
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, n, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("github.com/harnessd/harnessd/messages", fset, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range pkg.Scope().Names() {
		tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
		if !ok || !tn.Exported() {
			continue
		}
		n++
		if why := behaviour(tn.Type().Underlying(), map[types.Type]bool{}); why != "" {
			t.Errorf("messages.%s carries behaviour: %s", name, why)
		}
	}
	if n < 40 {
		t.Fatalf("walked %d exported types: the test is not looking at the package", n)
	}
}

// behaviour returns why t is not plain data, or "".
func behaviour(t types.Type, seen map[types.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch u := t.(type) {
	case *types.Signature:
		return "a func"
	case *types.Chan:
		return "a chan"
	case *types.Interface:
		if u.NumMethods() > 0 {
			return "an interface with methods"
		}
	case *types.Named:
		if u.Obj().Pkg() != nil && u.Obj().Pkg().Path() == "context" {
			return "a context.Context"
		}
		return behaviour(u.Underlying(), seen)
	case *types.Pointer:
		return behaviour(u.Elem(), seen)
	case *types.Slice:
		return behaviour(u.Elem(), seen)
	case *types.Array:
		return behaviour(u.Elem(), seen)
	case *types.Map:
		if why := behaviour(u.Key(), seen); why != "" {
			return why
		}
		return behaviour(u.Elem(), seen)
	case *types.Struct:
		for i := range u.NumFields() {
			f := u.Field(i)
			if why := behaviour(f.Type(), seen); why != "" {
				return "field " + f.Name() + ": " + why
			}
		}
	}
	return ""
}
