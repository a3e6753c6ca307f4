package search

import (
	"os/exec"
	"strings"
	"testing"
)

func rgLook() (string, error) { return exec.LookPath("rg") }

func TestPathCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"a/b", "a.b", -1},
		{"a.b", "a/b", 1},
		{"src/x", "src-tools/y", -1},
		{"a", "a", 0},
		{"a", "ab", -1},
		{"B", "a", -1},
		{"a/b/c", "a/b", 1},
		{"é", "z", 1},
	}
	for _, tt := range tests {
		t.Run(tt.a+"_"+tt.b, func(t *testing.T) {
			if got := pathCompare(tt.a, tt.b); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestGlobFilter(t *testing.T) {
	tests := []struct {
		glob, path string
		want       bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "a/b/main.go", true},
		{"*.go", "main.go.txt", false},
		{"src/**/*.go", "src/a.go", true},
		{"src/**/*.go", "src/a/b/c.go", true},
		{"src/**/*.go", "lib/src/a.go", false},
		{"/docs/*", "docs/a.md", true},
		{"/docs/*", "docs/a/b.md", false},
		{"docs", "x/docs", true},
		{"!vendor", "vendor/a.go", false},
		{"!vendor", "a/vendor/b.go", false},
		{"!vendor", "vendors/a.go", true},
		{"!*.md", "a/b.md", false},
		{"!*.md", "a/b.go", true},
		{"!docs/", "docs/a", false},
		{"!docs/", "docs", true},
		{"docs/", "docs", false},
		{"*.{md,yml}", ".github/x.yml", true},
		{"[ab].txt", "b.txt", true},
	}
	for _, tt := range tests {
		t.Run(tt.glob+"_"+tt.path, func(t *testing.T) {
			g, err := newGlobFilter(tt.glob)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if got := g.match(tt.path); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCutText(t *testing.T) {
	tests := []struct {
		name, in string
		max      int
		want     string
		wantCut  bool
	}{
		{"short", "abc", 5, "abc", false},
		{"exact", "abcde", 5, "abcde", false},
		{"ascii cut", "abcdef", 5, "abcde", true},
		{"runes", "ééééé", 3, "ééé", true},
		{"runes exact", "ééé", 3, "ééé", false},
		{"invalid", "a\xffb", 5, "a\uFFFDb", false},
		{"invalid cut", "\xff\xfe\xfd", 2, "\uFFFD\uFFFD", true},
		{"truncated rune", "ab\xe6\x97", 5, "ab\uFFFD\uFFFD", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := cutText([]byte(tt.in), tt.max)
			if got != tt.want || cut != tt.wantCut {
				t.Errorf("got %q,%v, want %q,%v", got, cut, tt.want, tt.wantCut)
			}
		})
	}
}

func TestMakeMatchStripsNewline(t *testing.T) {
	p := &plan{lim: Limits{MaxMatchChars: 100}}
	tests := []struct{ in, want string }{
		{"a\n", "a"}, {"a\r\n", "a"}, {"a", "a"}, {"a\r", "a"}, {"a\r\r\n", "a\r"}, {"", ""},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.in, "\r", "CR"), func(t *testing.T) {
			if got := p.makeMatch("f", 1, 0, []byte(tt.in)).Text; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEscapeGlob(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a.env", "a.env"},
		{"conf[1].env", `conf\[1\].env`},
		{"x*?{}!#\\", `x\*\?\{\}\!\#\\`},
		{"trail ", `trail\ `},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := escapeGlob(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRustBoundaries(t *testing.T) {
	tests := []struct{ in, want string }{
		{`a\bb`, `a(?-u:\b)b`},
		{`\Bx`, `(?-u:\B)x`},
		{`\\b`, `\\b`},
		{`abc`, `abc`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := rustBoundaries(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
