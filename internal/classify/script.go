package classify

import (
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

var parserPool = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// Script classifies the source of a `sh -c` / `bash -c` script. It is parsed
// as bash; an unparseable script is shell (fail closed). Every simple command
// is classified with the rules of [Argv] and the script takes the most severe
// class. Constructs that hide what runs (command and process substitution,
// eval, exec, source, functions, arithmetic, expansions in the command name,
// redirections into files) make it shell; `> file` on its own truncates and
// is destructive.
func Script(src string) Result { return classifyScript(src, 0) }

func classifyScript(src string, depth int) Result {
	if depth > maxDepth {
		return result(Shell, "scripts are nested too deeply to classify")
	}
	p := parserPool.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parserPool.Put(p)
	if err != nil {
		return result(Shell, "unparseable script: "+err.Error())
	}
	w := &walker{depth: depth, res: Result{Class: Readonly}}
	syntax.Walk(f, w.forbidden)
	w.stmts(f.Stmts)
	if len(w.res.Reasons) == 0 {
		w.res.Reasons = []string{"the script runs no commands"}
	}
	// A script's destructive or remote part is never stated exactly: what
	// runs depends on the shell (a push or a delete hidden in a script
	// stays rejected).
	w.res.Effect = nil
	return w.res
}

type walker struct {
	depth int
	res   Result
}

func (w *walker) raise(c Class, reason string) {
	w.res.merge(Result{Class: c, Reasons: []string{reason}})
}

// forbidden rejects, anywhere in the tree, the constructs that run code the
// classifier cannot see.
func (w *walker) forbidden(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.CmdSubst:
		w.raise(Shell, "command substitution runs commands that cannot be classified")
	case *syntax.ProcSubst:
		w.raise(Shell, "process substitution runs commands that cannot be classified")
	case *syntax.FuncDecl:
		w.raise(Shell, "function declarations are not allowed")
	case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop:
		w.raise(Shell, "arithmetic evaluation can run commands through array subscripts")
	case *syntax.CoprocClause:
		w.raise(Shell, "coproc starts a background process")
	case *syntax.TestDecl:
		w.raise(Shell, "test declarations are not allowed")
	case *syntax.ParamExp:
		if !safeParam(n) {
			w.raise(Shell, "parameter expansion with indirection, subscripts or operators can run commands")
		}
	case *syntax.Assign:
		if n.Index != nil || n.Array != nil {
			w.raise(Shell, "array assignments can run commands through subscripts")
		}
	case *syntax.BinaryTest:
		switch n.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			w.raise(Shell, "arithmetic tests can run commands through array subscripts")
		}
	case *syntax.UnaryTest:
		if n.Op == syntax.TsVarSet || n.Op == syntax.TsRefVar {
			w.raise(Shell, "variable tests can run commands through array subscripts")
		}
	}
	return true
}

func safeParam(p *syntax.ParamExp) bool {
	if p.Excl || p.Index != nil || p.Slice != nil || p.Names != 0 || p.NestedParam != nil ||
		p.Width || p.IsSet || p.Flags != nil || len(p.Modifiers) > 0 {
		return false
	}
	return p.Exp == nil || p.Exp.Op != syntax.OtherParamOps
}

func (w *walker) stmts(list []*syntax.Stmt) {
	for _, s := range list {
		w.stmt(s)
	}
}

func (w *walker) stmt(s *syntax.Stmt) {
	if s == nil {
		return
	}
	if s.Background {
		w.raise(Unknown, "a backgrounded command (&) can outlive the script")
	}
	if s.Coprocess || s.Disown {
		w.raise(Shell, "coprocesses and disowned jobs are not allowed")
	}
	trunc := truncatesOnly(s.Cmd)
	for _, rd := range s.Redirs {
		w.redirect(rd, trunc)
	}
	switch c := s.Cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		w.call(c)
	case *syntax.BinaryCmd:
		w.stmt(c.X)
		w.stmt(c.Y)
	case *syntax.Subshell:
		w.stmts(c.Stmts)
	case *syntax.Block:
		w.stmts(c.Stmts)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond)
			w.stmts(ic.Then)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond)
		w.stmts(c.Do)
	case *syntax.ForClause:
		if wi, ok := c.Loop.(*syntax.WordIter); ok && wi.Name != nil && dangerousEnv(wi.Name.Value) {
			w.raise(Unknown, envReason(wi.Name.Value))
		}
		w.stmts(c.Do)
	case *syntax.CaseClause:
		for _, it := range c.Items {
			w.stmts(it.Stmts)
		}
	case *syntax.TimeClause:
		w.stmt(c.Stmt)
	case *syntax.TestClause:
		w.res.merge(result(Readonly, "[[ ]] only tests"))
	case *syntax.DeclClause:
		w.decl(c)
	default:
		w.raise(Shell, "unsupported shell construct")
	}
}

// truncatesOnly reports a statement that does nothing but its redirections
// (`> f`, `: > f`, `true > f`), so an output redirection truncates the file.
func truncatesOnly(cmd syntax.Command) bool {
	switch c := cmd.(type) {
	case nil:
		return true
	case *syntax.CallExpr:
		if len(c.Args) == 0 {
			return true
		}
		if len(c.Args) == 1 {
			l := c.Args[0].Lit()
			return l == ":" || l == "true"
		}
	}
	return false
}

func (w *walker) redirect(rd *syntax.Redirect, trunc bool) {
	switch rd.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.RdrIn:
		return
	case syntax.DplIn, syntax.DplOut:
		if t := rd.Word.Lit(); t == "-" || isDigits(t) {
			return
		}
		if rd.Op == syntax.DplIn {
			w.raise(Shell, "input redirection <& from a file is not allowed")
			return
		}
	}
	target := rd.Word.Lit()
	if target == "" {
		w.raise(Shell, "the target of redirection "+rd.Op.String()+" is expanded at run time")
		return
	}
	if harmlessSink(target) {
		return
	}
	switch {
	case trunc && (rd.Op == syntax.RdrOut || rd.Op == syntax.RdrClob || rd.Op == syntax.RdrAll || rd.Op == syntax.RdrAllClob):
		w.raise(Destructive, "`"+rd.Op.String()+" "+target+"` truncates "+strconv.Quote(target))
	default:
		w.raise(Shell, "redirection "+rd.Op.String()+" "+target+" writes a file")
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (w *walker) call(c *syntax.CallExpr) {
	for _, as := range c.Assigns {
		if as.Name != nil && dangerousEnv(as.Name.Value) {
			w.raise(Unknown, envReason(as.Name.Value))
		}
	}
	if len(c.Args) == 0 {
		w.res.merge(result(Readonly, "variable assignments only set shell variables"))
		return
	}
	argv := make([]string, len(c.Args))
	for i, word := range c.Args {
		argv[i] = wordArg(word)
	}
	if strings.ContainsAny(argv[0], "\x00\x01") {
		w.raise(Shell, "the command name is expanded at run time")
		return
	}
	if r, ok := builtin(argv); ok {
		r.Program = argv[0]
		w.res.merge(r)
		return
	}
	w.res.merge(classifyArgv(argv, w.depth))
}

// builtin classifies shell builtins that have no program of their own.
func builtin(argv []string) (Result, bool) {
	name := argv[0]
	switch name {
	case "eval", "exec", "source", ".", "trap", "enable", "builtin", "alias", "fc", "bind",
		"complete", "compgen", "compopt", "coproc", "mapfile", "readarray", "select":
		return result(Shell, name+" runs code that cannot be classified"), true
	case "history":
		if len(argv) > 1 {
			return result(Shell, "history with options reads or writes history files"), true
		}
		return result(Readonly, "history lists the shell's history"), true
	case "unset":
		for _, a := range argv[1:] {
			if dangerousEnv(a) {
				return result(Unknown, "unset "+a+": "+envReason(a)), true
			}
		}
		return result(Readonly, "unset is a shell builtin"), true
	case "cd", "pushd", "popd", "dirs", "set", "shopt", "shift", "exit", "return",
		"break", "continue", "wait", "jobs", "umask", "ulimit", "getopts", "type", ":", "times",
		"logout", "suspend", "disown", "caller":
		return result(Readonly, name+" is a shell builtin"), true
	case "hash":
		for _, a := range argv[1:] {
			if isShort(a) && strings.Contains(a, "p") {
				return result(Shell, "hash -p changes which program a name runs"), true
			}
		}
		return result(Readonly, "hash is a shell builtin"), true
	case "read":
		for _, a := range argv[1:] {
			if strings.ContainsAny(a, "[\x00\x01") {
				return result(Shell, "read into subscripted or expanded names can run commands"), true
			}
		}
		return result(Readonly, "read reads standard input"), true
	case "printf":
		for _, a := range argv[1:] {
			if a == "--" || !strings.HasPrefix(a, "-") {
				break
			}
			if strings.Contains(a, "v") {
				return result(Shell, "printf -v assigns to a variable name that can run commands"), true
			}
		}
	case "export", "local", "declare", "typeset", "readonly":
		// Parsed as DeclClause in bash; reached only through odd quoting.
		return result(Shell, name+" with unusual words is not allowed"), true
	}
	return Result{}, false
}

func (w *walker) decl(d *syntax.DeclClause) {
	v := d.Variant.Value
	for _, as := range d.Args {
		if as.Name == nil {
			lit := ""
			if as.Value != nil {
				lit = as.Value.Lit()
			}
			switch {
			case lit == "-p" || lit == "-x" || lit == "-r" || lit == "-g":
			case strings.HasPrefix(lit, "-") || strings.HasPrefix(lit, "+"):
				w.raise(Shell, v+" "+lit+" changes how variables are evaluated")
			default:
				w.raise(Shell, v+" with a name expanded at run time is not allowed")
			}
			continue
		}
		if dangerousEnv(as.Name.Value) {
			w.raise(Unknown, envReason(as.Name.Value))
		}
	}
	w.res.merge(result(Readonly, v+" only sets shell variables"))
}

// wordArg turns a shell word into an argv element. Words that are known at
// parse time keep their value (globs such as src/*.go stay as written);
// words that could expand into an option or into several words become
// dynamicArg; other expanded parts become \x01.
func wordArg(word *syntax.Word) string {
	var b strings.Builder
	injectable, glob := false, false
	for _, part := range word.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v, g, brace := unescapeLit(p.Value)
			glob = glob || g
			injectable = injectable || brace
			b.WriteString(v)
		case *syntax.SglQuoted:
			if p.Dollar && strings.Contains(p.Value, `\`) {
				injectable = true
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeDq(l.Value))
					continue
				}
				if b.Len() == 0 {
					injectable = true // "$x..." may start with '-'
				}
				b.WriteByte('\x01')
			}
		default: // unquoted expansions split into fields; ExtGlob; substitutions
			injectable = true
		}
	}
	s := b.String()
	if glob && (s == "" || strings.IndexByte("*?[-", s[0]) >= 0) {
		injectable = true
	}
	if injectable {
		return dynamicArg
	}
	return s
}

// unescapeLit removes the backslashes of an unquoted literal and reports
// unescaped glob characters and brace expansions.
func unescapeLit(v string) (s string, glob, brace bool) {
	if !strings.ContainsAny(v, "\\*?[{") {
		return v, false, false
	}
	var b strings.Builder
	openBrace := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case '\\':
			if i+1 < len(v) {
				i++
				if v[i] != '\n' {
					b.WriteByte(v[i])
				}
			}
			continue
		case '*', '?':
			glob = true
		case '[':
			glob = glob || strings.IndexByte(v[i+1:], ']') >= 0
		case '{':
			openBrace = true
		case ',':
			brace = brace || openBrace
		case '.':
			if openBrace && i+1 < len(v) && v[i+1] == '.' {
				brace = true
			}
		}
		b.WriteByte(c)
	}
	return b.String(), glob, brace
}

func unescapeDq(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
