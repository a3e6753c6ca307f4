package search

import (
	"bytes"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestBloomHasNoFalseNegatives: whenever data contains a literal (exactly,
// or up to ASCII case for a case-insensitive query), the file's filter
// lets the literal's bits through; a filter that dropped one would make
// the index engine miss a match.
func TestBloomHasNoFalseNegatives(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		data := []byte(rapid.StringMatching(`[a-zA-Z0-9 _\n\x{e9}]{0,300}`).Draw(t, "data"))
		if len(data) < 3 {
			return
		}
		i := rapid.IntRange(0, len(data)-3).Draw(t, "at")
		j := rapid.IntRange(i+3, len(data)).Draw(t, "end")
		lit := data[i:j]
		if bytes.IndexByte(lit, '\n') >= 0 {
			return
		}
		f := newBloom(data)
		if !f.mayContain(queryBits(lit)) {
			t.Fatalf("filter rejects %q, which %q contains", lit, data)
		}
		if !hasNonASCII(lit) && !f.mayContain(queryBits([]byte(strings.ToLower(string(lit))))) {
			t.Fatalf("filter rejects the folded %q", lit)
		}
	})
}

func TestBloomRejectsWhatIsAbsent(t *testing.T) {
	data := []byte(strings.Repeat("package main\n\nfunc main() { println(\"hello\") }\n", 20))
	f := newBloom(data)
	if f.mayContain(queryBits([]byte("rareNeedleSymbol"))) {
		t.Fatal("a 2 KB file passed a query it does not contain")
	}
	if newBloom(make([]byte, bloomMaxFile+1)) != nil {
		t.Fatal("a file past bloomMaxFile got a filter")
	}
	if queryBits([]byte("ab")) != nil {
		t.Fatal("a query under three bytes cannot be filtered on")
	}
	// A case-insensitive query with k or s folds beyond ASCII (KELVIN
	// SIGN, LONG S): it must not be filtered.
	m, err := newMatcher(Request{Query: "kelvin", CaseInsensitive: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.filterBits() != nil {
		t.Fatal("a k/s case-insensitive query was filtered")
	}
	if m, _ := newMatcher(Request{Query: "needle"}); m.filterBits() == nil {
		t.Fatal("a plain literal must be filtered")
	}
}
