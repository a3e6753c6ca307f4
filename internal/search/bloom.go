package search

// A trigram filter per cached file: before a file is read or scanned, a
// query's trigrams are looked up in it, and a file missing one cannot
// contain the query. Files are filtered on ASCII-folded bytes, so one
// filter serves case-sensitive queries and ASCII case-insensitive ones.
// The filter is kept even when the file's content does not fit the
// cache's bound (an eighth of the file, at least 256 bytes), so a large
// tree is searched by reading only the files that may match.

// A filter has one bit per two bytes of its file, rounded up to a power
// of two, and at least bloomMinBits (256 bytes, for files up to 4 KiB): a
// source file has about a third as many distinct trigrams as bytes, so
// about half its bits are set or fewer (a 2 KB file sets about a fifth of
// 2,048), and a query of 8 trigrams passes a file that does not contain
// it a few times in a thousand, of 16 about once in 100,000. A large file
// gets a large filter rather than none: a filter a sixteenth of its size
// spares reading and scanning it for almost every query.
const (
	bloomMinBits = 2048
	bloomMaxBits = 1 << 23 // a 1 MiB filter, for files past 16 MiB
)

// bloom is one file's filter: len(words)*64 bits, a power of two.
type bloom struct {
	shift uint8 // 32 - log2(bits): a trigram's hash >> shift is its bit
	words []uint64
}

func foldASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// trigramHash is the 32-bit hash of a trigram, ASCII-folded; a filter of
// 2^k bits uses its top k bits.
func trigramHash(a, b, c byte) uint32 {
	h := uint32(foldASCII(a))<<16 | uint32(foldASCII(b))<<8 | uint32(foldASCII(c))
	return h * 0x9E3779B1
}

// bloomSize returns the number of bits of the filter of an n-byte file.
func bloomSize(n int) int {
	bits := bloomMinBits
	for bits < n/2 && bits < bloomMaxBits {
		bits <<= 1
	}
	return bits
}

// newBloom returns the filter of data.
func newBloom(data []byte) *bloom {
	bits := bloomSize(len(data))
	f := &bloom{words: make([]uint64, bits/64)}
	for b := bits; b > 1; b >>= 1 {
		f.shift++
	}
	f.shift = 32 - f.shift
	for i := 0; i+2 < len(data); i++ {
		b := trigramHash(data[i], data[i+1], data[i+2]) >> f.shift
		f.words[b/64] |= 1 << (b % 64)
	}
	return f
}

// bytes is what the filter takes in memory.
func (f *bloom) bytes() int64 { return int64(len(f.words))*8 + 32 }

// queryBits returns the trigram hashes a file's filter must have to
// contain lit, nil when lit is too short to filter on.
func queryBits(lit []byte) []uint32 {
	if len(lit) < 3 {
		return nil
	}
	hs := make([]uint32, 0, len(lit)-2)
	for i := 0; i+2 < len(lit); i++ {
		hs = append(hs, trigramHash(lit[i], lit[i+1], lit[i+2]))
	}
	return hs
}

// mayContain reports whether a file whose filter is f may contain the
// literal whose trigram hashes are q.
func (f *bloom) mayContain(q []uint32) bool {
	for _, h := range q {
		b := h >> f.shift
		if f.words[b/64]&(1<<(b%64)) == 0 {
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
