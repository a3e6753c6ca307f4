package search

import (
	"bytes"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// setOf returns membership in data's trigram set.
func setOf(data []byte) func(trigram) bool {
	var s trigramSet
	tris := slices.Clone(s.of(data))
	slices.Sort(tris)
	return func(t trigram) bool {
		_, ok := slices.BinarySearch(tris, t)
		return ok
	}
}

func TestTrigramSet(t *testing.T) {
	var s trigramSet
	got := slices.Clone(s.of([]byte("abcABCabc")))
	slices.Sort(got)
	// Exact bytes: case is kept, "abc" twice counts once.
	want := []trigram{makeTrigram('a', 'b', 'c'), makeTrigram('b', 'c', 'A'), makeTrigram('c', 'A', 'B'),
		makeTrigram('A', 'B', 'C'), makeTrigram('B', 'C', 'a'), makeTrigram('C', 'a', 'b')}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("trigrams of abcABCabc: %x, want %x", got, want)
	}
	if n := len(s.of([]byte("ab"))); n != 0 {
		t.Fatalf("a 2-byte file has %d trigrams", n)
	}
	// The reused bitmap is clean between files.
	if got := s.of([]byte("abc")); len(got) != 1 {
		t.Fatalf("trigrams of abc after another file: %x", got)
	}
}

// patternGen draws regular expressions over a small alphabet, with the
// constructs the plan handles: classes, alternation, repetition, case
// folding, anchors, word boundaries, '.', U+FFFD and non-ASCII letters.
func patternGen() *rapid.Generator[string] {
	atom := rapid.SampledFrom([]string{
		"a", "b", "c", "ab", "abc", "bca", "K", "k", "s", "é", "É", "日", "\uFFFD", ".", `\w`, `\d`, `\s`, "[ab]", "[^a]",
		"[a-c]", "[éa]", "(?i:ab)", "(?i:k)", "(?i:é)", `\b`, "^", "$", "x", "\r", `\x00`, "[\uFFFDa]",
		"A", "Abc", "bCA", "[A-C]", "(?i:Ab)",
	})
	return rapid.Custom(func(t *rapid.T) string {
		var build func(depth int) string
		build = func(depth int) string {
			if depth > 2 {
				return atom.Draw(t, "atom")
			}
			switch rapid.IntRange(0, 6).Draw(t, "kind") {
			case 0, 1:
				return atom.Draw(t, "atom")
			case 2:
				n := rapid.IntRange(1, 4).Draw(t, "n")
				var b strings.Builder
				for range n {
					b.WriteString(build(depth + 1))
				}
				return b.String()
			case 3:
				return "(" + build(depth+1) + "|" + build(depth+1) + ")"
			case 4:
				return "(" + build(depth+1) + ")" + rapid.SampledFrom([]string{"*", "+", "?", "{2}", "{1,3}", "{0,2}"}).Draw(t, "rep")
			case 5:
				return "(?i)" + build(depth+1)
			default:
				return build(depth+1) + build(depth+1)
			}
		}
		return build(0)
	})
}

// TestPlanHasNoFalseNegativesProperty: whenever the matcher finds a line
// of data matching the query (regexp or literal, case-sensitive or not),
// the query's plan accepts data's trigram set; a plan that rejected it
// would make the index engine miss the match.
func TestPlanHasNoFalseNegativesProperty(t *testing.T) {
	text := rapid.StringMatching(`(abc|bca|ab|a|b|c|A|B|C|ABC|Abc|bCA|K|k|\x{212A}|s|\x{17F}|é|É|日| |\r|\n|x|\xff|\x{FFFD}|0|9){0,40}`)
	rapid.Check(t, func(t *rapid.T) {
		req := Request{CaseInsensitive: rapid.Bool().Draw(t, "fold")}
		if rapid.IntRange(0, 3).Draw(t, "literal") == 0 {
			req.Query = text.Draw(t, "lit")
			req.Query = strings.ReplaceAll(req.Query, "\n", "")
			if req.Query == "" || !utf8Valid(req.Query) {
				return
			}
		} else {
			req.Regex = true
			req.Query = patternGen().Draw(t, "re")
		}
		m, err := newMatcher(req)
		if err != nil {
			return // Go rejects it; so does the search
		}
		data := []byte(text.Draw(t, "data"))
		if rapid.Bool().Draw(t, "twice") {
			data = append(data, '\n')
			data = append(data, text.Draw(t, "more")...)
		}
		matched := false
		m.scan(data, func(_, _, _, _ int) bool { matched = true; return false })
		if !matched {
			return
		}
		if q := m.plan(); !q.eval(setOf(data)) {
			t.Fatalf("%+v matches %q but its plan %s rejects it", req, data, q)
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\x00") == s }

// TestPlans pins what the plan requires for typical queries: it uses the
// literals a match must hold, and gives up ("+", every file) where none is
// certain.
func TestPlans(t *testing.T) {
	tests := []struct {
		req  Request
		want string
	}{
		{Request{Query: "ResolveWidget"}, "dge eso eWi get idg lve olv Res sol veW Wid"},
		{Request{Query: "ab"}, "+"},
		{Request{Query: "abc|abd", Regex: true}, "abc|abd"},
		{Request{Query: `func \w+Needle\(`, Regex: true}, "dle edl le( Nee fun nc unc"},
		{Request{Query: `\d+`, Regex: true}, "+"},
		{Request{Query: `rare[A-Z]eedle`, Regex: true}, "are dle edl eed rar"},
		{Request{Query: "needle", CaseInsensitive: true}, "dle edl eed nee"},
	}
	for _, tt := range tests {
		m, err := newMatcher(tt.req)
		if err != nil {
			t.Fatal(err)
		}
		got := m.plan()
		// Compare trigram sets of the top AND loosely: every wanted
		// trigram must be required.
		if tt.want == "+" {
			if got.op != qAll {
				t.Errorf("%+v: plan %s, want every file", tt.req, got)
			}
			continue
		}
		for _, w := range strings.Fields(tt.want) {
			for _, alt := range strings.Split(w, "|") {
				if !strings.Contains(got.String(), alt) {
					t.Errorf("%+v: plan %s lacks %q", tt.req, got, alt)
				}
			}
		}
	}
	// Kelvin sign and long s fold to k and s: a case-insensitive "kelvins"
	// may match text with them, and the plan must allow it.
	m, _ := newMatcher(Request{Query: "kelvins", CaseInsensitive: true})
	if !m.plan().eval(setOf([]byte("\u212Aelvin\u017F"))) {
		t.Fatalf("plan %s rejects the Kelvin-sign spelling", m.plan())
	}
	re, _ := syntax.Parse(`a\x{FFFD}b`, syntax.Perl)
	if q := regexpPlan(re); !q.eval(setOf([]byte("a\xffb"))) {
		t.Fatalf("plan %s rejects an invalid byte U+FFFD stands for", q)
	}
	if q := literalPlan(bytes.Repeat([]byte("x"), 2)); q.op != qAll {
		t.Fatalf("a 2-byte literal's plan is %s", q)
	}
}

func TestCaseVariants(t *testing.T) {
	tri := func(s string) trigram { return makeTrigram(s[0], s[1], s[2]) }
	tests := []struct {
		in   string
		want []string
	}{
		{"a1_", []string{"a1_", "A1_"}},
		{"(){", []string{"(){"}},
		{"Res", []string{"Res", "ReS", "RES", "REs", "res", "reS", "rES", "rEs"}},
		{"x\xc3\xa9", []string{"x\xc3\xa9", "X\xc3\xa9"}}, // only ASCII letters vary
		{"a-Z", []string{"a-Z", "A-Z", "a-z", "A-z"}},
	}
	for _, tt := range tests {
		got := caseVariants(tri(tt.in), nil)
		slices.Sort(got)
		var want []trigram
		for _, w := range tt.want {
			want = append(want, tri(w))
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("caseVariants(%q) = %x, want %x", tt.in, got, want)
		}
	}
}

// TestPlanCase: a case-sensitive query asks the index for its trigrams as
// written, so a file holding the words only in another case is not
// picked; a query that folds case picks every case spelling.
func TestPlanCase(t *testing.T) {
	tests := []struct {
		req  Request
		data string
		want bool
	}{
		{Request{Query: `Resolve\w+Index`, Regex: true}, "func resolver(index int)", false},
		{Request{Query: `Resolve\w+Index`, Regex: true}, "Resolver of the INDEX", false},
		{Request{Query: `Resolve\w+Index`, Regex: true}, "x := ResolveWidgetIndex(1)", true},
		{Request{Query: `Resolve\w+Index`, Regex: true}, "Resolver\nWidgetIndex", true}, // the plan knows no lines
		{Request{Query: `Resolve\w+Index`, Regex: true}, "Resolver\nIndex", false},      // but a word byte must come before Index
		{Request{Query: "ResolveWidget"}, "resolvewidget", false},
		{Request{Query: "ResolveWidget"}, "ResolveWidget", true},
		{Request{Query: "resolvewidget", CaseInsensitive: true}, "RESOLVEWIDGET", true},
		{Request{Query: "ResolveWidget", CaseInsensitive: true}, "resolveWidget", true},
		{Request{Query: "ResolveWidget", CaseInsensitive: true}, "resolve widget", false},
		{Request{Query: `(?i)resolve\w+index`, Regex: true}, "RESOLVE_INDEX", true},
		{Request{Query: `Resolve(?i:W)idget`, Regex: true}, "Resolvewidget", true},
		{Request{Query: `Resolve(?i:W)idget`, Regex: true}, "resolvewidget", false},  // one folding letter: the rest is exact
		{Request{Query: `Resolve(?i:Wid)get`, Regex: true}, "resolvewidget", true},   // three fold the whole plan
		{Request{Query: `Resolve(?i:Wid)get`, Regex: true}, "resolve widget", false}, // which still needs the strings
		{Request{Query: `[Rr]esolve`, Regex: true}, "resolve", true},
		{Request{Query: `[Rr]esolve`, Regex: true}, "RESOLVE", false},
		// A class next to a literal: the trigrams across the junction.
		// Files that hold "func" and the word "handler" only apart are
		// not read (the common words alone would pick them).
		{Request{Query: `(?i)func\s+\w+Handler`, Regex: true}, "func Handler12(name string)\n// the handler of it", false},
		{Request{Query: `(?i)func\s+\w+Handler`, Regex: true}, "FUNC \"handler\" x_HANDLER", true},
		{Request{Query: `(?i)func\s+\w+Handler`, Regex: true}, "func serveHandler()", true},
		{Request{Query: `Resolve\w+Index`, Regex: true}, "WidgetIndex Resolver", true}, // "tIn", "ver": the plan knows no order
		{Request{Query: `Resolve\w+Index`, Regex: true}, "Resolve the Index", false},
		{Request{Query: `Resolve\w+Index`, Regex: true}, "Resolve the _index", false},
	}
	for _, tt := range tests {
		m, err := newMatcher(tt.req)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.plan().eval(setOf([]byte(tt.data))); got != tt.want {
			t.Errorf("%+v on %q: plan %s accepts = %v, want %v", tt.req, tt.data, m.plan(), got, tt.want)
		}
	}
}

// TestFoldedPlanProperty: a plan over ASCII-lowered trigrams, turned into
// one over exact trigrams by foldedPlan, accepts a file's exact trigram
// set exactly when the lowered plan accepts the set of its lowered text:
// a query that folds case picks what a case-folded index picked.
func TestFoldedPlanProperty(t *testing.T) {
	text := rapid.StringMatching(`(abc|bca|ab|a|b|c|A|B|C|ABC|Abc|bCA|K|k|é|É| |x|X|0){0,40}`)
	rapid.Check(t, func(t *rapid.T) {
		tree, err := syntax.Parse("(?i)"+patternGen().Draw(t, "re"), syntax.Perl&^syntax.OneLine)
		if err != nil {
			return
		}
		lowered := analyzedPlan(tree, true)
		data := []byte(text.Draw(t, "data"))
		lower := bytes.Map(func(r rune) rune {
			if 'A' <= r && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return r
		}, data)
		if got, want := foldedPlan(lowered).eval(setOf(data)), lowered.eval(setOf(lower)); got != want {
			t.Fatalf("on %q: folded plan %s says %v, lowered plan %s on the lowered text says %v", data, foldedPlan(lowered), got, lowered, want)
		}
	})
}
