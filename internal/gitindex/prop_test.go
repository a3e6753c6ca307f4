package gitindex

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/harnessd/harnessd/internal/testutil"
)

// limitChecks sets rapid's number of checks for this test unless the
// command line chose one.
func limitChecks(t *testing.T, n string) {
	f := flag.Lookup("rapid.checks")
	if f == nil {
		return
	}
	set := false
	flag.Visit(func(v *flag.Flag) { set = set || v.Name == "rapid.checks" })
	if set || os.Getenv("RAPID_CHECKS") != "" {
		return
	}
	old := f.Value.String()
	must(t, f.Value.Set(n))
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// propRepo is the state of one property run: a repository, its base, and
// the paths a watcher would have reported since the base.
type propRepo struct {
	*fixture
	touched []string
}

var (
	propDirs     = []string{"", "d", "d/e", "f", "build", "d/build", "n1/n2"}
	propNames    = []string{"a", "b.txt", "a.b", "c.log", "keep.log", "x", "A.TXT"}
	propContents = []string{"", "aaaa", "bbbb", "aaaa\n", "cc", "a longer line of text\n",
		"aaaa\r\n", "a\r\nb\r\n", "a\r\nb\n", "a\rb\r\n", "bin\x00\r\n", "$Id$\r\n", "$Id: 12 $\n", "\r\n\r\n\x1a"}
	// propAttrLines are the lines an attributes step writes: conversions
	// Refresh models (text, eol, crlf, auto, macros), ones it leaves to git
	// (a filter, $Id$) and ones that change nothing status sees.
	propAttrLines = []string{"*.txt text", "* text=auto", "*.b eol=crlf", "a filter=x", "*.log linguist-generated",
		"* -text", "x ident", "b.txt -diff", "*.b binary", "a* text eol=lf", "*.TXT crlf=input", "**/e/** -crlf",
		"[attr]conv text eol=crlf", "a.b conv", "!x text", "\"a.b\" -text merge=union", "[ab]* text=auto eol=lf"}
)

// walk returns the work tree's files and directories (not .git, nor a
// submodule's .git file).
func (p *propRepo) walk() (files, dirs []string) {
	_ = filepath.WalkDir(p.dir, func(abs string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(p.dir, abs)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
		case rel == ".git", strings.HasSuffix(rel, "/.git"):
			if d.IsDir() {
				return filepath.SkipDir
			}
		case rel == ".gitmodules":
			// Rewritten whole by the submodule step only: a flipped byte
			// would make git itself fail.
		case d.IsDir():
			dirs = append(dirs, rel)
		default:
			files = append(files, rel)
		}
		return nil
	})
	return files, dirs
}

// plainParent reports whether every existing ancestor of rel is a real
// directory (a write through a symlink would change another path than the
// one reported), and returns the top-most ancestor that does not exist.
func (p *propRepo) plainParent(rel string) (ok bool, topNew string) {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		fi, err := os.Lstat(p.abs(d))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if topNew == "" {
				topNew = d
			}
		case err != nil || !fi.IsDir():
			return false, ""
		}
	}
	return true, topNew
}

func (p *propRepo) touch(paths ...string) { p.touched = append(p.touched, paths...) }

func (p *propRepo) rebase() {
	p.fixture.rebase()
	p.touched = nil
}

// gitTry runs an index step and takes a new base whether it succeeded or
// not: a git that fails may still have written the index (`git add` of a
// tracked file under an ignored directory updates its entry and exits 1),
// and a watcher reports that write like any other.
func (p *propRepo) gitTry(args ...string) bool {
	cmd := exec.Command("git", args...)
	cmd.Dir = p.dir
	cmd.Env = testutil.GitEnv()
	ok := cmd.Run() == nil
	p.rebase()
	return ok
}

// entries are the index paths an index step may move or unstage.
func (p *propRepo) entries() []string {
	var out []string
	for _, e := range p.ix.Entries {
		out = append(out, e.Path)
	}
	return out
}

func pick[T any](t *rapid.T, label string, xs []T) T {
	return rapid.SampledFrom(xs).Draw(t, label)
}

// newPropFixture makes the repository of one property run: a main
// checkout, a linked worktree of one (the fixture is the worktree) or a
// superproject with a submodule at sm.
func newPropFixture(t *testing.T, kind string, files map[string]string) *fixture {
	t.Helper()
	switch kind {
	case "worktree":
		main := newRepo(t, "sha1", files)
		wt := filepath.Join(main, "..", filepath.Base(main)+"-wt")
		testutil.Git(t, main, "worktree", "add", "-q", "-b", "wt", wt)
		t.Cleanup(func() { os.RemoveAll(wt) })
		f := &fixture{t: t, dir: wt}
		f.rebase()
		return f
	case "submodule":
		sub := newRepo(t, "sha1", map[string]string{"s.txt": "s\n", "in/t.b": "t\r\n", ".gitattributes": "*.b text\n"})
		f := newFixture(t, files)
		f.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sm")
		f.git("commit", "-q", "-m", "submodule")
		f.rebase()
		return f
	}
	return newFixture(t, files)
}

// TestRefreshProperty: after every step of a random sequence of work-tree
// changes (creates, same-size edits, deletes, chmod, symlinks, files
// becoming directories, renames of files and whole directories, ignored
// and negated files, nested untracked directories reported only by their
// top directory; sometimes the whole tree, as after a watcher overflow,
// or more paths than changed; .gitignore files rewritten; CRLF, lone-CR,
// binary and $Id$ contents; .gitattributes rewritten at any level with
// text, eol, crlf, auto, macros, a filter, ident and attributes status
// does not see), of configuration changes (core.autocrlf, core.filemode,
// core.ignorecase, a filter driver) and of index changes (add, commit, rm
// --cached, mv, each followed by a new base), Refresh from the base — or
// from the previous Refresh, as the view goes on — equals git status. The
// repository is a main checkout, a linked worktree, or a superproject
// whose submodule changes too (files, untracked files, commits).
func TestRefreshProperty(t *testing.T) {
	limitChecks(t, "20")
	total := 0
	defer func() { t.Logf("%d status comparisons", total) }()
	rapid.Check(t, func(rt *rapid.T) {
		kind := rapid.SampledFrom([]string{"main", "worktree", "submodule"}).Draw(rt, "kind")
		files := map[string]string{
			".gitignore": "*.log\n!keep.log\nbuild/\n",
			"a":          "aaaa", "d/b.txt": "bbbb\r\n", "d/e/a.b": "cc", "f/x": "x\n",
		}
		if rapid.Bool().Draw(rt, "attributes") {
			files[".gitattributes"] = pick(rt, "rootattrs", propAttrLines) + "\n" + pick(rt, "rootattrs2", propAttrLines) + "\n"
		}
		f := newPropFixture(t, kind, files)
		p := &propRepo{fixture: f}
		// Files older than the index: the stat shortcut applies to them.
		old := time.Now().Add(-time.Hour)
		files2, _ := p.walk()
		for _, rel := range files2 {
			if fi, err := os.Lstat(f.abs(rel)); err == nil && fi.Mode().IsRegular() {
				must(t, os.Chtimes(f.abs(rel), old, old))
			}
		}
		f.git("update-index", "-q", "--refresh")
		p.rebase()
		rt.Repeat(map[string]func(*rapid.T){
			"": func(rt *rapid.T) {
				changed := p.touched
				switch rapid.IntRange(0, 9).Draw(rt, "report") {
				case 0: // an overflow: the watcher reports the whole tree
					changed = []string{"."}
				case 1, 2: // over-reporting never changes the answer
					changed = append(slices.Clone(changed), path.Join(pick(rt, "extraDir", propDirs), pick(rt, "extraName", propNames)), pick(rt, "extraDir2", propDirs))
				}
				got, _, err := f.refresh(changed...)
				if errors.Is(err, ErrInexact) && slices.ContainsFunc(f.base.Untracked, func(u string) bool { return strings.HasSuffix(u, "/") }) {
					// The submodule left the index and is a nested
					// repository now: Eligible refuses it, the view runs git.
					rt.Skip("nested repository")
				}
				if err != nil {
					rt.Fatalf("Refresh(%q): %v", changed, err)
				}
				want := execStatus(t, f.dir)
				if !reflect.DeepEqual(got, want) {
					rt.Fatalf("Refresh(%q):\n got %+v\nwant %+v", changed, got, want)
				}
				total++
				if rapid.Bool().Draw(rt, "goOn") {
					// As the view does: the answer is the next base, the
					// attributes read so far are kept.
					f.base, p.touched = got, nil
				}
			},
			"write": func(rt *rapid.T) {
				rel := path.Join(pick(rt, "dir", propDirs), pick(rt, "name", propNames))
				ok, top := p.plainParent(rel)
				if fi, err := os.Lstat(f.abs(rel)); !ok || (err == nil && !fi.Mode().IsRegular()) {
					rt.Skip("parent is not a directory, or the path is not a file")
				}
				must(t, os.MkdirAll(filepath.Dir(f.abs(rel)), 0o755))
				must(t, os.WriteFile(f.abs(rel), []byte(pick(rt, "content", propContents)), 0o644))
				if top != "" {
					p.touch(top) // a watcher sees the new directory, not what fills it
				} else {
					p.touch(rel)
				}
			},
			"sameSize": func(rt *rapid.T) { // new content, same length, same inode
				files, _ := p.walk()
				if len(files) == 0 {
					rt.Skip("no files")
				}
				rel := pick(rt, "file", files)
				b, err := os.ReadFile(f.abs(rel))
				if fi, lerr := os.Lstat(f.abs(rel)); err != nil || lerr != nil || !fi.Mode().IsRegular() || len(b) == 0 {
					rt.Skip("not a non-empty regular file")
				}
				b[rapid.IntRange(0, len(b)-1).Draw(rt, "at")] ^= 1
				must(t, os.WriteFile(f.abs(rel), b, 0o644))
				p.touch(rel)
			},
			"ignoreRules": func(rt *rapid.T) {
				rel := pick(rt, "ignorefile", []string{".gitignore", "d/.gitignore", "d/e/.gitignore", "n1/.gitignore"})
				if ok, _ := p.plainParent(rel); !ok {
					rt.Skip("blocked")
				}
				if fi, err := os.Lstat(f.abs(rel)); err == nil && !fi.Mode().IsRegular() {
					rt.Skip("not a file")
				}
				_, top := p.plainParent(rel)
				must(t, os.MkdirAll(filepath.Dir(f.abs(rel)), 0o755))
				rules := pick(rt, "rules", []string{"*.log\n!keep.log\nbuild/\n", "*.txt\n", "a*\n!a.b\n", "*\n", "", "e/\n"})
				must(t, os.WriteFile(f.abs(rel), []byte(rules), 0o644))
				if top != "" {
					p.touch(top)
				} else {
					p.touch(rel)
				}
			},
			"backdate": func(rt *rapid.T) { // as cp -p or touch -r do
				files, _ := p.walk()
				if len(files) == 0 {
					rt.Skip("no files")
				}
				rel := pick(rt, "file", files)
				if fi, err := os.Lstat(f.abs(rel)); err != nil || !fi.Mode().IsRegular() {
					rt.Skip("not a regular file")
				}
				old := time.Now().Add(-time.Hour)
				must(t, os.Chtimes(f.abs(rel), old, old))
				p.touch(rel)
			},
			"delete": func(rt *rapid.T) {
				files, _ := p.walk()
				if len(files) == 0 {
					rt.Skip("no files")
				}
				rel := pick(rt, "file", files)
				must(t, os.Remove(f.abs(rel)))
				p.touch(rel)
			},
			"chmod": func(rt *rapid.T) {
				files, _ := p.walk()
				if len(files) == 0 {
					rt.Skip("no files")
				}
				rel := pick(rt, "file", files)
				fi, err := os.Lstat(f.abs(rel))
				must(t, err)
				if !fi.Mode().IsRegular() {
					rt.Skip("not a regular file")
				}
				must(t, os.Chmod(f.abs(rel), fi.Mode().Perm()^0o111))
				p.touch(rel)
			},
			"symlink": func(rt *rapid.T) {
				files, _ := p.walk()
				if len(files) == 0 {
					rt.Skip("no files")
				}
				rel := pick(rt, "file", files)
				must(t, os.Remove(f.abs(rel)))
				must(t, os.Symlink(pick(rt, "target", []string{"a", "d", "../nowhere", "x y"}), f.abs(rel)))
				p.touch(rel)
			},
			"fileToDir": func(rt *rapid.T) {
				files, _ := p.walk()
				if len(files) == 0 {
					rt.Skip("no files")
				}
				rel := pick(rt, "file", files)
				must(t, os.Remove(f.abs(rel)))
				must(t, os.MkdirAll(f.abs(rel+"/inner"), 0o755))
				must(t, os.WriteFile(f.abs(rel+"/inner/z"), []byte("z"), 0o644))
				p.touch(rel)
			},
			"rmdir": func(rt *rapid.T) {
				_, dirs := p.walk()
				if len(dirs) == 0 {
					rt.Skip("no directories")
				}
				rel := pick(rt, "dir", dirs)
				must(t, os.RemoveAll(f.abs(rel)))
				p.touch(rel)
			},
			"mkdir": func(rt *rapid.T) {
				rel := pick(rt, "dir", propDirs[1:])
				if ok, _ := p.plainParent(rel + "/x"); !ok {
					rt.Skip("a parent is not a directory")
				}
				if err := os.MkdirAll(f.abs(rel), 0o755); err != nil {
					rt.Skip("exists as a file")
				}
				p.touch(rel)
			},
			"rename": func(rt *rapid.T) {
				files, dirs := p.walk()
				all := append(files, dirs...)
				if len(all) == 0 {
					rt.Skip("nothing to rename")
				}
				src := pick(rt, "src", all)
				dst := path.Join(pick(rt, "dstdir", propDirs), pick(rt, "dstname", append(propNames, "renamed")))
				if dst == src || strings.HasPrefix(dst, src+"/") {
					rt.Skip("into itself")
				}
				if ok, top := p.plainParent(dst); !ok || top != "" {
					rt.Skip("destination parent missing or not a directory")
				}
				if _, err := os.Lstat(f.abs(dst)); err == nil {
					rt.Skip("destination exists")
				}
				must(t, os.Rename(f.abs(src), f.abs(dst)))
				p.touch(src, dst)
			},
			"ignored": func(rt *rapid.T) {
				rel := pick(rt, "ignored", []string{"x.log", "d/y.log", "build/out.o", "d/build/deep/o", "keep.log"})
				ok, top := p.plainParent(rel)
				if fi, err := os.Lstat(f.abs(rel)); !ok || (err == nil && !fi.Mode().IsRegular()) {
					rt.Skip("blocked")
				}
				must(t, os.MkdirAll(filepath.Dir(f.abs(rel)), 0o755))
				must(t, os.WriteFile(f.abs(rel), []byte("ignored"), 0o644))
				if top != "" {
					p.touch(top)
				} else {
					p.touch(rel)
				}
			},
			"nested": func(rt *rapid.T) {
				top := pick(rt, "top", []string{"u", "d/u", "v"})
				if _, err := os.Lstat(f.abs(top)); err == nil {
					rt.Skip("exists")
				}
				if ok, _ := p.plainParent(top + "/x"); !ok {
					rt.Skip("blocked")
				}
				for _, rel := range []string{"1", "s/2", "s/t/3", "s/t/c.log"} {
					must(t, os.MkdirAll(filepath.Dir(f.abs(top+"/"+rel)), 0o755))
					must(t, os.WriteFile(f.abs(top+"/"+rel), []byte(rel), 0o644))
				}
				p.touch(top)
			},
			"attributes": func(rt *rapid.T) {
				rel := pick(rt, "attrfile", []string{".gitattributes", "d/.gitattributes", "d/e/.gitattributes", "n1/.gitattributes"})
				if ok, _ := p.plainParent(rel); !ok {
					rt.Skip("blocked")
				}
				if fi, err := os.Lstat(f.abs(rel)); err == nil && !fi.Mode().IsRegular() {
					rt.Skip("not a file")
				}
				_, top := p.plainParent(rel)
				var lines []string
				for i, n := 0, rapid.IntRange(0, 3).Draw(rt, "nlines"); i < n; i++ {
					lines = append(lines, pick(rt, "line", propAttrLines))
				}
				must(t, os.MkdirAll(filepath.Dir(f.abs(rel)), 0o755))
				must(t, os.WriteFile(f.abs(rel), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
				if top != "" {
					p.touch(top)
				} else {
					p.touch(rel)
				}
			},
			"config": func(rt *rapid.T) { // a config change: the watcher says meta, the view takes a new base
				kv := pick(rt, "config", [][2]string{{"core.autocrlf", "true"}, {"core.autocrlf", "input"}, {"core.autocrlf", "false"},
					{"core.filemode", "false"}, {"core.filemode", "true"}, {"core.ignorecase", "true"}, {"core.ignorecase", "false"},
					{"filter.x.clean", "cat"}})
				f.git("config", kv[0], kv[1])
				p.rebase()
			},
			"submodule": func(rt *rapid.T) {
				if kind != "submodule" {
					rt.Skip("no submodule")
				}
				if fi, err := os.Stat(f.abs("sm/.git")); err != nil || fi.IsDir() {
					rt.Skip("the submodule is gone")
				}
				switch pick(rt, "subop", []string{"write", "untracked", "commit", "ignore"}) {
				case "ignore": // how git reports the submodule changes
					rule := pick(rt, "subignore", []string{"", "\tignore = dirty\n", "\tignore = untracked\n", "\tignore = all\n"})
					body := "[submodule \"sm\"]\n\tpath = sm\n\turl = ./sm\n" + rule
					must(t, os.WriteFile(f.abs(".gitmodules"), []byte(body), 0o644))
					p.touch(".gitmodules")
				case "write":
					must(t, os.WriteFile(f.abs("sm/s.txt"), []byte(pick(rt, "subcontent", propContents)), 0o644))
					p.touch("sm/s.txt")
				case "untracked":
					must(t, os.WriteFile(f.abs("sm/new.txt"), []byte("n"), 0o644))
					p.touch("sm/new.txt")
				case "commit":
					testutil.Git(t, f.abs("sm"), "add", "-A")
					testutil.Git(t, f.abs("sm"), "commit", "-q", "--allow-empty", "-m", "sub step")
					p.touch("sm") // the watcher maps the submodule's git dir to its path
				}
			},
			"commit": func(rt *rapid.T) {
				if !p.gitTry("add", "-A") {
					rt.Skip("not addable")
				}
				f.git("commit", "-q", "--allow-empty", "-m", "step")
				p.rebase()
			},
			"stage": func(rt *rapid.T) {
				files, _ := p.walk()
				if len(files) == 0 {
					rt.Skip("no files")
				}
				if !p.gitTry("add", "--", pick(rt, "file", files)) {
					rt.Skip("not addable")
				}
			},
			"unstage": func(rt *rapid.T) {
				es := p.entries()
				if len(es) == 0 {
					rt.Skip("empty index")
				}
				if !p.gitTry("rm", "-q", "--cached", "--", pick(rt, "entry", es)) {
					rt.Skip("not removable")
				}
			},
			"gitmv": func(rt *rapid.T) {
				es := p.entries()
				if len(es) == 0 {
					rt.Skip("empty index")
				}
				src := pick(rt, "entry", es)
				if !p.gitTry("mv", "--", src, pick(rt, "name", propNames)+".mv") {
					rt.Skip("not movable")
				}
			},
		})
	})
}
