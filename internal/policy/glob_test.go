package policy

import (
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"pgregory.net/rapid"
)

func TestCompileGlobKinds(t *testing.T) {
	tests := []struct {
		glob string
		want globKind
	}{
		{"go.sum", globLiteral},
		{"**", globAll},
		{"migrations/**", globTree},
		{"db/migrations/**", globTree},
		{"**/*.lock", globBaseSuff},
		{"**/Dockerfile", globBase},
		{"**/Dockerfile*", globBasePref},
		{"**/*.{yml,yaml}", globGeneral},
		{"**/?.go", globBaseSeg},
		{"src/**/*.go", globGeneral},
		{"*.lock", globGeneral},
	}
	for _, tt := range tests {
		t.Run(tt.glob, func(t *testing.T) {
			if got := compileGlob(tt.glob).kind; got != tt.want {
				t.Errorf("compileGlob(%q).kind = %d, want %d", tt.glob, got, tt.want)
			}
		})
	}
}

// TestGlobMatchesDoublestar checks the fast paths against doublestar itself.
func TestGlobMatchesDoublestar(t *testing.T) {
	segs := []string{"a", "b", "ab", ".lock", "x.lock", "Dockerfile", "Dockerfile.dev", "mig", "c.go"}
	pieces := []string{"a", "b", "ab", "*", "**", "*.lock", ".lock", "Dockerfile*", "Dockerfile", "mig", "?", "*.go", "{a,b}", "[ab]"}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "nseg")
		ps := make([]string, n)
		for i := range ps {
			ps[i] = rapid.SampledFrom(pieces).Draw(t, "piece")
		}
		g := strings.Join(ps, "/")
		if globProblem(g) != "" {
			return
		}
		m := rapid.IntRange(1, 4).Draw(t, "npath")
		qs := make([]string, m)
		for i := range qs {
			qs[i] = rapid.SampledFrom(segs).Draw(t, "seg")
		}
		p := strings.Join(qs, "/")
		want, err := doublestar.Match(g, p)
		if err != nil {
			t.Fatalf("doublestar.Match(%q, %q): %v", g, p, err)
		}
		c := compileGlob(g)
		if got := c.match(p); got != want {
			t.Fatalf("glob %q (kind %d) on %q = %v, want %v", g, c.kind, p, got, want)
		}
	})
}
