package redact

import (
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"math/bits"
	"slices"
	"strings"
)

// KnownRuleID names the marker of a known-value redaction:
// "[REDACTED:known-secret]".
const KnownRuleID = "known-secret"

const (
	// MinKnownLen is the shortest value [NewKnown] keeps, in bytes.
	MinKnownLen = 6
	// MinKnownFormLen is the shortest derived form (base64, hex) of a value
	// that is matched: shorter ones occur by chance too often.
	MinKnownFormLen = 8
	// MaxKnownLen is the longest value [NewKnown] keeps, in bytes. No secret
	// is that long (a PEM body of a 16384-bit RSA key is 13 KiB), and its
	// longest form (hex, twice as long) must fit well inside the piece of an
	// over-long line that a streaming [Writer] redacts at a time.
	MaxKnownLen = 16 << 10
)

// Known is a set of secret values known to the caller (for example read from
// a checkout's .env files), with the forms in which an agent could get them
// back: the value itself, its base64 (standard and URL alphabets, padded and
// not, and the part of a longer base64 stream that encodes it at each of the
// three byte alignments) and its lower and upper case hex.
//
// A Known is immutable and safe for concurrent use. A nil *Known is empty.
type Known struct {
	values []string // kept values: deduplicated, longest first
	forms  []string // every form: deduplicated, longest first
	sorted []string // forms in lexical order, for pendingFrom
	first  [4]uint64
	nl     bool // some form contains '\n'

	// The multi-pattern index. Every form is at least minForm bytes long, so
	// an occurrence covers the 4-byte grams at offsets 0..stride-1 of the
	// form (stride = minForm-3, at most maxStride), and exactly one of these
	// starts at an input offset divisible by stride. The scan hashes the
	// grams at those offsets only and tests them against a bitmap of the
	// hashed grams of all forms; a hit looks up the probes of its bit
	// (groups by rank, as in kwIndex) and compares the candidate forms.
	maxForm int
	stride  int
	shift   uint32 // hash >> shift indexes bits
	bits    []uint64
	rank    []uint32 // rank[w]: set bits in bits[:w]
	starts  []uint32 // probes[starts[g]:starts[g+1]] belong to group g
	probes  []knownProbe
}

// knownProbe says that forms[form] has gram at offset off.
type knownProbe struct {
	gram uint32
	off  uint32
	form uint32
}

const maxStride = 8

// NewKnown returns the known set of values. Values shorter than
// [MinKnownLen] or longer than [MaxKnownLen] bytes are dropped, duplicates
// are merged, and derived forms shorter than [MinKnownFormLen] are not
// matched. An empty result is a valid, empty Known.
func NewKnown(values []string) *Known {
	k := &Known{}
	seen := make(map[string]struct{}, len(values))
	for _, v := range values {
		if len(v) < MinKnownLen || len(v) > MaxKnownLen {
			continue
		}
		if _, dup := seen[v]; dup {
			continue
		}
		seen[v] = struct{}{}
		k.values = append(k.values, strings.Clone(v))
	}
	slices.SortFunc(k.values, longestFirst)

	forms := make(map[string]struct{}, 12*len(k.values))
	add := func(f string, derived bool) {
		if derived && len(f) < MinKnownFormLen {
			return
		}
		forms[f] = struct{}{}
	}
	var buf []byte
	for _, v := range k.values {
		add(v, false)
		for _, enc := range [...]*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			add(enc.EncodeToString([]byte(v)), true)
			raw := enc.WithPadding(base64.NoPadding)
			add(raw.EncodeToString([]byte(v)), true)
			for align := range 3 {
				buf = append(buf[:0], "\x00\x00"[:align]...)
				buf = append(buf, v...)
				add(streamForm(raw.EncodeToString(buf), align, len(buf)), true)
			}
		}
		h := hex.EncodeToString([]byte(v))
		add(h, true)
		add(strings.ToUpper(h), true)
	}
	k.forms = make([]string, 0, len(forms))
	for f := range forms {
		k.forms = append(k.forms, f)
	}
	slices.SortFunc(k.forms, longestFirst)
	k.sorted = slices.Clone(k.forms)
	slices.Sort(k.sorted)
	k.build()
	return k
}

func longestFirst(a, b string) int {
	if c := cmp.Compare(len(b), len(a)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// streamForm cuts enc, the unpadded base64 of align filler bytes followed by
// a value (n bytes in all), to the characters that depend on the value's
// bytes only: those a longer base64 stream holds wherever the value sits at
// an offset congruent to align modulo 3.
func streamForm(enc string, align, n int) string {
	start := [3]int{0, 2, 3}[align] // the first characters mix in filler bits
	end := n / 3 * 4
	switch n % 3 { // the last character of a partial group mixes in what follows
	case 1:
		end++
	case 2:
		end += 2
	}
	if end <= start {
		return ""
	}
	return enc[start:end]
}

// build creates the scan index of k.forms.
func (k *Known) build() {
	if len(k.forms) == 0 {
		return
	}
	minForm := len(k.forms[len(k.forms)-1])
	k.maxForm = len(k.forms[0])
	k.stride = min(minForm-3, maxStride)
	nprobe := len(k.forms) * k.stride
	nbits := 1 << 10
	for nbits < 8*nprobe && nbits < 1<<22 {
		nbits <<= 1
	}
	k.shift = uint32(32 - bits.TrailingZeros(uint(nbits)))
	k.bits = make([]uint64, nbits/64)
	k.rank = make([]uint32, nbits/64)
	probes := make([]knownProbe, 0, nprobe)
	for fi, f := range k.forms {
		k.first[f[0]>>6] |= 1 << (f[0] & 63)
		if strings.IndexByte(f, '\n') >= 0 {
			k.nl = true
		}
		for off := range k.stride {
			g := gram(f, off)
			probes = append(probes, knownProbe{gram: g, off: uint32(off), form: uint32(fi)})
			h := k.hash(g)
			k.bits[h>>6] |= 1 << (h & 63)
		}
	}
	total := uint32(0)
	for w := range k.bits {
		k.rank[w] = total
		total += uint32(bits.OnesCount64(k.bits[w]))
	}
	// Counting sort of the probes by group; within a group, probes keep the
	// order of k.forms (longest first).
	k.starts = make([]uint32, total+1)
	for _, p := range probes {
		k.starts[k.group(k.hash(p.gram))+1]++
	}
	for g := 1; g < len(k.starts); g++ {
		k.starts[g] += k.starts[g-1]
	}
	k.probes = make([]knownProbe, len(probes))
	next := slices.Clone(k.starts[:total])
	for _, p := range probes {
		g := k.group(k.hash(p.gram))
		k.probes[next[g]] = p
		next[g]++
	}
}

// gram returns the four bytes of s at i as a little-endian integer.
func gram(s string, i int) uint32 {
	b := s[i : i+4]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func (k *Known) hash(g uint32) uint32 { return (g * 0x9E3779B1) >> k.shift }

// group returns the group of the hash h, whose bit is set.
func (k *Known) group(h uint32) uint32 {
	w := h >> 6
	return k.rank[w] + uint32(bits.OnesCount64(k.bits[w]&(1<<(h&63)-1)))
}

// Len returns the number of values in the set.
func (k *Known) Len() int {
	if k == nil {
		return 0
	}
	return len(k.values)
}

// Forms returns the number of distinct forms matched.
func (k *Known) Forms() int {
	if k == nil {
		return 0
	}
	return len(k.forms)
}

// MaxFormLen returns the length of the longest form, 0 for an empty set: a
// streaming [Writer] holds back at most this many bytes minus one of an
// over-long line.
func (k *Known) MaxFormLen() int {
	if k == nil {
		return 0
	}
	return k.maxForm
}

// Equal reports whether k and o hold the same values.
func (k *Known) Equal(o *Known) bool {
	if k.Len() == 0 || o.Len() == 0 {
		return k.Len() == o.Len()
	}
	return slices.Equal(k.values, o.values)
}

// appendSpans appends a span with the given rule index for every occurrence
// of every form in s. Spans may overlap and are not sorted.
func (k *Known) appendSpans(s string, spans []span, rule int) []span {
	if len(k.forms) == 0 {
		return spans
	}
	stride, n := k.stride, len(s)
	for p := 0; p+4 <= n; p += stride {
		b := s[p : p+4]
		g := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		h := (g * 0x9E3779B1) >> k.shift
		if k.bits[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		grp := k.group(h)
		for _, pr := range k.probes[k.starts[grp]:k.starts[grp+1]] {
			if pr.gram != g {
				continue
			}
			lo := p - int(pr.off)
			f := k.forms[pr.form]
			if lo < 0 || lo+len(f) > n || s[lo:lo+len(f)] != f {
				continue
			}
			spans = append(spans, span{lo, lo + len(f), rule})
		}
	}
	return spans
}

// pendingFrom returns the first offset p such that s[p:] is a proper prefix
// of a form, so that more input could complete an occurrence starting at p;
// len(s) when there is none. Only the last MaxFormLen()-1 bytes are tried.
func (k *Known) pendingFrom(s string) int {
	n := len(s)
	if len(k.forms) == 0 || (!k.nl && n > 0 && s[n-1] == '\n') {
		return n // a form never spans a newline
	}
	for p := max(0, n-(k.maxForm-1)); p < n; p++ {
		if c := s[p]; k.first[c>>6]&(1<<(c&63)) != 0 && k.isProperPrefix(s[p:]) {
			return p
		}
	}
	return n
}

// isProperPrefix reports whether x is a proper prefix of some form.
func (k *Known) isProperPrefix(x string) bool {
	i, found := slices.BinarySearch(k.sorted, x)
	if found {
		i++ // the forms with prefix x follow x itself
	}
	return i < len(k.sorted) && strings.HasPrefix(k.sorted[i], x)
}

// WithKnown returns a redactor that applies r's rules and also replaces
// every occurrence of a form of a value of k with "[REDACTED:known-secret]",
// each counting as one redaction (overlapping redactions merge into one, as
// with rules). It replaces a Known set on r earlier. A nil or empty k
// returns r itself.
//
// Its [Writer] also catches a value split across Write calls. Complete lines
// already wait for their newline; beyond that, the Writer holds back the
// tail that may begin a form until more input, Flush or Close: at the end
// of a piece of a line cut for length, at most the longest form minus one
// byte; when a value holds a newline, from the start of the line where
// that tail begins, so that the rules see the line whole.
func (r *Redactor) WithKnown(k *Known) *Redactor {
	if k.Len() == 0 {
		return r
	}
	c := *r
	n := len(r.rules)
	c.markers = append(r.markers[:n:n], knownMarker)
	c.known = k
	c.knownRule = n
	return &c
}

// Known returns the known set of r, nil if it has none.
func (r *Redactor) Known() *Known { return r.known }

const knownMarker = markerPrefix + KnownRuleID + "]"
