package main

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestCommandTablePanics(t *testing.T) {
	run := func(context.Context, *cli, []string) error { return nil }
	ok := command{name: "a", usage: "a   do a", run: run}
	tests := []struct {
		name string
		cmds []command
		want string // in the panic
	}{
		{"duplicate", []command{ok, {name: "b", usage: "b", run: run}, ok}, "two commands are named a"},
		{"built-in name", []command{{name: "status", usage: "status", run: run}}, "status has a built-in command's name"},
		{"no name", []command{{usage: "x", run: run}}, "needs a name, a run function and a usage line"},
		{"no run", []command{{name: "x", usage: "x"}}, "command x needs"},
		{"no usage", []command{{name: "x", run: run}}, "command x needs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				v := recover()
				if s, _ := v.(string); !strings.Contains(s, tt.want) {
					t.Fatalf("recovered %v, want a panic containing %q", v, tt.want)
				}
			}()
			commandTable(tt.cmds...)
		})
	}
	if m := commandTable(ok, command{name: "b", usage: "b", run: run}); len(m) != 2 || m["a"].usage != ok.usage {
		t.Fatalf("commandTable = %v, want a and b", m)
	}
}

// Every command a file of the package defines (var xCommand = command{...})
// is in the list, and the list's commands are the help's and completion's.
func TestEveryDefinedCommandIsListed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var defined []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for _, v := range vs.Values {
					lit, ok := v.(*ast.CompositeLit)
					if id, isIdent := typeIdent(lit, ok); isIdent && id == "command" {
						defined = append(defined, vs.Names[0].Name)
					}
				}
			}
		}
	}
	if len(defined) != len(commands) {
		t.Errorf("%d commands defined (%v), %d listed in commands: list every one in commands.go", len(defined), defined, len(commands))
	}
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	names = append(names, builtinCommands...)
	sort.Strings(names)
	if got := commandNames(); !slices.Equal(got, names) {
		t.Errorf("commandNames() = %q, want %q", got, names)
	}
	for n, c := range commands {
		if !strings.HasPrefix(c.usage, n) {
			t.Errorf("command %s: usage %q does not start with its name", n, c.usage)
		}
		if !strings.Contains(helpText(), "harness "+c.usage+"\n") {
			t.Errorf("command %s is missing from the help text", n)
		}
	}
}

func typeIdent(lit *ast.CompositeLit, ok bool) (string, bool) {
	if !ok {
		return "", false
	}
	id, ok := lit.Type.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}
