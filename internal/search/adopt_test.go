package search

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A cache adopted by another Searcher of its root starts over: the file
// the first Searcher let through (and cached) is not served past the new
// one's Exclude, and the other way round.
func TestCacheAdoptFollowsTheSearcher(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "fixture.pem"), []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []string{"fixture.pem"}
	open := &Searcher{}
	closed := &Searcher{Exclude: func(rel string) bool { return rel == "fixture.pem" }}
	cache := NewCache(0)
	req := Request{Query: "needle"}
	count := func(s *Searcher) int {
		t.Helper()
		if !cache.Adopt(root, s) {
			t.Fatal("Adopt refused the cache's own root")
		}
		r, err := s.SearchListed(context.Background(), root, files, req, cache)
		if err != nil {
			t.Fatal(err)
		}
		return len(r.Matches)
	}
	if got := count(open); got != 1 {
		t.Fatalf("open Searcher: %d matches, want 1", got)
	}
	if got := count(closed); got != 0 {
		t.Errorf("after Adopt by a Searcher that excludes it: %d matches, want 0", got)
	}
	if got := count(open); got != 1 {
		t.Errorf("after Adopt by the open Searcher again: %d matches, want 1", got)
	}
	if cache.Adopt(t.TempDir(), open) {
		t.Errorf("Adopt took a cache of another root")
	}
}
