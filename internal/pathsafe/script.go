package pathsafe

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/harnessd/harnessd/contract/errs"
)

// maxScriptDepth bounds scripts inside scripts (sh -c "sh -c '...'").
const maxScriptDepth = 4

// maxScriptLen bounds the length of a script harnessd parses and checks.
const maxScriptLen = 64 << 10

// maxGlobMatches bounds the entries a glob argument is expanded to.
const maxGlobMatches = 4096

// isShellProg reports whether prog (a path or a name) is a POSIX-like shell.
func isShellProg(prog string) bool {
	switch filepath.Base(prog) {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash":
		return true
	}
	return false
}

// shellScripts returns the scripts a command line hands to a shell with
// -c, wherever the shell is in it (env sh -c, find -exec sh -c, xargs sh -c).
func shellScripts(argv []string) []string {
	var out []string
	for _, i := range scriptIndexes(argv) {
		out = append(out, argv[i])
	}
	return out
}

// scriptIndexes returns the indexes in argv of the scripts shellScripts
// finds. Such an argument is checked by parsing it (checkScript), word by
// word, not as one word: "test -s test/key.pem && make" is no path named
// key.pem (a person's exception names test/key.pem, not that text).
func scriptIndexes(argv []string) []int {
	var out []int
	for i := 0; i < len(argv); i++ {
		if !isShellProg(argv[i]) {
			continue
		}
		for j := i + 1; j < len(argv); j++ {
			a := argv[j]
			if a == "--" || !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
				break
			}
			if !strings.HasPrefix(a, "--") && strings.ContainsRune(a[1:], 'c') && j+1 < len(argv) {
				out = append(out, j+1)
				i = j + 1
				break
			}
		}
	}
	return out
}

// isScript reports whether i is one of idx.
func isScript(idx []int, i int) bool {
	for _, j := range idx {
		if j == i {
			return true
		}
	}
	return false
}

// checkScript checks the words of a shell script like the arguments of a
// command: every literal word (a command's arguments, redirection targets,
// loop items) and the literal tail of a word built from expansions
// ("$D/.env"). A script that does not parse is refused: harnessd cannot
// tell what it names.
func (r *Root) checkScript(src string, depth int) error {
	if depth > maxScriptDepth {
		return errs.New(errs.InvalidArgument, "shell scripts nested more than %d deep", maxScriptDepth)
	}
	if len(src) > maxScriptLen {
		return errs.New(errs.InvalidArgument, "the shell script is %d bytes, more than harnessd checks (%d): put it in a file of the repository and run that", len(src), maxScriptLen)
	}
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	f, err := p.Parse(strings.NewReader(src), "")
	if err != nil {
		return errs.New(errs.InvalidArgument, "the shell script does not parse: %v", err)
	}
	var firstErr error
	syntax.Walk(f, func(n syntax.Node) bool {
		if firstErr != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.CallExpr:
			var argv []string
			shellGlob := map[int]bool{}
			for i, w := range n.Args {
				lit, whole, unquotedGlob := wordLit(w)
				shellGlob[i] = unquotedGlob
				if !whole {
					if err := r.checkTail(lit); err != nil {
						firstErr = err
						return false
					}
					lit = "\x00" // not a literal: stands for an unknown word
				}
				argv = append(argv, lit)
			}
			if len(argv) > 0 && argv[0] != "\x00" {
				if err := r.checkProgram(argv[0]); err != nil {
					firstErr = err
					return false
				}
			}
			if len(argv) > 1 {
				scripts := scriptIndexes(argv)
				for i, a := range argv[1:] {
					if a == "\x00" || isScript(scripts, i+1) {
						continue
					}
					if err := r.checkWord(a, !shellGlob[i+1]); err != nil {
						firstErr = withIndex(err, i+1)
						return false
					}
				}
			}
			for _, s := range shellScripts(argv) {
				if s == "\x00" {
					continue
				}
				if err := r.checkScript(s, depth+1); err != nil {
					firstErr = err
					return false
				}
			}
		case *syntax.Redirect:
			if n.Word == nil {
				return true
			}
			if err := r.checkScriptWord(n.Word); err != nil {
				firstErr = err
				return false
			}
		case *syntax.WordIter:
			for _, w := range n.Items {
				if err := r.checkScriptWord(w); err != nil {
					firstErr = err
					return false
				}
			}
		}
		return true
	})
	return firstErr
}

// checkScriptWord checks a word of a script that is not a command's
// argument (a redirection target, a loop item).
func (r *Root) checkScriptWord(w *syntax.Word) error {
	lit, whole, unquotedGlob := wordLit(w)
	if whole {
		return r.checkWord(lit, !unquotedGlob)
	}
	return r.checkTail(lit)
}

// wordLit returns the literal value of w and whether w is all literal; for
// a word with expansions it returns the literal text after the last one.
// unquotedGlob says that glob characters appear outside quotes: the shell
// expands them (without matching names that start with a dot).
func wordLit(w *syntax.Word) (lit string, whole, unquotedGlob bool) {
	var b strings.Builder
	whole = true
	var add func(parts []syntax.WordPart, quoted bool)
	add = func(parts []syntax.WordPart, quoted bool) {
		for _, p := range parts {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(p.Value)
				if !quoted && hasGlobMeta(p.Value) {
					unquotedGlob = true
				}
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				add(p.Parts, true)
			default:
				whole = false
				b.Reset()
			}
		}
	}
	add(w.Parts, false)
	return b.String(), whole, unquotedGlob
}

// checkTail checks the literal tail of a word built from expansions: its
// last path component against the denylist, and a "/.." that would climb.
func (r *Root) checkTail(tail string) error {
	if tail == "" {
		return nil
	}
	base := path.Base(tail)
	if base == "/" || base == "." {
		return nil
	}
	if !hasGlobMeta(base) {
		return r.checkSecretOnly(tail, base)
	}
	return nil
}

// checkWord checks one argument: as a path, as the value of an
// assignment or option, and a value glued to a short option (-fFILE).
func (r *Root) checkWord(a string, dots bool) error {
	if err := r.checkArgGlob(a, dots); err != nil {
		return err
	}
	if v, ok := assignmentValue(a); ok {
		if err := r.checkArg(v); err != nil {
			return err
		}
	}
	if v, ok := gluedValue(a); ok {
		if err := r.checkArg(v); err != nil {
			return err
		}
	}
	if v, ok := revPathPart(a); ok {
		if err := r.checkSecretOnly(a, v); err != nil {
			return err
		}
	}
	return nil
}

// gluedValue returns the value glued to a short option: "-f.env" is -f
// with ".env" (date -fFILE, xargs -aFILE, rg -g'*'). Only an option letter
// followed by something that looks like a path or a glob counts: "-n5" or
// "-Wall" are not paths.
func gluedValue(a string) (string, bool) {
	if len(a) < 3 || a[0] != '-' || a[1] == '-' || !isLetter(a[1]) {
		return "", false
	}
	v := a[2:]
	if strings.ContainsAny(v, "/.~*?[{$") {
		return v, true
	}
	return "", false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// checkGlob refuses a glob argument that matches a secret path of the
// root (".en?", "*", "deploy/*.key"): the program, not a shell, expands
// it, so the pattern itself is what names the file.
func (r *Root) checkGlob(a string, dots bool) error {
	pat := path.Clean(a)
	if strings.HasPrefix(pat, "/") || pat == ".." || strings.HasPrefix(pat, "../") {
		return nil // absolute and climbing globs are refused by the caller's rules
	}
	// "**" means any depth to the tools that take globs (rg, git): a
	// pattern whose last component is checked against the denylist's own
	// patterns catches "**/*.pem"; the matches of the rest are listed.
	if strings.Contains(pat, "**") {
		base := path.Base(pat)
		for _, p := range r.deny.Patterns() {
			if ok, _ := path.Match(base, path.Base(p)); ok || base == "**" || base == "*" {
				return errs.New(errs.SecretPathDenied, "argument %q can match secret files (pattern %q)", a, p).With("path", a).With("pattern", p)
			}
		}
		return nil
	}
	if _, err := path.Match(pat, ""); err != nil {
		return nil // not a valid glob: a pattern for the program
	}
	for _, rel := range r.glob(pat) {
		if !dots && dotUnmatched(pat, rel) {
			continue // the shell does not expand "*" to ".env"
		}
		if dp, ok := r.deny.Match(rel); ok {
			return r.deny.SecretError(fmt.Sprintf("argument %q names the secret file %q, which", a, rel), a, rel, dp)
		}
	}
	return nil
}

// glob returns the paths under the root (relative, slash-separated) that
// the relative pattern pat matches, component by component, without
// following symbolic links to directories (a link loop would make it
// exponential) and visiting at most maxGlobMatches entries.
func (r *Root) glob(pat string) []string {
	parts := strings.Split(pat, "/")
	var out []string
	visited := 0
	var walk func(dir string, i int)
	walk = func(dir string, i int) {
		if visited >= maxGlobMatches {
			return
		}
		part := parts[i]
		last := i == len(parts)-1
		if !hasGlobMeta(part) {
			visited++
			p := path.Join(dir, part)
			fi, err := os.Lstat(filepath.Join(r.path, filepath.FromSlash(p)))
			if err != nil {
				return
			}
			if last {
				out = append(out, p)
			} else if fi.IsDir() {
				walk(p, i+1)
			}
			return
		}
		ents, err := os.ReadDir(filepath.Join(r.path, filepath.FromSlash(dir)))
		if err != nil {
			return
		}
		for _, e := range ents {
			if visited >= maxGlobMatches {
				return
			}
			visited++
			if ok, _ := path.Match(part, e.Name()); !ok {
				continue
			}
			p := path.Join(dir, e.Name())
			if last {
				out = append(out, p)
			} else if e.IsDir() { // a symlink is not a dir here
				walk(p, i+1)
			}
		}
	}
	walk(".", 0)
	return out
}

// dotUnmatched reports whether a shell would leave rel out of pat's
// expansion: some component of rel starts with a dot where pat's does not.
func dotUnmatched(pat, rel string) bool {
	ps, rs := strings.Split(pat, "/"), strings.Split(rel, "/")
	for i := 0; i < len(ps) && i < len(rs); i++ {
		if strings.HasPrefix(rs[i], ".") && !strings.HasPrefix(ps[i], ".") {
			return true
		}
	}
	return false
}

// checkProgram refuses a program that is a secret file (running ./.env
// makes the shell print its lines in its errors).
func (r *Root) checkProgram(prog string) error {
	if prog == "" {
		return nil
	}
	return r.checkSecretOnly(prog, path.Clean(strings.TrimPrefix(prog, r.path+"/")))
}
