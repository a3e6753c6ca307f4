package search

// A trigram filter per cached file: before a file is read or scanned, a
// query's trigrams are looked up in it, and a file missing one cannot
// contain the query. Files are filtered on ASCII-folded bytes, so one
// filter serves case-sensitive queries and ASCII case-insensitive ones.
// The filter is kept even when the file's content does not fit the
// cache's bound (a few hundred bytes a file), so a large tree is searched
// by reading only the files that may match.

// bloomBits is the size of one filter: 2,048 bits (256 bytes). A 2 KB
// source file sets about a fifth of them; an 8-trigram query then passes a
// file that does not contain it about once in a million.
const bloomBits = 2048

// bloomMaxFile is the largest file given a filter: past it a filter would
// be nearly full, so the file is always read.
const bloomMaxFile = 64 << 10

type bloom [bloomBits / 64]uint64

func foldASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func trigramBit(a, b, c byte) uint32 {
	h := uint32(foldASCII(a))<<16 | uint32(foldASCII(b))<<8 | uint32(foldASCII(c))
	h *= 0x9E3779B1
	return h >> (32 - 11) // 2^11 = bloomBits
}

// newBloom returns the filter of data, nil when data is too large for one.
func newBloom(data []byte) *bloom {
	if len(data) > bloomMaxFile {
		return nil
	}
	f := new(bloom)
	for i := 0; i+2 < len(data); i++ {
		b := trigramBit(data[i], data[i+1], data[i+2])
		f[b/64] |= 1 << (b % 64)
	}
	return f
}

// queryBits returns the filter bits a file must have to contain lit, nil
// when lit is too short to filter on.
func queryBits(lit []byte) []uint32 {
	if len(lit) < 3 {
		return nil
	}
	bits := make([]uint32, 0, len(lit)-2)
	for i := 0; i+2 < len(lit); i++ {
		bits = append(bits, trigramBit(lit[i], lit[i+1], lit[i+2]))
	}
	return bits
}

// mayContain reports whether a file whose filter is f may contain the
// literal whose bits are q.
func (f *bloom) mayContain(q []uint32) bool {
	for _, b := range q {
		if f[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// filterBits returns the bits every matching file's filter must have for
// the matcher's query, nil when the query cannot be filtered on (too short,
// or a case-insensitive query whose folding reaches beyond ASCII).
func (m *matcher) filterBits() []uint32 {
	switch {
	case m.lit != nil:
		return queryBits(m.lit)
	case m.foldLit != nil && !m.foldKS:
		return queryBits(m.foldLit)
	case m.re != nil && m.reqLit != nil && !m.caseFold:
		return queryBits(m.reqLit)
	}
	return nil
}
