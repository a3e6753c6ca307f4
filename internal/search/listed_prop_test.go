package search

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// propPaths are the paths the property test plays with: nested and
// colliding names ("a" and "a/..."), ignored ones, a secret, a hidden file.
var propPaths = []string{"a.txt", "a", "a/b.txt", "a/b/c.go", "a.b", "ign/x.txt", "x.log", "d/e/f.txt", "d/.hidden", "s.env", "sp ace.txt"}

// propDirs are the directories among propPaths' parents.
var propDirs = []string{"a", "a/b", "d", "d/e", "ign"}

const propMaxFileSize = 200

var propContents = []string{
	"needle\n", "NEEDLE x\n", "no match\n", "needle\x00bin\n", strings.Repeat("needle line\n", 20),
	"a\r\nneedle\r\n", "", "needle without eol", "caf\xe9 needle\n", "x needles\nneedle\n",
}

var propRequests = []Request{
	{Query: "needle", MaxResults: 500},
	{Query: "needle", MaxResults: 2},
	{Query: "NEEDLE", CaseInsensitive: true, MaxResults: 500},
	{Query: `ne+dle$`, Regex: true, MaxResults: 500},
	{Query: "needle", Glob: "*.txt", MaxResults: 500},
	{Query: "needle", Glob: "!a", MaxResults: 500},
}

// TestListedMatchesGoAndRGProperty: after every step of a random sequence of
// writes, deletes, renames, symlink swaps, directory removals, git adds and
// cache resets, each followed by an Invalidate of what changed, SearchListed
// over git's list gives SearchGo's result (and rg's, when installed).
func TestListedMatchesGoAndRGProperty(t *testing.T) {
	requireGit(t)
	rg, _ := rgLook()
	rapid.Check(t, func(rt *rapid.T) {
		root, err := os.MkdirTemp("", "listed-prop-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(root)
		gitMode := rapid.Bool().Draw(rt, "git")
		if gitMode {
			git(rt, root, "init", "-q", ".")
		}
		writeFile(rt, root, ".gitignore", "ign/\n*.log\n")
		s := &Searcher{RG: rg, Exclude: func(rel string) bool { return strings.HasSuffix(rel, ".env") },
			Limits: Limits{MaxFileSize: propMaxFileSize}}
		cache := NewCache(rapid.SampledFrom([]int64{0, 400, 2000}).Draw(rt, "bound"))
		abs := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

		steps := rapid.IntRange(1, 8).Draw(rt, "steps")
		for range steps {
			var changed []string
			switch op := rapid.SampledFrom([]string{"write", "write", "write", "delete", "rename", "symlink", "rmdir", "add", "reset"}).Draw(rt, "op"); op {
			case "write":
				p := rapid.SampledFrom(propPaths).Draw(rt, "path")
				c := rapid.SampledFrom(propContents).Draw(rt, "content")
				if os.MkdirAll(filepath.Dir(abs(p)), 0o755) == nil && os.WriteFile(abs(p), []byte(c), 0o644) == nil {
					changed = append(changed, p)
					// A write through a symlink changes its target, which
					// is what a watcher reports.
					if real, err := filepath.EvalSymlinks(abs(p)); err == nil {
						if realRoot, err := filepath.EvalSymlinks(root); err == nil {
							if rel, err := filepath.Rel(realRoot, real); err == nil && rel != filepath.FromSlash(p) {
								changed = append(changed, filepath.ToSlash(rel))
							}
						}
					}
				}
			case "delete":
				p := rapid.SampledFrom(propPaths).Draw(rt, "path")
				if os.Remove(abs(p)) == nil {
					changed = append(changed, p)
				}
			case "rename":
				from := rapid.SampledFrom(propPaths).Draw(rt, "from")
				to := rapid.SampledFrom(propPaths).Draw(rt, "to")
				if os.MkdirAll(filepath.Dir(abs(to)), 0o755) == nil && os.Rename(abs(from), abs(to)) == nil {
					changed = append(changed, from, to)
				}
			case "symlink":
				p := rapid.SampledFrom(propPaths).Draw(rt, "path")
				target := rapid.SampledFrom(propPaths).Draw(rt, "target")
				if err := os.Remove(abs(p)); err == nil || errors.Is(err, os.ErrNotExist) {
					if os.MkdirAll(filepath.Dir(abs(p)), 0o755) == nil && os.Symlink(abs(target), abs(p)) == nil {
						changed = append(changed, p)
					}
				}
			case "rmdir":
				d := rapid.SampledFrom(propDirs).Draw(rt, "dir")
				if os.RemoveAll(abs(d)) == nil {
					changed = append(changed, d)
				}
			case "add":
				if gitMode {
					git(rt, root, "add", "-A")
					git(rt, root, "add", "-f", "--ignore-errors", "--", ".") // tracks ignored files too
				}
			case "reset":
				cache.Reset()
			}
			cache.Invalidate(changed...)

			files := gitListed(rt, root)
			req := rapid.SampledFrom(propRequests).Draw(rt, "request")
			g, gerr := s.SearchGo(context.Background(), root, req)
			l, lerr := s.SearchListed(context.Background(), root, files, req, cache)
			if gerr != nil || lerr != nil {
				rt.Fatalf("%+v: got errors go=%v index=%v, want none", req, gerr, lerr)
			}
			if st := cache.Stats(); st.Bytes > st.MaxBytes {
				rt.Fatalf("got %d bytes in a cache bounded at %d", st.Bytes, st.MaxBytes)
			}
			l.Engine = g.Engine
			if !reflect.DeepEqual(g, l) {
				rt.Fatalf("%+v after %v: results differ:\ngo:    %s\nindex: %s", req, changed, describe(g), describe(l))
			}
			if rg == "" {
				continue
			}
			r, rerr := s.SearchRG(context.Background(), root, req)
			if rerr != nil {
				rt.Fatalf("%+v: rg: %v", req, rerr)
			}
			r.Engine = g.Engine
			if !reflect.DeepEqual(r, l) {
				rt.Fatalf("%+v after %v: results differ:\nrg:    %s\nindex: %s", req, changed, describe(r), describe(l))
			}
		}
	})
}
