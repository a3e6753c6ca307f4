package search

import (
	"encoding/binary"
	"math/bits"
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"
)

// The posting index: for each trigram, the files (by id) whose contents
// hold it. Ids are handed out in increasing order as files are indexed;
// a changed file is removed and indexed again under a new id. The newest
// ids form the tail, kept as each file's sorted trigram set; every
// segSpan ids the tail is sealed into an immutable segment (the posting
// lists of its id range), and runs of segMerge sealed segments of one
// level merge into one of the next level, so a tree of n files has about
// log8(n/segSpan) levels of a few segments each. A removed id stays in its
// segment's lists and is dropped at query time (and when the segment is
// rewritten, once its dead ids outnumber its live ones).
//
// A list is stored as a bitmap over its segment's id range or as varint
// deltas, whichever is smaller. Segments live outside the Go heap (an
// anonymous mapping freed when the segment is replaced), so a large index
// does not raise the collector's heap goal: a tree's index costs its size
// once, not twice.

const (
	segSpan  = 256 // ids per level-0 segment
	segMerge = 8   // segments of one level merged into one of the next
	// segmentHeader is the bookkeeping charged per segment beyond its
	// mapping.
	segmentHeader = 256
	// tailEntryOverhead is charged per tail file beyond its trigrams.
	tailEntryOverhead = 64
)

// postings is a trigram index over file ids. It is not safe for
// concurrent use: the Cache guards it.
type postings struct {
	span   int32 // ids per level-0 segment (segSpan; smaller in tests)
	merge  int   // segments merged at once (segMerge)
	segs   []*segment
	sealed int32 // ids below are in segments
	next   int32 // the next id
	tail   map[int32]*tailFile
	// tailBytes counts the tail's trigrams and entries.
	tailBytes int64
	alive     []uint64 // bit per id: indexed and not removed
}

// tailFile is a file of the tail: its trigram set, sorted by the first
// query that needs it (files are added faster unsorted).
type tailFile struct {
	tris   []trigram
	sorted bool
}

func (f *tailFile) has(t trigram) bool {
	if !f.sorted {
		slices.Sort(f.tris)
		f.sorted = true
	}
	_, ok := slices.BinarySearch(f.tris, t)
	return ok
}

func newPostings() *postings {
	return &postings{span: segSpan, merge: segMerge, tail: map[int32]*tailFile{}}
}

func (p *postings) isAlive(id int32) bool {
	return int(id>>6) < len(p.alive) && p.alive[id>>6]&(1<<(uint(id)&63)) != 0
}

// add indexes a file of trigram set tris (distinct, in any order; add
// keeps it) and returns its id.
func (p *postings) add(tris []trigram) int32 {
	id := p.next
	p.next++
	p.tail[id] = &tailFile{tris: tris}
	p.tailBytes += int64(len(tris))*4 + tailEntryOverhead
	for int(id>>6) >= len(p.alive) {
		p.alive = append(p.alive, 0)
	}
	p.alive[id>>6] |= 1 << (uint(id) & 63)
	if p.next-p.sealed >= p.span {
		p.seal()
	}
	return id
}

// remove drops id from the index.
func (p *postings) remove(id int32) {
	if !p.isAlive(id) {
		return
	}
	p.alive[id>>6] &^= 1 << (uint(id) & 63)
	if id >= p.sealed {
		f := p.tail[id]
		delete(p.tail, id)
		p.tailBytes -= int64(len(f.tris))*4 + tailEntryOverhead
		return
	}
	i, _ := slices.BinarySearchFunc(p.segs, id, func(s *segment, id int32) int {
		switch {
		case s.lo+s.span <= id:
			return -1
		case s.lo > id:
			return 1
		}
		return 0
	})
	s := p.segs[i]
	s.live--
	if s.live < s.dead() && s.dead() >= 256 {
		p.segs[i] = rewrite(p, []*segment{s}, s.level)
		s.free()
	}
}

// bytes is the memory the index takes.
func (p *postings) bytes() int64 {
	n := p.tailBytes + int64(len(p.alive))*8
	for _, s := range p.segs {
		n += s.bytes()
	}
	return n
}

// release frees the segments; p is empty afterwards.
func (p *postings) release() {
	for _, s := range p.segs {
		s.free()
	}
	*p = postings{span: p.span, merge: p.merge, tail: map[int32]*tailFile{}}
}

// seal turns the tail into a level-0 segment of ids [sealed, sealed+span)
// and merges runs of merge segments of one level.
func (p *postings) seal() {
	lo := p.sealed
	ids := make([]int32, 0, len(p.tail))
	for id := range p.tail {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	sets := make([][]trigram, len(ids))
	for i, id := range ids {
		sets[i] = p.tail[id].tris
	}
	p.segs = append(p.segs, buildSegment(lo, p.span, 0, ids, sets))
	p.sealed = lo + p.span
	clear(p.tail)
	p.tailBytes = 0
	for {
		n := len(p.segs)
		if n < p.merge {
			return
		}
		run := p.segs[n-p.merge:]
		level := run[0].level
		for _, s := range run {
			if s.level != level {
				return
			}
		}
		merged := rewrite(p, run, level+1)
		for _, s := range run {
			s.free()
		}
		p.segs = append(p.segs[:n-p.merge], merged)
	}
}

// query returns the ids of the live files q accepts, in increasing order.
func (p *postings) query(q *tquery) []int32 {
	var out []int32
	for _, s := range p.segs {
		out = s.eval(q, p, out)
	}
	var tail []int32
	for id, f := range p.tail {
		if q.eval(f.has) {
			tail = append(tail, id)
		}
	}
	slices.Sort(tail)
	return append(out, tail...)
}

// offheap is memory outside the Go heap, freed once.
type offheap struct {
	b     []byte
	heap  bool // the system refused a mapping: b is on the heap
	freed atomic.Bool
}

func allocOffheap(n int) *offheap {
	m := &offheap{b: mapAnon(n)}
	if m.b == nil {
		m.b, m.heap = make([]byte, n), true
	}
	return m
}

func (m *offheap) free() {
	if m.freed.Swap(true) || m.heap {
		return
	}
	unmapAnon(m.b)
}

// segment is the immutable posting lists of the files with ids in
// [lo, lo+span): sorted trigrams, their lists' offsets and sizes, and the
// lists.
type segment struct {
	lo, span int32
	level    int
	keys     []uint32 // sorted trigrams
	offs     []uint32 // len(keys)+1 offsets into data
	counts   []uint32 // ids per list; bitmapFlag marks a bitmap list
	data     []byte
	mem      *offheap
	files    int // ids holding postings when built
	live     int // of them, not removed since
}

// bitmapFlag marks a list stored as a bitmap over the segment's range.
const bitmapFlag = 1 << 31

func (s *segment) dead() int    { return s.files - s.live }
func (s *segment) bytes() int64 { return int64(len(s.mem.b)) + segmentHeader }
func (s *segment) free()        { s.mem.free() }

// u32s views b as uint32s (b is 4-byte aligned: it starts a mapping).
func u32s(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// segmentBuilder encodes lists for one id range.
type segmentBuilder struct {
	lo, span int32
	keys     []uint32
	offs     []uint32
	counts   []uint32
	data     []byte
	files    int
}

// list appends the list of trigram t: ids (increasing, absolute).
func (b *segmentBuilder) list(t trigram, ids []int32) {
	if len(ids) == 0 {
		return
	}
	b.keys = append(b.keys, t)
	b.offs = append(b.offs, uint32(len(b.data)))
	varintLen := 0
	prev := b.lo
	for i, id := range ids {
		d := uint64(id - prev)
		if i == 0 {
			d = uint64(id - b.lo)
		}
		varintLen += uvarintLen(d)
		prev = id
	}
	if bm := int(b.span+7) / 8; bm < varintLen {
		start := len(b.data)
		b.data = append(b.data, make([]byte, bm)...)
		for _, id := range ids {
			x := id - b.lo
			b.data[start+int(x>>3)] |= 1 << (x & 7)
		}
		b.counts = append(b.counts, uint32(len(ids))|bitmapFlag)
		return
	}
	prev = b.lo
	for i, id := range ids {
		d := uint64(id - prev)
		if i == 0 {
			d = uint64(id - b.lo)
		}
		b.data = binary.AppendUvarint(b.data, d)
		prev = id
	}
	b.counts = append(b.counts, uint32(len(ids)))
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// finish copies the lists into a mapping and returns the segment.
func (b *segmentBuilder) finish(level int) *segment {
	n := len(b.keys)
	b.offs = append(b.offs, uint32(len(b.data)))
	size := (n*3+1)*4 + len(b.data)
	mem := allocOffheap(max(size, 4))
	keys := u32s(mem.b[:n*4])
	offs := u32s(mem.b[n*4 : (2*n+1)*4])
	counts := u32s(mem.b[(2*n+1)*4 : (3*n+1)*4])
	copy(keys, b.keys)
	copy(offs, b.offs)
	copy(counts, b.counts)
	data := mem.b[(3*n+1)*4 : size]
	copy(data, b.data)
	s := &segment{lo: b.lo, span: b.span, level: level, keys: keys, offs: offs, counts: counts, data: data,
		mem: mem, files: b.files, live: b.files}
	runtime.AddCleanup(s, func(m *offheap) { m.free() }, mem)
	return s
}

// buildSegment builds the segment of ids (increasing, in [lo, lo+span))
// whose trigram sets are sets (distinct, any order): the (trigram, id) pairs are
// ordered by trigram with two counting sorts (the top 16 bits, then the
// low 8 within each group), ids staying in order.
func buildSegment(lo, span int32, level int, ids []int32, sets [][]trigram) *segment {
	b := &segmentBuilder{lo: lo, span: span, files: len(ids)}
	total := 0
	for _, s := range sets {
		total += len(s)
	}
	var start [1<<16 + 1]uint32
	for _, s := range sets {
		for _, t := range s {
			start[t>>8+1]++
		}
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	pairs := make([]uint32, total) // low byte << 24 | id - lo
	fill := start
	for i, s := range sets {
		x := uint32(ids[i] - lo)
		for _, t := range s {
			pairs[fill[t>>8]] = (t&0xff)<<24 | x
			fill[t>>8]++
		}
	}
	var tmp []uint32
	var list []int32
	for g := range 1 << 16 {
		grp := pairs[start[g]:start[g+1]]
		if len(grp) == 0 {
			continue
		}
		var cnt [257]int
		for _, v := range grp {
			cnt[v>>24+1]++
		}
		for i := 1; i < len(cnt); i++ {
			cnt[i] += cnt[i-1]
		}
		tmp = slices.Grow(tmp[:0], len(grp))[:len(grp)]
		pos := cnt
		for _, v := range grp {
			tmp[pos[v>>24]] = v
			pos[v>>24]++
		}
		for low := range 256 {
			run := tmp[cnt[low]:cnt[low+1]]
			if len(run) == 0 {
				continue
			}
			list = list[:0]
			for _, v := range run {
				list = append(list, int32(v&0xffffff)+lo)
			}
			b.list(uint32(g)<<8|uint32(low), list)
		}
	}
	return b.finish(level)
}

// rewrite builds one segment of the given level from segs (consecutive
// ranges), keeping the live ids only.
func rewrite(p *postings, segs []*segment, level int) *segment {
	lo := segs[0].lo
	last := segs[len(segs)-1]
	b := &segmentBuilder{lo: lo, span: last.lo + last.span - lo}
	for _, s := range segs {
		b.files += s.live
	}
	cur := make([]int, len(segs)) // next key of each
	var ids, buf []int32
	for {
		t, found := uint32(0), false
		for i, s := range segs {
			if cur[i] < len(s.keys) && (!found || s.keys[cur[i]] < t) {
				t, found = s.keys[cur[i]], true
			}
		}
		if !found {
			break
		}
		ids = ids[:0]
		for i, s := range segs {
			if cur[i] < len(s.keys) && s.keys[cur[i]] == t {
				buf = s.decode(cur[i], buf[:0])
				for _, id := range buf {
					if p.isAlive(id) {
						ids = append(ids, id)
					}
				}
				cur[i]++
			}
		}
		b.list(t, ids)
	}
	return b.finish(level)
}

// find returns the index of trigram t's list, or -1.
func (s *segment) find(t trigram) int {
	i, ok := slices.BinarySearch(s.keys, t)
	if !ok {
		return -1
	}
	return i
}

func (s *segment) count(i int) int { return int(s.counts[i] &^ bitmapFlag) }

// decode appends the ids of list i.
func (s *segment) decode(i int, out []int32) []int32 {
	d := s.data[s.offs[i]:s.offs[i+1]]
	if s.counts[i]&bitmapFlag != 0 {
		for w, x := range d {
			for x != 0 {
				b := bits.TrailingZeros8(x)
				out = append(out, s.lo+int32(w*8+b))
				x &= x - 1
			}
		}
		return out
	}
	id := s.lo
	for len(d) > 0 {
		v, n := binary.Uvarint(d)
		d = d[n:]
		id += int32(v)
		out = append(out, id)
	}
	return out
}

// hasBit reports whether bitmap list i holds id.
func (s *segment) hasBit(i int, id int32) bool {
	x := id - s.lo
	return s.data[s.offs[i]+uint32(x>>3)]&(1<<(x&7)) != 0
}

// eval appends the live ids of s that q accepts, in order.
func (s *segment) eval(q *tquery, p *postings, out []int32) []int32 {
	ids, all := s.evalNode(q, nil, false)
	if all {
		for id := s.lo; id < s.lo+s.span; id++ {
			if p.isAlive(id) {
				out = append(out, id)
			}
		}
		return out
	}
	for _, id := range ids {
		if p.isAlive(id) {
			out = append(out, id)
		}
	}
	return out
}

// estimate is an upper bound of the ids q accepts (-1: every id).
func (s *segment) estimate(q *tquery) int {
	switch q.op {
	case qAll:
		return -1
	case qNone:
		return 0
	case qAnd:
		best := -1
		for _, t := range q.tris {
			i := s.find(t)
			if i < 0 {
				return 0
			}
			if c := s.count(i); best < 0 || c < best {
				best = c
			}
		}
		for _, sub := range q.sub {
			if c := s.estimate(sub); c >= 0 && (best < 0 || c < best) {
				best = c
			}
		}
		return best
	default:
		n := 0
		for _, t := range q.tris {
			if i := s.find(t); i >= 0 {
				n += s.count(i)
			}
		}
		for _, sub := range q.sub {
			c := s.estimate(sub)
			if c < 0 {
				return -1
			}
			n += c
		}
		return n
	}
}

// evalNode returns the ids q accepts, among within when restrict is set
// (all: every id of the range, or of within).
func (s *segment) evalNode(q *tquery, within []int32, restrict bool) (ids []int32, all bool) {
	switch q.op {
	case qAll:
		return within, !restrict
	case qNone:
		return nil, false
	case qAnd:
		lists := make([]int, 0, len(q.tris))
		for _, t := range q.tris {
			i := s.find(t)
			if i < 0 {
				return nil, false
			}
			lists = append(lists, i)
		}
		slices.SortFunc(lists, func(a, b int) int { return s.count(a) - s.count(b) })
		cur, have := within, restrict
		var tmp []int32
		for _, i := range lists {
			switch {
			case !have:
				cur, have = s.decode(i, nil), true
			case s.counts[i]&bitmapFlag != 0:
				kept := make([]int32, 0, len(cur))
				for _, id := range cur {
					if s.hasBit(i, id) {
						kept = append(kept, id)
					}
				}
				cur = kept
			default:
				tmp = s.decode(i, tmp[:0])
				cur = intersect(slices.Clone(cur), tmp)
			}
			if len(cur) == 0 {
				return nil, false
			}
		}
		subs := slices.Clone(q.sub)
		est := make(map[*tquery]int, len(subs))
		for _, sub := range subs {
			c := s.estimate(sub)
			if c < 0 {
				c = int(s.span) + 1
			}
			est[sub] = c
		}
		slices.SortFunc(subs, func(a, b *tquery) int { return est[a] - est[b] })
		for _, sub := range subs {
			r, rall := s.evalNode(sub, cur, have)
			switch {
			case rall:
			case !have:
				cur, have = r, true
			default:
				cur = r
			}
			if have && len(cur) == 0 {
				return nil, false
			}
		}
		if !have {
			return nil, true
		}
		return cur, false
	default: // qOr
		var acc []int32
		var tmp []int32
		for _, t := range q.tris {
			i := s.find(t)
			if i < 0 {
				continue
			}
			switch {
			case !restrict:
				acc = unionSorted(acc, s.decode(i, nil))
			case s.counts[i]&bitmapFlag != 0:
				var r []int32
				for _, id := range within {
					if s.hasBit(i, id) {
						r = append(r, id)
					}
				}
				acc = unionSorted(acc, r)
			default:
				tmp = s.decode(i, tmp[:0])
				acc = unionSorted(acc, intersect(slices.Clone(within), tmp))
			}
		}
		for _, sub := range q.sub {
			r, rall := s.evalNode(sub, within, restrict)
			if rall {
				return within, !restrict
			}
			acc = unionSorted(acc, r)
		}
		return acc, false
	}
}

// intersect returns the ids in both a and b (both increasing), in a's
// storage.
func intersect(a, b []int32) []int32 {
	out := a[:0]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

func unionSorted(a, b []int32) []int32 {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make([]int32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}
