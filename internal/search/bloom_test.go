package search

import (
	"bytes"
	"fmt"
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
		// Repeated, it reaches the sizes that get larger filters.
		data = bytes.Repeat(data, rapid.IntRange(1, 120).Draw(t, "repeat"))
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
	// A large file gets a filter in proportion, not a saturated one: a
	// 256 KB file of varied code still rejects an absent symbol.
	var big bytes.Buffer
	for i := 0; big.Len() < 256<<10; i++ {
		fmt.Fprintf(&big, "func handler%d(w http.ResponseWriter, r *http.Request) { serve%d(w, r, %d) }\n", i, i*7, i*13)
	}
	bf := newBloom(big.Bytes())
	if got := len(bf.words) * 64; got != bloomSize(big.Len()) || got < big.Len()/2 {
		t.Fatalf("a %d-byte file got %d bits", big.Len(), got)
	}
	if bf.mayContain(queryBits([]byte("rareNeedleSymbol"))) {
		t.Fatal("a 256 KB file passed a query it does not contain")
	}
	if !bf.mayContain(queryBits([]byte("handler1234(w"))) {
		t.Fatal("a 256 KB file rejected what it contains")
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
