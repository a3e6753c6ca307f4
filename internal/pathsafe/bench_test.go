package pathsafe

import (
	"path"
	"slices"
	"strings"
	"testing"
	"time"
)

func BenchmarkResolveRead(b *testing.B) {
	fx := newFixture(b)
	for _, p := range []string{"a.txt", "sub/b.go", "sub/deep/c.txt"} {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := fx.root.ResolveRead(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDenylistMatch(b *testing.B) {
	d, err := NewDenylist(DefaultSecretPatterns())
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"main.go", "internal/server/handler.go", "a/b/c/d/e/f/g.txt", "config/.env.local", "Src/Upper/Case.GO"} {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d.Match(p)
			}
		})
	}
}

func BenchmarkCheckArgv(b *testing.B) {
	fx := newFixture(b)
	argv := []string{"grep", "-rn", "--color=never", "foo|bar", "sub", "./a.txt"}
	b.ReportAllocs()
	for b.Loop() {
		if err := fx.root.CheckArgv(argv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMatch compares, in one run, Match as it was before lists were
// bound to roots (legacyMatch, a frozen copy) with Match now: unbound, bound
// to an ordinary root (no crossing pattern: the common case must cost the
// same), bound with an exception, and bound to a root inside .aws (the
// crossing patterns tried).
func BenchmarkMatch(b *testing.B) {
	d, err := NewDenylist(DefaultSecretPatterns())
	if err != nil {
		b.Fatal(err)
	}
	plain, _ := d.ForRoot("/home/u/src/app", nil)
	except, _ := d.ForRoot("/home/u/src/app", []string{"test/*.pem"})
	cross, _ := d.ForRoot("/home/u/.aws", nil)
	lists := []struct {
		name  string
		match func(string) (string, bool)
	}{
		{"before", func(rel string) (string, bool) { return legacyMatch(d, rel) }},
		{"unbound", d.Match},
		{"bound", plain.Match},
		{"exception", except.Match},
		{"crossing", cross.Match},
	}
	for _, p := range []string{"main.go", "internal/server/handler.go", "a/b/c/d/e/f/g.txt", "config/.env.local", "Src/Upper/Case.GO"} {
		for _, l := range lists {
			b.Run(p+"/"+l.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					l.match(p)
				}
			})
		}
	}
}

// legacyMatch is Denylist.Match as it was before ForRoot (commit 48a958f),
// kept as the baseline of BenchmarkMatch.
func legacyMatch(d *Denylist, rel string) (pattern string, ok bool) {
	if len(d.ms) == 0 || rel == "" {
		return "", false
	}
	if needsClean(rel) {
		rel = strings.TrimPrefix(path.Clean(rel), "/")
	}
	rel = toLowerASCIIFast(rel)
	base := rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		base = rel[i+1:]
	}
	multi := d.anyMulti && len(base) != len(rel)
	for i := range d.ms {
		m := &d.ms[i]
		if m.anchored {
			if m.match(rel) {
				return m.orig, true
			}
			continue
		}
		if m.segs == 1 {
			if m.match(base) {
				return m.orig, true
			}
			continue
		}
		if !multi && m.segs > 1 {
			continue
		}
		if m.matchSuffixes(rel) {
			return m.orig, true
		}
	}
	return "", false
}

// BenchmarkMatchPaired measures each Match of BenchmarkMatch against the
// frozen legacyMatch in pairs: every iteration times a block of calls of
// each, in alternating order, and the metric is the median of the
// per-pair ratios (in percent over before), which a loaded machine's drift
// cancels out of.
func BenchmarkMatchPaired(b *testing.B) {
	d, err := NewDenylist(DefaultSecretPatterns())
	if err != nil {
		b.Fatal(err)
	}
	plain, _ := d.ForRoot("/home/u/src/app", nil)
	except, _ := d.ForRoot("/home/u/src/app", []string{"test/*.pem"})
	cross, _ := d.ForRoot("/home/u/.aws", nil)
	lists := []struct {
		name  string
		match func(string) (string, bool)
	}{
		{"unbound", d.Match},
		{"bound", plain.Match},
		{"exception", except.Match},
		{"crossing", cross.Match},
	}
	before := func(rel string) (string, bool) { return legacyMatch(d, rel) }
	const block = 512
	for _, p := range []string{"main.go", "internal/server/handler.go", "a/b/c/d/e/f/g.txt", "config/.env.local", "Src/Upper/Case.GO"} {
		for _, l := range lists {
			b.Run(p+"/"+l.name, func(b *testing.B) {
				var ratios []float64
				timeBlock := func(f func(string) (string, bool)) time.Duration {
					t0 := time.Now()
					for range block {
						f(p)
					}
					return time.Since(t0)
				}
				i := 0
				for b.Loop() {
					var old, cur time.Duration
					if i%2 == 0 {
						old, cur = timeBlock(before), timeBlock(l.match)
					} else {
						cur, old = timeBlock(l.match), timeBlock(before)
					}
					i++
					ratios = append(ratios, float64(cur)/float64(old))
				}
				slices.Sort(ratios)
				b.ReportMetric((ratios[len(ratios)/2]-1)*100, "%vs-before")
			})
		}
	}
}
