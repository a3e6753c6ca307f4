package search

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// tempLeftovers are temp files of internal/patch that a crash left in a
// work tree: complete copies of real files.
var tempLeftovers = map[string]string{
	".main.go.harnessd-tmp-123456":            "needle in a temp copy\n",
	"src/.x.go.harnessd-tmp-0123456789abcdef": "needle in a hex-suffixed temp\n",
	"deep/a/.b.txt.harnessd-tmp-42":           "needle deep\n",
}

func TestSearchNeverReportsTempFiles(t *testing.T) {
	requireGit(t)
	layouts := []struct {
		name  string
		build func(t *testing.T) string
	}{
		{"untracked in a git work tree", func(t *testing.T) string {
			root := t.TempDir()
			git(t, root, "init", "-q", ".")
			writeFile(t, root, "real.txt", "needle real\n")
			git(t, root, "add", "real.txt")
			git(t, root, "commit", "-q", "-m", "base")
			for rel, c := range tempLeftovers {
				writeFile(t, root, rel, c)
			}
			return root
		}},
		{"tracked by an earlier git add -A", func(t *testing.T) string {
			root := t.TempDir()
			git(t, root, "init", "-q", ".")
			writeFile(t, root, "real.txt", "needle real\n")
			writeFile(t, root, ".gitignore", "deep/\n")
			for rel, c := range tempLeftovers {
				writeFile(t, root, rel, c)
			}
			git(t, root, "add", "-A")
			git(t, root, "add", "-f", "deep")
			git(t, root, "commit", "-q", "-m", "oops")
			return root
		}},
		{"not a git work tree", func(t *testing.T) string {
			root := t.TempDir()
			writeFile(t, root, "real.txt", "needle real\n")
			for rel, c := range tempLeftovers {
				writeFile(t, root, rel, c)
			}
			return root
		}},
	}
	type engine struct {
		name string
		run  func(*Searcher, context.Context, string, Request) (Result, error)
		rg   bool
	}
	engines := []engine{{"go", (*Searcher).SearchGo, false}, {"rg", (*Searcher).SearchRG, true}, {"index", listedEngine(true), false}}
	for _, l := range layouts {
		for _, e := range engines {
			t.Run(l.name+"/"+e.name, func(t *testing.T) {
				s := testSearcher("")
				if e.rg {
					s = testSearcher(rgPath(t))
				}
				root := l.build(t)
				for _, req := range []Request{
					{Query: "needle"},
					{Query: "needle", Glob: ".*.harnessd-tmp-*"},
					{Query: "NEEDLE", CaseInsensitive: true},
					{Query: "ne+dle", Regex: true},
				} {
					res, err := e.run(s, context.Background(), root, req)
					if err != nil {
						t.Fatalf("%+v: %v", req, err)
					}
					for _, m := range res.Matches {
						if strings.Contains(m.Path, ".harnessd-tmp-") {
							t.Errorf("%+v: reported temp file %s", req, m.Path)
						}
					}
					if res.Excluded != 0 {
						t.Errorf("%+v: excluded = %d, want 0 (temp files are not secrets)", req, res.Excluded)
					}
					if req.Glob == "" && !slices.Equal(paths(res.Matches), []string{"real.txt"}) {
						t.Errorf("%+v: paths = %v, want [real.txt]", req, paths(res.Matches))
					}
				}
			})
		}
	}
}

func TestIsTemp(t *testing.T) {
	tests := []struct {
		rel  string
		want bool
	}{
		{".a.go.harnessd-tmp-1", true},
		{"x/y/.a.go.harnessd-tmp-ff", true},
		{"x/.a.go.harnessd-tmp-1/real.go", false},
		{"a.go.harnessd-tmp-1", false},
		{"x/.a.go.harnessd-tmp-notes", false},
		{"a.go", false},
	}
	for _, tt := range tests {
		if got := isTemp(tt.rel); got != tt.want {
			t.Errorf("isTemp(%q) = %v, want %v", tt.rel, got, tt.want)
		}
	}
}
