package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// genTree builds a git work tree of n Go-like files (about 2 KB on average:
// mostly small, some medium, a few large) in directories 1 to 4 deep, with
// "rareNeedle" in one file in a hundred, all added to the index.
func genTree(b *testing.B, n int) string {
	b.Helper()
	requireGit(b)
	root := b.TempDir()
	git(b, root, "init", "-q", ".")
	rnd := rand.New(rand.NewPCG(1, 2))
	var total int
	for i := range n {
		var size int
		switch r := rnd.IntN(100); {
		case r < 60:
			size = 200 + rnd.IntN(1000)
		case r < 95:
			size = 1500 + rnd.IntN(4000)
		default:
			size = 8000 + rnd.IntN(12000)
		}
		var body strings.Builder
		fmt.Fprintf(&body, "package p%d\n\n", i%97)
		for j := 0; body.Len() < size; j++ {
			fmt.Fprintf(&body, "func handler%d(ctx context.Context, req *Request) (Response, error) { return call(ctx, req) }\n", j*7+i)
		}
		if i%100 == 0 {
			body.WriteString("// TODO(harness): rareNeedle appears here\n")
		}
		total += body.Len()
		depth := 1 + i%4
		dir := make([]string, depth)
		for d := range depth {
			dir[d] = fmt.Sprintf("d%d_%d", d, (i/(7+d*5))%(11+d*3))
		}
		writeFile(b, root, fmt.Sprintf("%s/file%05d.go", strings.Join(dir, "/"), i), body.String())
	}
	git(b, root, "add", ".")
	b.Logf("generated %d files, %d bytes (%.0f average)", n, total, float64(total)/float64(n))
	return root
}

var benchRequests = []Request{
	{Query: "rareNeedle"},
	{Query: `handler\d+7\(`, Regex: true, MaxResults: 500},
	{Query: "RARENEEDLE", CaseInsensitive: true},
	{Query: `rare[A-Z]eedle`, Regex: true},
	{Query: `\w+Needle\b`, Regex: true}, // no literal prefix: Go's regexp runs over every byte
}

// BenchmarkSearchListed compares SearchListed over a warm cache with SearchRG
// and SearchGo on the same generated 10,000-file tree.
func BenchmarkSearchListed(b *testing.B) {
	root := genTree(b, 10000)
	s := testSearcher("")
	s.Exclude = isSecret
	s.Limits.MaxFileSize = DefaultMaxFileSize
	out, err := gitOutput(context.Background(), root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		b.Fatal(err)
	}
	files := splitList(out)
	if !slices.IsSortedFunc(files, pathCompare) {
		b.Fatal("list not sorted")
	}
	cache := NewCache(0)
	engines := []struct {
		name string
		run  func(context.Context, Request) (Result, error)
	}{
		{"index", func(ctx context.Context, req Request) (Result, error) {
			return s.SearchListed(ctx, root, files, req, cache)
		}},
		{"index-nocache", func(ctx context.Context, req Request) (Result, error) {
			return s.SearchListed(ctx, root, files, req, nil)
		}},
		{"go", func(ctx context.Context, req Request) (Result, error) { return s.SearchGo(ctx, root, req) }},
	}
	if rg, err := rgLook(); err == nil {
		srg := *s
		srg.RG = rg
		engines = append(engines, struct {
			name string
			run  func(context.Context, Request) (Result, error)
		}{"rg", func(ctx context.Context, req Request) (Result, error) { return srg.SearchRG(ctx, root, req) }})
	}
	for _, req := range benchRequests {
		for _, e := range engines {
			b.Run(e.name+"/"+req.Query, func(b *testing.B) {
				if _, err := e.run(context.Background(), req); err != nil { // warm
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.run(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	st := cache.Stats()
	b.Logf("cache: %d entries, %d bytes, over bound %d", st.Entries, st.Bytes, st.OverBound)
}
