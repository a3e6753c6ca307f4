package redact

import (
	"math/bits"
	"strings"
)

// kwEntry is one distinct keyword of the index.
type kwEntry struct {
	kw    string // ASCII-lowercased keyword
	off   int    // offset of the anchor inside kw
	rules []int  // indexes of the rules that use kw
}

// kwProbe is one way a byte pair can reveal a keyword: the pair sits at
// offset off of entries[entry].
type kwProbe struct {
	entry int32
	off   int32
}

// kwIndex finds every case-insensitive occurrence of a fixed keyword set.
//
// Each keyword is anchored on the three bytes inside it that are least
// likely to occur in ordinary text; both byte pairs of that anchor go into a
// 64 Ki-bit bitmap (8 KiB, fits in L1). One of the two pairs of an
// occurrence starts at an even offset of the input, so the scan tests only
// the pairs at even offsets against the bitmap, and verifies the few
// candidates against the keywords sharing the pair. (With a two-byte
// keyword, which has a single pair, every offset is tested.) Pairs are
// folded by setting bit 0x20 of both bytes, which maps upper to lower case
// ASCII letters; for other bytes it only merges a few pairs, which costs
// extra verifications but never misses a keyword.
type kwIndex struct {
	bits    [1 << 10]uint64
	tri     [1 << 10]uint64 // hashed anchor triples (stride 2 only)
	rank    [1 << 10]uint16 // rank[w]: set bits in bits[:w]
	groups  [][]kwProbe     // by rank of a pair's bit: the probes of that pair
	entries []kwEntry
	stride  int // 2, or 1 when a keyword is only two bytes long
}

func fold2(a, b byte) uint16 { return (uint16(a) | uint16(b)<<8) | 0x2020 }

// newKwIndex indexes the keywords of rules. Keywords are already validated:
// at least two bytes, no newline.
func newKwIndex(rules []Rule) *kwIndex {
	x := &kwIndex{stride: 2}
	byKw := make(map[string]int)
	for ri, r := range rules {
		for _, k := range r.keywords {
			k = lowerASCII(k)
			ei, ok := byKw[k]
			if !ok {
				ei = len(x.entries)
				byKw[k] = ei
				x.entries = append(x.entries, kwEntry{kw: k, off: anchorOffset(k)})
				if len(k) < 3 {
					x.stride = 1
				}
			}
			e := &x.entries[ei]
			if len(e.rules) == 0 || e.rules[len(e.rules)-1] != ri {
				e.rules = append(e.rules, ri)
			}
		}
	}
	var probes []kwProbe
	for ei, e := range x.entries {
		probes = append(probes, kwProbe{int32(ei), int32(e.off)})
		if x.stride == 2 {
			probes = append(probes, kwProbe{int32(ei), int32(e.off + 1)})
		}
	}
	for _, p := range probes {
		v := x.pair(p)
		x.bits[v>>6] |= 1 << (v & 63)
	}
	if x.stride == 2 {
		for _, e := range x.entries {
			h := triHash(e.kw[e.off], e.kw[e.off+1], e.kw[e.off+2])
			x.tri[h>>6] |= 1 << (h & 63)
		}
	}
	total := 0
	for w := range x.bits {
		x.rank[w] = uint16(total)
		total += bits.OnesCount64(x.bits[w])
	}
	x.groups = make([][]kwProbe, total)
	for _, p := range probes {
		g := x.group(x.pair(p))
		x.groups[g] = append(x.groups[g], p)
	}
	return x
}

func (x *kwIndex) pair(p kwProbe) uint16 {
	k := x.entries[p.entry].kw
	return fold2(k[p.off], k[p.off+1])
}

// group returns the index in groups of the pair v, whose bit is set.
func (x *kwIndex) group(v uint16) int {
	w := v >> 6
	return int(x.rank[w]) + bits.OnesCount64(x.bits[w]&(1<<(v&63)-1))
}

// scan calls hit for every keyword occurrence in s, in order of the
// position of the occurrence's anchor (which, as keywords hold no newline,
// is also line order). start is the index of the occurrence in s.
func (x *kwIndex) scan(s string, hit func(e *kwEntry, start int)) {
	if len(x.entries) == 0 || len(s) < 2 {
		return
	}
	bm := &x.bits
	if x.stride == 1 {
		for i := 0; i+1 < len(s); i++ {
			if v := (uint16(s[i]) | uint16(s[i+1])<<8) | 0x2020; bm[v>>6]&(1<<(v&63)) != 0 {
				x.verify(s, i, v, hit)
			}
		}
		return
	}
	// Eight bytes at a time: the pairs at offsets 0, 2, 4 and 6 of a word.
	i := 0
	for ; i+8 <= len(s); i += 8 {
		b := s[i : i+8]
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		w |= 0x2020202020202020
		t := bm[(w>>6)&1023]>>(w&63) | bm[(w>>22)&1023]>>((w>>16)&63) |
			bm[(w>>38)&1023]>>((w>>32)&63) | bm[(w>>54)&1023]>>((w>>48)&63)
		if t&1 == 0 {
			continue
		}
		for k := 0; k < 8; k += 2 {
			if v := uint16(w >> (8 * k)); bm[v>>6]&(1<<(v&63)) != 0 {
				x.verify(s, i+k, v, hit)
			}
		}
	}
	for ; i+1 < len(s); i += 2 {
		if v := (uint16(s[i]) | uint16(s[i+1])<<8) | 0x2020; bm[v>>6]&(1<<(v&63)) != 0 {
			x.verify(s, i, v, hit)
		}
	}
}

// triHash hashes three bytes, folded like pairs, to 16 bits.
func triHash(a, b, c byte) uint32 {
	t := (uint32(a) | uint32(b)<<8 | uint32(c)<<16) | 0x202020
	return (t * 0x9E3779B1) >> 16
}

// verify reports the keywords whose anchor pair v was found at s[i:i+2].
func (x *kwIndex) verify(s string, i int, v uint16, hit func(e *kwEntry, start int)) {
	if x.stride == 2 {
		// The pair starts or ends an anchor triple: check both triples
		// against the triple filter before looking at keywords.
		found := false
		if i+2 < len(s) {
			h := triHash(s[i], s[i+1], s[i+2])
			found = x.tri[h>>6]&(1<<(h&63)) != 0
		}
		if !found && i > 0 {
			h := triHash(s[i-1], s[i], s[i+1])
			found = x.tri[h>>6]&(1<<(h&63)) != 0
		}
		if !found {
			return
		}
	}
	for _, p := range x.groups[x.group(v)] {
		e := &x.entries[p.entry]
		start := i - int(p.off)
		if start < 0 || start+len(e.kw) > len(s) {
			continue
		}
		if equalFoldLower(s[start:start+len(e.kw)], e.kw) {
			hit(e, start)
		}
	}
}

// anchorOffset returns the offset of the three bytes of k (two if k is that
// short) whose byte pairs are least likely in ordinary text.
func anchorOffset(k string) int {
	if len(k) < 3 {
		return 0
	}
	best, bestScore := 0, -1.0
	for i := 0; i+2 < len(k); i++ {
		sc := pairScore(k[i], k[i+1]) + pairScore(k[i+1], k[i+2])
		if bestScore < 0 || sc < bestScore {
			best, bestScore = i, sc
		}
	}
	return best
}

// pairScore estimates how common the byte pair ab is in source code and
// prose, from rough single-byte frequencies and a list of very common
// English bigrams.
func pairScore(a, b byte) float64 {
	sc := byteFreq(a) * byteFreq(b)
	if a == b {
		sc *= 4 // "--", "ss": runs are common
	}
	if strings.Contains(commonBigrams, " "+string([]byte{a | 0x20, b | 0x20})+" ") {
		sc *= 8
	}
	return sc
}

// commonBigrams are frequent English and code bigrams, space separated.
const commonBigrams = " th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns ge ly ei os no pe do su pa ec ac ot di ol tr sh ad ct ke ey ap pr "

// byteFreq is a rough frequency (percent) of b in source code and prose.
func byteFreq(b byte) float64 {
	switch {
	case b >= 'a' && b <= 'z':
		return letterFreq[b-'a']
	case b >= '0' && b <= '9':
		return 0.6
	}
	switch b {
	case ' ':
		return 15
	case '_', '.', '-', '/':
		return 1.2
	case ':', '=', '"', '(', ')', ',':
		return 0.8
	}
	return 0.3
}

var letterFreq = [26]float64{
	6.5, 1.2, 3.0, 3.3, 9.5, 2.0, 1.8, 4.0, 6.0, 0.2, 0.7, 4.0, 2.6, // a..m
	6.0, 6.2, 2.1, 0.1, 5.8, 6.0, 7.5, 2.7, 1.0, 1.5, 0.4, 1.4, 0.1, // n..z
}

// lowerASCII lowercases ASCII letters only.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// equalFoldLower reports whether s equals the ASCII-lowercase string lower,
// ignoring ASCII case in s.
func equalFoldLower(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
