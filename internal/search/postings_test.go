package search

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// planGen draws plans over a few trigrams (so that files share them).
func planGen(universe []trigram) *rapid.Generator[*tquery] {
	return rapid.Custom(func(t *rapid.T) *tquery {
		var build func(depth int) *tquery
		build = func(depth int) *tquery {
			switch k := rapid.IntRange(0, 5).Draw(t, "node"); {
			case k == 0 && depth > 0:
				return allQuery
			case k == 1 && depth > 0:
				return noneQuery
			case k <= 3 || depth > 2:
				q := &tquery{op: qAnd}
				if k == 3 {
					q.op = qOr
				}
				q.tris = rapid.SliceOfNDistinct(rapid.SampledFrom(universe), 1, 3, func(x trigram) trigram { return x }).Draw(t, "tris")
				slices.Sort(q.tris)
				return q
			default:
				q := &tquery{op: rapid.SampledFrom([]qop{qAnd, qOr}).Draw(t, "op")}
				for range rapid.IntRange(1, 3).Draw(t, "subs") {
					q.sub = append(q.sub, build(depth+1))
				}
				return q
			}
		}
		return build(0)
	})
}

// TestPostingsIncrementalProperty: after any sequence of files indexed,
// changed (removed and indexed again) and removed — with segments sealed,
// merged and rewritten along the way — every plan's candidates are the
// files a rebuild of the index from the live files gives, which are the
// files whose trigram sets satisfy the plan.
func TestPostingsIncrementalProperty(t *testing.T) {
	universe := []trigram{1, 2, 3, 0x616263, 0x626364, 0xffffff, 0x10000, 0x20000}
	rapid.Check(t, func(t *rapid.T) {
		p := newPostings()
		p.span = int32(rapid.SampledFrom([]int{2, 3, 8, 64}).Draw(t, "span"))
		p.merge = rapid.IntRange(2, 4).Draw(t, "merge")
		defer p.release()
		live := map[int32][]trigram{} // id -> set
		file := map[int]int32{}       // file -> its current id
		setGen := rapid.SliceOfNDistinct(rapid.SampledFrom(universe), 0, len(universe), func(x trigram) trigram { return x })
		for range rapid.IntRange(1, 300).Draw(t, "ops") {
			f := rapid.IntRange(0, 40).Draw(t, "file")
			old, had := file[f]
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); {
			case op < 3: // index (a change when the file was indexed)
				if had {
					p.remove(old)
					delete(live, old)
				}
				set := setGen.Draw(t, "set")
				id := p.add(slices.Clone(set))
				live[id] = set
				file[f] = id
			case had: // remove
				p.remove(old)
				delete(live, old)
				delete(file, f)
			}
			if rapid.IntRange(0, 4).Draw(t, "check") > 0 {
				continue
			}
			q := planGen(universe).Draw(t, "plan")
			got := p.query(q)
			var want []int32
			for id, set := range live {
				if q.eval(func(x trigram) bool { return slices.Contains(set, x) }) {
					want = append(want, id)
				}
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("plan %s: candidates %v, want %v (live %v, %d segments)", q, got, want, slices.Sorted(maps.Keys(live)), len(p.segs))
			}
			// A rebuild from the live files gives the same ids for
			// the same files.
			r := newPostings()
			r.span, r.merge = p.span, p.merge
			ids := slices.Sorted(maps.Keys(live))
			remap := map[int32]int32{}
			for _, id := range ids {
				remap[r.add(slices.Clone(live[id]))] = id
			}
			var rebuilt []int32
			for _, id := range r.query(q) {
				rebuilt = append(rebuilt, remap[id])
			}
			r.release()
			slices.Sort(rebuilt)
			if !slices.Equal(rebuilt, want) {
				t.Fatalf("plan %s: a rebuild gives %v, want %v", q, rebuilt, want)
			}
		}
		if b := p.bytes(); b < 0 {
			t.Fatalf("negative size %d", b)
		}
	})
}

// TestSegmentEncodings: lists dense enough are bitmaps, sparse ones
// varints; both decode to what went in.
func TestSegmentEncodings(t *testing.T) {
	var ids []int32
	var sets [][]trigram
	for i := range int32(2048) {
		ids = append(ids, 4096+i)
		s := []trigram{7} // in every file: a bitmap
		if i%500 == 0 {
			s = append(s, 9) // in a few: varints
		}
		sets = append(sets, s)
	}
	s := buildSegment(4096, 2048, 0, ids, sets)
	defer s.free()
	if i := s.find(7); i < 0 || s.counts[i]&bitmapFlag == 0 || s.count(i) != 2048 {
		t.Fatalf("dense list: %v", s.counts)
	}
	if i := s.find(9); i < 0 || s.counts[i]&bitmapFlag != 0 || !slices.Equal(s.decode(i, nil), []int32{4096, 4596, 5096, 5596, 6096}) {
		t.Fatalf("sparse list: %v %v", s.counts, s.decode(s.find(9), nil))
	}
	if got := s.decode(s.find(7), nil); len(got) != 2048 || got[0] != 4096 || got[2047] != 6143 {
		t.Fatalf("bitmap decodes to %d ids", len(got))
	}
}

// TestListedThroughSegmentsProperty: with segments of two files merged
// two at a time, a tree edited at random (each change invalidated) is
// searched through sealed, merged and rewritten segments; every result
// is the Go engine's.
func TestListedThroughSegmentsProperty(t *testing.T) {
	requireGit(t)
	rapid.Check(t, func(rt *rapid.T) {
		root := t.TempDir()
		git(rt, root, "init", "-q", ".")
		s := &Searcher{Exclude: func(rel string) bool { return strings.HasSuffix(rel, ".env") }, Limits: Limits{MaxFileSize: propMaxFileSize}}
		cache := NewCache(rapid.SampledFrom([]int64{0, 3000}).Draw(rt, "bound"))
		cache.post.span, cache.post.merge = 2, 2
		for i := range 12 {
			writeFile(rt, root, fmt.Sprintf("d%d/f%d.txt", i%3, i), rapid.SampledFrom(propContents).Draw(rt, "content"))
		}
		git(rt, root, "add", "-A")
		files := gitListed(rt, root)
		for range rapid.IntRange(1, 12).Draw(rt, "steps") {
			if rapid.Bool().Draw(rt, "edit") {
				rel := fmt.Sprintf("d%d/f%d.txt", rapid.IntRange(0, 2).Draw(rt, "d"), rapid.IntRange(0, 11).Draw(rt, "f"))
				if rapid.IntRange(0, 4).Draw(rt, "rm") == 0 {
					os.Remove(filepath.Join(root, filepath.FromSlash(rel)))
				} else {
					writeFile(rt, root, rel, rapid.SampledFrom(propContents).Draw(rt, "new"))
				}
				cache.Invalidate(rel)
				if rapid.IntRange(0, 3).Draw(rt, "relist") == 0 {
					files = gitListed(rt, root) // a new list (untracked files)
				}
			}
			req := rapid.SampledFrom(propRequests).Draw(rt, "request")
			g, gerr := s.SearchGo(context.Background(), root, req)
			l, lerr := s.SearchListed(context.Background(), root, files, req, cache)
			if gerr != nil || lerr != nil {
				rt.Fatalf("errors go=%v index=%v", gerr, lerr)
			}
			l.Engine = g.Engine
			// The Go engine lists files as git does now; the index
			// searches the list it was given.
			if !reflect.DeepEqual(g, l) && slices.Equal(files, gitListed(rt, root)) {
				rt.Fatalf("%+v: results differ:\ngo:    %s\nindex: %s", req, describe(g), describe(l))
			}
		}
	})
}
