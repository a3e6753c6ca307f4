package search

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchRoot builds a ~200-file git work tree of Go-like sources.
func benchRoot(b *testing.B) string {
	b.Helper()
	requireGit(b)
	root := b.TempDir()
	git(b, root, "init", "-q", ".")
	var body strings.Builder
	for i := range 300 {
		fmt.Fprintf(&body, "func handler%d(ctx context.Context, req *Request) (Response, error) { return call(ctx, req) }\n", i)
	}
	for i := range 200 {
		content := body.String()
		if i%20 == 0 {
			content += "// TODO(harness): rareNeedle appears here\n"
		}
		writeFile(b, root, fmt.Sprintf("pkg%02d/sub/file%03d.go", i%17, i), content)
	}
	git(b, root, "add", ".")
	return root
}

func benchSearch(b *testing.B, engine func(*Searcher, context.Context, string, Request) (Result, error), s *Searcher) {
	root := benchRoot(b)
	for _, req := range []Request{
		{Query: "rareNeedle"},
		{Query: `handler\d+7\(`, Regex: true, MaxResults: 500},
		{Query: "RARENEEDLE", CaseInsensitive: true},
	} {
		b.Run(req.Query, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := engine(s, context.Background(), root, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSearchGo(b *testing.B) {
	benchSearch(b, (*Searcher).SearchGo, testSearcher(""))
}

func BenchmarkSearchRG(b *testing.B) {
	benchSearch(b, (*Searcher).SearchRG, testSearcher(rgPath(b)))
}
