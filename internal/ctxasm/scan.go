package ctxasm

import (
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/harnessd/harnessd/internal/pathsafe"
)

// Roles of the candidate files.
const (
	RoleState = "state"
	RoleDoc   = "doc"
	RoleRule  = "rule"
)

// File is one candidate file of a checkout as Scan read it. Files are
// shared by the cache: do not modify them.
type File struct {
	Rel       string
	Role      string
	Content   string
	Sha       string
	ModTime   time.Time
	Truncated bool
	// Changed reports that the file changed while it was read: its
	// content may be torn, so it is pruned as stale.
	Changed bool
	// Title is the first markdown heading (without #), or "".
	Title string
	// Front and Body are a .mdc rule's front matter and text.
	Front *FrontMatter
	Body  string
	// Sections are AGENTS.md's "## " sections (the preamble first, with
	// an empty heading).
	Sections []Section
}

// Section is one "## " section of a markdown file.
type Section struct {
	Heading string
	Text    string
}

// Checkout is what Scan found in a checkout.
type Checkout struct {
	Root  string
	Files []*File
	// Tracked are the tracked paths (shared: do not modify), from the git
	// index, or from a bounded walk (TrackedFrom "walk") without one.
	Tracked     []string
	TrackedFrom string
	Languages   []string

	tracked map[string]bool
	root    *pathsafe.Root
}

// IsTracked reports whether rel is a tracked path.
func (co *Checkout) IsTracked(rel string) bool { return co.tracked[rel] }

// ModTime returns the modification time of a tracked file (zero when it
// is missing or a secret path).
func (co *Checkout) ModTime(rel string) time.Time {
	if co.root == nil || co.root.Excluded(rel) {
		return time.Time{}
	}
	abs, _, err := co.root.ResolveRead(rel)
	if err != nil {
		return time.Time{}
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// Limits of discovery.
const (
	maxDirFiles  = 50  // of .planning, .codebase, .cursor/rules
	maxDocsIndex = 100 // docs/*.md titles
)

// candidates are the fixed files Scan looks at, in emit order.
var candidates = []struct{ rel, role string }{
	{"STATE.md", RoleState},
	{"PLAN.md", RoleState},
	{"AGENTS.md", RoleRule},
	{".github/copilot-instructions.md", RoleRule},
	{"CONTRIBUTING.md", RoleRule},
	{"CLAUDE.md", RoleDoc},
	{"README.md", RoleDoc},
}

// candidateDirs are the directories whose files Scan looks at.
var candidateDirs = []struct{ dir, suffix, role string }{
	{".planning", ".md", RoleState},
	{".cursor/rules", ".mdc", RoleRule},
	{".codebase", ".md", RoleDoc},
	{"docs", ".md", RoleDoc},
}

// Scan finds the candidate files of the checkout at root (see the package
// doc), through cache. Secret paths, paths outside the root and special
// files are never read. now decides which files are too fresh to cache.
func Scan(root *pathsafe.Root, cache *Cache, now time.Time) *Checkout {
	co := &Checkout{Root: root.Path(), root: root}
	for _, c := range candidates {
		if f := cache.file(root, c.rel, c.role, now); f != nil {
			co.Files = append(co.Files, f)
		}
	}
	for _, d := range candidateDirs {
		limit := maxDirFiles
		if d.dir == "docs" {
			limit = maxDocsIndex
		}
		for _, name := range cache.list(root, d.dir, d.suffix, limit, now) {
			if f := cache.file(root, d.dir+"/"+name, d.role, now); f != nil {
				co.Files = append(co.Files, f)
			}
		}
	}
	co.Tracked, co.tracked, co.Languages, co.TrackedFrom = cache.tracked(root.Path(), now)
	return co
}

// file returns the parsed file at rel, from the cache when its stamp is
// unchanged; nil when it is missing, not a regular file or not readable
// here (secret, outside the root, .git).
func (c *Cache) file(root *pathsafe.Root, rel, role string, now time.Time) *File {
	abs, rel, leaf, err := root.ResolveReadLeaf(rel)
	if err != nil || leaf.Mode != 0 || root.Excluded(rel) {
		return nil
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	st := stampOf(fi)
	key := "f:" + role + ":" + abs
	if e := c.get(key, st); e != nil {
		return e.file
	}
	b, truncated, changed, st, err := c.readFile(abs, leaf.Ino, func(fi fs.FileInfo) error { return root.CheckLeaf(rel, fi) })
	if err != nil {
		return nil
	}
	f := parseFile(rel, role, string(b))
	f.ModTime, f.Truncated, f.Changed = time.Unix(0, st.mtime), truncated, changed
	if !changed {
		c.put(key, &entry{st: st, file: f}, now)
	}
	return f
}

// parseFile builds the parsed form of a candidate.
func parseFile(rel, role, content string) *File {
	f := &File{Rel: rel, Role: role, Content: content, Sha: sha(content), Title: firstHeading(content)}
	switch {
	case strings.HasSuffix(rel, ".mdc"):
		fm, body := ParseMDC(content)
		f.Front, f.Body = &fm, body
	case path.Base(rel) == "AGENTS.md":
		f.Sections = Sections(content)
	}
	return f
}

// list returns the sorted names of the files ending in suffix in dir (a
// directory of the checkout), at most limit.
func (c *Cache) list(root *pathsafe.Root, dir, suffix string, limit int, now time.Time) []string {
	abs, _, leaf, err := root.ResolveReadLeaf(dir)
	if err != nil || leaf.Mode != os.ModeDir {
		return nil
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return nil
	}
	st := stampOf(fi)
	key := "d:" + suffix + ":" + abs
	if e := c.get(key, st); e != nil {
		return e.names
	}
	des, err := os.ReadDir(abs)
	if err != nil {
		return nil
	}
	var names []string
	for _, de := range des {
		if de.Type().IsRegular() && strings.HasSuffix(strings.ToLower(de.Name()), suffix) {
			names = append(names, de.Name())
		}
	}
	sort.Strings(names)
	if len(names) > limit {
		names = names[:limit]
	}
	c.put(key, &entry{st: st, names: names}, now)
	return names
}

// tracked returns the tracked paths of the checkout at root, from its git
// index (or a bounded walk), cached by the index's stamp.
func (c *Cache) tracked(root string, now time.Time) ([]string, map[string]bool, []string, string) {
	if ip := indexPath(root); ip != "" {
		if fi, err := os.Stat(ip); err == nil && fi.Mode().IsRegular() {
			st := stampOf(fi)
			key := "i:" + ip
			if e := c.get(key, st); e != nil {
				return e.paths, e.set, e.langs, "index"
			}
			if b, err := os.ReadFile(ip); err == nil {
				c.countRead()
				if paths, err := ParseIndex(b); err == nil {
					e := &entry{st: st, paths: paths, set: setOf(paths), langs: Languages(paths)}
					c.put(key, e, now)
					return e.paths, e.set, e.langs, "index"
				}
			}
		}
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, nil, nil, "walk"
	}
	st := stampOf(fi)
	key := "w:" + root
	if e := c.get(key, st); e != nil {
		return e.paths, e.set, e.langs, "walk"
	}
	paths := walkPaths(root)
	e := &entry{st: st, paths: paths, set: setOf(paths), langs: Languages(paths)}
	c.put(key, e, now)
	return e.paths, e.set, e.langs, "walk"
}

func setOf(paths []string) map[string]bool {
	m := make(map[string]bool, len(paths))
	for _, p := range paths {
		m[p] = true
	}
	return m
}

// firstHeading returns the text of the first markdown heading of s
// (outside code fences), or "".
func firstHeading(s string) string {
	fence := false
	for n := 0; s != "" && n < 200; n++ {
		line, rest, _ := cutLine(s)
		s = rest
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			continue
		}
		if !fence && strings.HasPrefix(t, "#") {
			if h := strings.TrimSpace(strings.TrimLeft(t, "#")); h != "" {
				return h
			}
		}
	}
	return ""
}

// Sections splits markdown into its "## " sections; the text before the
// first one is a section with an empty heading (left out when blank).
// Headings inside code fences do not split.
func Sections(s string) []Section {
	var out []Section
	cur := Section{}
	var b strings.Builder
	fence := false
	flush := func() {
		cur.Text = strings.TrimRight(b.String(), "\n")
		if cur.Heading != "" || strings.TrimSpace(cur.Text) != "" {
			out = append(out, cur)
		}
		b.Reset()
	}
	for s != "" {
		line, rest, _ := cutLine(s)
		s = rest
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(line, "## ") {
			flush()
			cur = Section{Heading: strings.TrimSpace(line[3:])}
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	flush()
	return out
}
