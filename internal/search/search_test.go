package search

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// needlePaths are the fixture files a plain "needle" search must report, in order.
var needlePaths = []string{
	".github/x.yml", "bom.txt", "crlf.txt", "docs/guide.md", "docs.md", "exact.txt",
	"keep.log", "latin1.txt", "long.txt", "noeol.txt", "src/main.go", "src/util/deep/deeper/x.go",
	"src/util/helper.go", "src-tools/y.go", "unicode.txt", "untracked.txt", "words.txt",
}

func paths(ms []Match) []string {
	var out []string
	for _, m := range ms {
		if len(out) == 0 || out[len(out)-1] != m.Path {
			out = append(out, m.Path)
		}
	}
	return out
}

func find(ms []Match, path string, line int) (Match, bool) {
	for _, m := range ms {
		if m.Path == path && m.Line == line {
			return m, true
		}
	}
	return Match{}, false
}

func TestSearchGoFixture(t *testing.T) {
	root := makeFixture(t)
	s := testSearcher("")
	tests := []struct {
		name         string
		req          Request
		wantPaths    []string
		wantExcluded int
		wantMatches  []Match // each must be present exactly
		wantAbsent   []string
		wantTrunc    bool
		wantCount    int // 0 = not checked
	}{
		{
			name:         "literal selects git's files",
			req:          Request{Query: "needle", MaxResults: 500},
			wantPaths:    needlePaths,
			wantExcluded: 3,
			wantMatches: []Match{
				{Path: "src/main.go", Line: 3, Column: 4, Text: "// needle in main"},
				{Path: "crlf.txt", Line: 1, Column: 7, Text: "first needle"},
				{Path: "crlf.txt", Line: 3, Column: 7, Text: "third needle"},
				{Path: "unicode.txt", Line: 1, Column: 8, Text: "héllo needle 日本語"},
				{Path: "latin1.txt", Line: 1, Column: 6, Text: "caf\uFFFD needle"},
				{Path: "bom.txt", Line: 1, Column: 4, Text: "\uFEFFneedle after bom"},
				{Path: "noeol.txt", Line: 2, Column: 1, Text: "needle without newline"},
				{Path: "long.txt", Line: 1, Column: 1202, Text: strings.Repeat("é", 500), Cut: true},
			},
			wantAbsent: []string{"ignored.txt", "build/out.txt", "app.log", "localonly.txt", "bin.dat", "late.bin", "big.txt", ".env", "conf[1].env", "secrets/key.txt", "link.go", "upper.txt"},
		},
		{
			name:         "case-insensitive literal",
			req:          Request{Query: "NEEDLE", CaseInsensitive: true, MaxResults: 500},
			wantPaths:    append(slices.Clone(needlePaths[:15]), "untracked.txt", "upper.txt", "words.txt"),
			wantExcluded: 3,
			wantMatches:  []Match{{Path: "unicode.txt", Line: 2, Column: 8, Text: "ÄRGER NEEDLE ÜBER"}},
		},
		{
			name:        "regex with word boundary",
			req:         Request{Query: `\bneedle\b`, Regex: true, Glob: "words.txt"},
			wantPaths:   []string{"words.txt"},
			wantMatches: []Match{{Path: "words.txt", Line: 2, Column: 1, Text: "needle"}},
			wantCount:   1,
		},
		{
			name:      "regex anchors are per line",
			req:       Request{Query: `^the needle`, Regex: true},
			wantPaths: []string{"docs/guide.md"},
			wantCount: 1, wantExcluded: 3,
		},
		{
			name:         "regex end anchor sees the CR",
			req:          Request{Query: `needle$`, Regex: true, Glob: "*.txt"},
			wantPaths:    []string{"exact.txt", "latin1.txt", "long.txt", "untracked.txt", "words.txt"},
			wantExcluded: 1,
			wantMatches:  []Match{{Path: "words.txt", Line: 2, Column: 1, Text: "needle"}},
			wantAbsent:   []string{"crlf.txt"},
		},
		{
			name:         "base-name glob at any depth",
			req:          Request{Query: "needle", Glob: "*.go"},
			wantPaths:    []string{"src/main.go", "src/util/deep/deeper/x.go", "src/util/helper.go", "src-tools/y.go"},
			wantExcluded: 0,
		},
		{
			name:      "path glob",
			req:       Request{Query: "needle", Glob: "src/**/*.go"},
			wantPaths: []string{"src/main.go", "src/util/deep/deeper/x.go", "src/util/helper.go"},
		},
		{
			name:      "negated glob drops a directory",
			req:       Request{Query: "needle", Glob: "!src", MaxResults: 500},
			wantPaths: slices.DeleteFunc(slices.Clone(needlePaths), func(p string) bool { return strings.HasPrefix(p, "src/") }),
			// .env, conf[1].env and secrets/key.txt are all outside src.
			wantExcluded: 3,
		},
		{
			name:         "glob selecting only secrets counts them",
			req:          Request{Query: "needle", Glob: "*.env"},
			wantPaths:    nil,
			wantExcluded: 2,
		},
		{
			name:      "truncation",
			req:       Request{Query: "manyword", MaxResults: 10},
			wantPaths: []string{"many.txt"},
			wantTrunc: true, wantCount: 10, wantExcluded: 3,
			wantMatches: []Match{{Path: "many.txt", Line: 10, Column: 1, Text: "manyword line"}},
		},
		{
			name:      "default max results",
			req:       Request{Query: "manyword"},
			wantTrunc: true, wantCount: DefaultMaxResults, wantExcluded: 3,
		},
		{
			name:      "max results clamped",
			req:       Request{Query: "manyword", MaxResults: 100000},
			wantTrunc: true, wantCount: MaxMaxResults, wantExcluded: 3,
		},
		{
			name:      "exact max results is not truncated",
			req:       Request{Query: "needle", Glob: "crlf.txt", MaxResults: 2},
			wantPaths: []string{"crlf.txt"},
			wantCount: 2,
		},
		{
			name:        "empty-width regex matches every line at column 1",
			req:         Request{Query: `x*`, Regex: true, Glob: "crlf.txt"},
			wantCount:   3,
			wantMatches: []Match{{Path: "crlf.txt", Line: 2, Column: 1, Text: "second"}},
		},
		{
			name:         "no match",
			req:          Request{Query: "zzz-not-there"},
			wantExcluded: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.SearchGo(context.Background(), root, tt.req)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if res.Engine != EngineGo {
				t.Errorf("got engine %q, want %q", res.Engine, EngineGo)
			}
			if res.Matches == nil {
				t.Errorf("got nil Matches, want a non-nil slice")
			}
			if tt.wantPaths != nil || tt.wantCount == 0 && !tt.wantTrunc {
				if got := paths(res.Matches); !slices.Equal(got, tt.wantPaths) {
					t.Errorf("got paths %q, want %q", got, tt.wantPaths)
				}
			}
			if res.Excluded != tt.wantExcluded {
				t.Errorf("got Excluded %d, want %d", res.Excluded, tt.wantExcluded)
			}
			if res.Truncated != tt.wantTrunc {
				t.Errorf("got Truncated %v, want %v", res.Truncated, tt.wantTrunc)
			}
			if tt.wantCount > 0 && len(res.Matches) != tt.wantCount {
				t.Errorf("got %d matches, want %d", len(res.Matches), tt.wantCount)
			}
			for _, w := range tt.wantMatches {
				got, ok := find(res.Matches, w.Path, w.Line)
				if !ok {
					t.Errorf("got no match at %s:%d, want %+v", w.Path, w.Line, w)
				} else if got != w {
					t.Errorf("got %+v, want %+v", got, w)
				}
			}
			for _, m := range res.Matches {
				for _, a := range tt.wantAbsent {
					if m.Path == a {
						t.Errorf("got a match in %s, want none", a)
					}
				}
				if strings.Contains(m.Text, "secret") || strings.Contains(m.Text, "private") {
					t.Errorf("got secret text %q in a result", m.Text)
				}
			}
			if !slices.IsSortedFunc(res.Matches, func(a, b Match) int {
				if c := pathCompare(a.Path, b.Path); c != 0 {
					return c
				}
				return a.Line - b.Line
			}) {
				t.Errorf("got unordered matches %v", paths(res.Matches))
			}
		})
	}
}

// parityRequests run on both engines and must give equal Results.
var parityRequests = []Request{
	{Query: "needle", MaxResults: 500},
	{Query: "needle"},
	{Query: "needle", MaxResults: 3},
	{Query: "NEEDLE", CaseInsensitive: true, MaxResults: 500},
	{Query: "ärger", CaseInsensitive: true},
	{Query: `\bneedle\b`, Regex: true, MaxResults: 500},
	{Query: `(?i)^(the|first)\s+needle`, Regex: true},
	{Query: `needle$`, Regex: true, MaxResults: 500},
	{Query: `\d+|\w+_needle`, Regex: true, MaxResults: 500},
	{Query: `x*`, Regex: true, MaxResults: 500},
	{Query: `日本.`, Regex: true},
	{Query: `[[:upper:]]{6}`, Regex: true, MaxResults: 500},
	{Query: `(?P<w>need)le`, Regex: true, MaxResults: 500},
	{Query: "needle", Glob: "*.go"},
	{Query: "needle", Glob: "src/**/*.go"},
	{Query: "needle", Glob: "!src", MaxResults: 500},
	{Query: "needle", Glob: "*.env"},
	{Query: "needle", Glob: "*.{md,yml}"},
	{Query: "needle", Glob: "/docs/*"},
	{Query: "manyword", MaxResults: 10},
	{Query: "manyword"},
	{Query: "manyword", MaxResults: 100000},
	{Query: "é", MaxResults: 500},
	{Query: "needle after", MaxResults: 500},
	{Query: "zzz-not-there"},
	{Query: ".", CaseInsensitive: true, MaxResults: 500},
	{Query: "-needle"},
}

func TestParity(t *testing.T) {
	rg := rgPath(t)
	root := makeFixture(t)
	plain := t.TempDir() // not a git work tree: every file counts
	for rel, c := range fixtureFiles() {
		writeFile(t, plain, rel, c)
	}
	for _, dir := range []struct{ name, root string }{{"git", root}, {"plain", plain}} {
		for _, excl := range []bool{true, false} {
			s := testSearcher(rg)
			if !excl {
				s.Exclude = nil
			}
			index := listedEngine(true)
			for i, req := range parityRequests {
				t.Run(fmt.Sprintf("%s/exclude=%v/%d/%s", dir.name, excl, i, req.Query), func(t *testing.T) {
					g, gerr := s.SearchGo(context.Background(), dir.root, req)
					r, rerr := s.SearchRG(context.Background(), dir.root, req)
					if gerr != nil || rerr != nil {
						t.Fatalf("got errors go=%v rg=%v, want none", gerr, rerr)
					}
					if g.Engine != EngineGo || r.Engine != EngineRG {
						t.Errorf("got engines %q and %q, want go and rg", g.Engine, r.Engine)
					}
					r.Engine = g.Engine
					if !reflect.DeepEqual(g, r) {
						t.Errorf("results differ:\ngo: %s\nrg: %s", describe(g), describe(r))
					}
					l, lerr := index(s, context.Background(), dir.root, req) // a warm cache after the first request
					if lerr != nil || l.Engine != EngineIndex {
						t.Fatalf("got index engine %q, error %v, want index and none", l.Engine, lerr)
					}
					l.Engine = r.Engine
					if !reflect.DeepEqual(l, r) {
						t.Errorf("results differ:\nrg:    %s\nindex: %s", describe(r), describe(l))
					}
				})
			}
		}
	}
}

func describe(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "truncated=%v excluded=%d n=%d", r.Truncated, r.Excluded, len(r.Matches))
	for _, m := range r.Matches {
		fmt.Fprintf(&b, "\n  %s:%d:%d cut=%v %.60q", m.Path, m.Line, m.Column, m.Cut, m.Text)
	}
	return b.String()
}

func TestSearchPicksEngine(t *testing.T) {
	root := makeFixture(t)
	res, err := testSearcher("").Search(context.Background(), root, Request{Query: "needle"})
	if err != nil || res.Engine != EngineGo {
		t.Errorf("got engine %q err %v, want go and no error", res.Engine, err)
	}
	res, err = testSearcher("/nonexistent/rg").Search(context.Background(), root, Request{Query: "needle"})
	if err != nil || res.Engine != EngineGo {
		t.Errorf("got engine %q err %v with a broken rg, want a go fallback", res.Engine, err)
	}
	if rg, lookErr := rgLook(); lookErr == nil {
		res, err = testSearcher(rg).Search(context.Background(), root, Request{Query: "needle"})
		if err != nil || res.Engine != EngineRG {
			t.Errorf("got engine %q err %v, want rg and no error", res.Engine, err)
		}
	}
	if s := New(nil, Limits{}); s.RG == "" {
		if _, lookErr := rgLook(); lookErr == nil {
			t.Errorf("got New().RG empty, want rg from PATH")
		}
	}
}

func TestErrors(t *testing.T) {
	root := makeFixture(t)
	file := root + "/docs.md"
	tests := []struct {
		name string
		root string
		req  Request
		want errs.Code
	}{
		{"empty query", root, Request{}, errs.InvalidArgument},
		{"NUL in query", root, Request{Query: "a\x00b"}, errs.InvalidArgument},
		{"invalid UTF-8 query", root, Request{Query: "a\xffb"}, errs.InvalidArgument},
		{"newline in query", root, Request{Query: "a\nb"}, errs.InvalidArgument},
		{"bad regex", root, Request{Query: "a(b", Regex: true}, errs.InvalidArgument},
		{"bad repetition", root, Request{Query: "a**", Regex: true}, errs.InvalidArgument},
		{"bad glob", root, Request{Query: "a", Glob: "src/[a"}, errs.InvalidArgument},
		{"empty negated glob", root, Request{Query: "a", Glob: "!"}, errs.InvalidArgument},
		{"negative max", root, Request{Query: "a", MaxResults: -1}, errs.InvalidArgument},
		{"empty root", "", Request{Query: "a"}, errs.InvalidArgument},
		{"missing root", root + "/nope", Request{Query: "a"}, errs.NotFound},
		{"root is a file", file, Request{Query: "a"}, errs.InvalidArgument},
	}
	engines := map[string]func(*Searcher, context.Context, string, Request) (Result, error){
		"go":    (*Searcher).SearchGo,
		"index": listedEngine(true),
	}
	if rg, err := rgLook(); err == nil {
		engines["rg"] = func(s *Searcher, ctx context.Context, root string, req Request) (Result, error) {
			s.RG = rg
			return s.SearchRG(ctx, root, req)
		}
	}
	for name, run := range engines {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				_, err := run(testSearcher(""), context.Background(), tt.root, tt.req)
				if got := errs.CodeOf(err); got != tt.want {
					t.Errorf("got code %q (%v), want %q", got, err, tt.want)
				}
			})
		}
	}
	_, err := testSearcher("").SearchRG(context.Background(), root, Request{Query: "a"})
	if got := errs.CodeOf(err); got != errs.Unavailable {
		t.Errorf("got code %q for SearchRG without rg, want %q", got, errs.Unavailable)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	root := makeFixture(t)
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	engines := map[string]*Searcher{"go": testSearcher(""), "index": testSearcher("")}
	if rg, err := rgLook(); err == nil {
		engines["rg"] = testSearcher(rg)
	}
	for name, s := range engines {
		for _, tt := range []struct {
			name string
			ctx  context.Context
			want errs.Code
		}{{"deadline", expired, errs.Timeout}, {"cancel", cancelled, errs.Cancelled}} {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				var err error
				if name == "rg" {
					_, err = s.SearchRG(tt.ctx, root, Request{Query: "needle"})
				} else if name == "index" {
					_, err = listedEngine(true)(s, tt.ctx, root, Request{Query: "needle"})
				} else {
					_, err = s.SearchGo(tt.ctx, root, Request{Query: "needle"})
				}
				if got := errs.CodeOf(err); got != tt.want {
					t.Errorf("got code %q (%v), want %q", got, err, tt.want)
				}
			})
		}
	}
	// A tiny Limits.Timeout on a large tree times out mid-search. The
	// query has no literal to skip files by (a required literal makes a
	// 16 MB scan a memchr that a fast machine finishes within 1 ms).
	big := t.TempDir()
	for i := range 300 {
		writeFile(t, big, fmt.Sprintf("d%03d/f.txt", i), strings.Repeat("some text without the word\n", 2000))
	}
	s := &Searcher{Limits: Limits{Timeout: time.Millisecond}}
	_, err := s.SearchGo(context.Background(), big, Request{Query: `[abc]+[xyz]`, Regex: true})
	if got := errs.CodeOf(err); got != errs.Timeout {
		t.Errorf("got code %q (%v), want %q", got, err, errs.Timeout)
	}
	_, err = listedEngine(false)(s, context.Background(), big, Request{Query: `[abc]+[xyz]`, Regex: true})
	if got := errs.CodeOf(err); got != errs.Timeout {
		t.Errorf("index: got code %q (%v), want %q", got, err, errs.Timeout)
	}
}
