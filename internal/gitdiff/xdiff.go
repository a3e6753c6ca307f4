package gitdiff

// The edit script, computed as git's xdiff computes it (xdiff/xprepare.c,
// xdiff/xdiffi.c of git 2.39): records are lines (each with its "\n", the
// last one possibly without), classified by content; the common head and
// tail are trimmed; lines that cannot match anything on the other side,
// and lines with very many matches inside runs of such lines, are set
// aside before the search; Myers' divide-and-conquer search runs over the
// rest with xdiff's cost heuristics; and the change groups are slid
// (xdl_change_compact, with the indent heuristic when asked). Each step
// follows git's code exactly, heuristics and tie-breaks included: a
// different but equally short script would print a different patch.

// Change is one change of the script: lines [I1, I1+Chg1) of the old file
// were replaced by lines [I2, I2+Chg2) of the new one (0-based).
type Change struct {
	I1, I2, Chg1, Chg2 int
}

// file is one side of a diff: its records and what xdiff keeps about them.
type file struct {
	recs  [][]byte // lines, each with its "\n" (the last may lack it)
	class []int    // class of each record (equal content = equal class)
	// rchg marks changed records; it has a zero guard on each side:
	// record i is rchg[i+1].
	rchg []bool
	// rindex and ha list the records kept for the search (xdl_cleanup_records):
	// their indexes and classes.
	rindex []int
	ha     []int
	dstart int
	dend   int
}

func (f *file) changed(i int) bool { return f.rchg[i+1] }
func (f *file) mark(i int, v bool) { f.rchg[i+1] = v }

// splitRecords splits data into xdiff's records.
func splitRecords(data []byte) [][]byte {
	var recs [][]byte
	for len(data) > 0 {
		i := indexNL(data)
		if i < 0 {
			recs = append(recs, data)
			break
		}
		recs = append(recs, data[:i+1])
		data = data[i+1:]
	}
	return recs
}

func indexNL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// bogosqrt is xdl_bogosqrt: a power of two near the square root of n.
func bogosqrt(n int) int {
	i := 1
	for ; n > 0; n >>= 2 {
		i <<= 1
	}
	return i
}

// Heuristic constants of xdiffi.c and xprepare.c.
const (
	maxCostMin   = 256
	heurMinCost  = 256
	snakeCnt     = 20
	kHeur        = 4
	maxEqLimit   = 1024
	simscanWin   = 100
	kpdisRun     = 4
	maxIndent    = 200
	maxBlanks    = 20
	maxSliding   = 100
	lineMax      = int(^uint(0) >> 1)
	indentWeight = 60
)

// prepare builds both sides (xdl_prepare_env for the Myers algorithm):
// records, classes, trimmed ends and the records kept for the search.
func prepare(a, b []byte) (*file, *file) {
	f1 := &file{recs: splitRecords(a)}
	f2 := &file{recs: splitRecords(b)}
	classes := map[string]int{}
	var len1, len2 []int // occurrences of each class in each file
	classify := func(f *file, pass int) {
		f.class = make([]int, len(f.recs))
		for i, r := range f.recs {
			c, ok := classes[string(r)]
			if !ok {
				c = len(classes)
				classes[string(r)] = c
				len1 = append(len1, 0)
				len2 = append(len2, 0)
			}
			if pass == 1 {
				len1[c]++
			} else {
				len2[c]++
			}
			f.class[i] = c
		}
		f.rchg = make([]bool, len(f.recs)+2)
	}
	classify(f1, 1)
	classify(f2, 2)
	trimEnds(f1, f2)
	cleanupRecords(f1, f2, len1, len2)
	return f1, f2
}

// trimEnds is xdl_trim_ends: the common head and tail are left out of the
// search.
func trimEnds(f1, f2 *file) {
	lim := min(len(f1.recs), len(f2.recs))
	i := 0
	for ; i < lim; i++ {
		if f1.class[i] != f2.class[i] {
			break
		}
	}
	f1.dstart, f2.dstart = i, i
	lim -= i
	j := 0
	for ; j < lim; j++ {
		if f1.class[len(f1.recs)-1-j] != f2.class[len(f2.recs)-1-j] {
			break
		}
	}
	f1.dend = len(f1.recs) - j - 1
	f2.dend = len(f2.recs) - j - 1
}

// cleanupRecords is xdl_cleanup_records: records with no match on the other
// side are marked changed at once; records with many matches are too when
// they sit in a run of such records; the others are kept for the search.
func cleanupRecords(f1, f2 *file, len1, len2 []int) {
	dis1 := make([]byte, len(f1.recs)+1)
	dis2 := make([]byte, len(f2.recs)+1)
	mark := func(f *file, dis []byte, other []int) {
		mlim := min(bogosqrt(len(f.recs)), maxEqLimit)
		for i := f.dstart; i <= f.dend; i++ {
			nm := other[f.class[i]]
			switch {
			case nm == 0:
				dis[i] = 0
			case nm >= mlim:
				dis[i] = 2
			default:
				dis[i] = 1
			}
		}
	}
	mark(f1, dis1, len2)
	mark(f2, dis2, len1)
	keep := func(f *file, dis []byte) {
		for i := f.dstart; i <= f.dend; i++ {
			if dis[i] == 1 || dis[i] == 2 && !cleanMMatch(dis, i, f.dstart, f.dend) {
				f.rindex = append(f.rindex, i)
				f.ha = append(f.ha, f.class[i])
			} else {
				f.mark(i, true)
			}
		}
	}
	keep(f1, dis1)
	keep(f2, dis2)
}

// cleanMMatch is xdl_clean_mmatch: whether the multimatch record i sits
// in a run of unmatched (0) and multimatch (2) records where the
// unmatched ones dominate.
func cleanMMatch(dis []byte, i, s, e int) bool {
	if i-s > simscanWin {
		s = i - simscanWin
	}
	if e-i > simscanWin {
		e = i + simscanWin
	}
	rdis0, rpdis0 := 0, 1
	for r := 1; i-r >= s; r++ {
		if dis[i-r] == 0 {
			rdis0++
		} else if dis[i-r] == 2 {
			rpdis0++
		} else {
			break
		}
	}
	if rdis0 == 0 {
		return false
	}
	rdis1, rpdis1 := 0, 1
	for r := 1; i+r <= e; r++ {
		if dis[i+r] == 0 {
			rdis1++
		} else if dis[i+r] == 2 {
			rpdis1++
		} else {
			break
		}
	}
	if rdis1 == 0 {
		return false
	}
	rdis1 += rdis0
	rpdis1 += rpdis0
	return rpdis1*kpdisRun < rpdis1+rdis1
}

// myers holds the state of one xdl_do_diff.
type myers struct {
	ha1, ha2     []int
	rchg1, rchg2 *file
	kvdf, kvdb   []int // diagonals, offset by off
	off          int
	mxcost       int
	needMin      bool
}

// doDiff runs the search (xdl_do_diff for Myers) and marks the changed
// records of both sides.
func doDiff(f1, f2 *file, minimal bool) {
	n1, n2 := len(f1.ha), len(f2.ha)
	ndiags := n1 + n2 + 3
	m := &myers{ha1: f1.ha, ha2: f2.ha, rchg1: f1, rchg2: f2,
		kvdf: make([]int, ndiags), kvdb: make([]int, ndiags), off: n2 + 1, needMin: minimal}
	m.mxcost = max(bogosqrt(ndiags), maxCostMin)
	m.recsCmp(0, n1, 0, n2, minimal)
}

func (m *myers) fget(d int) int     { return m.kvdf[d+m.off] }
func (m *myers) fset(d, v int)      { m.kvdf[d+m.off] = v }
func (m *myers) bget(d int) int     { return m.kvdb[d+m.off] }
func (m *myers) bset(d, v int)      { m.kvdb[d+m.off] = v }
func (m *myers) markOld(i int)      { m.rchg1.mark(m.rchg1.rindex[i], true) }
func (m *myers) markNew(i int)      { m.rchg2.mark(m.rchg2.rindex[i], true) }
func (m *myers) eq(i1, i2 int) bool { return m.ha1[i1] == m.ha2[i2] }

// recsCmp is xdl_recs_cmp: divide and conquer.
func (m *myers) recsCmp(off1, lim1, off2, lim2 int, needMin bool) {
	for off1 < lim1 && off2 < lim2 && m.eq(off1, off2) {
		off1++
		off2++
	}
	for off1 < lim1 && off2 < lim2 && m.eq(lim1-1, lim2-1) {
		lim1--
		lim2--
	}
	switch {
	case off1 == lim1:
		for ; off2 < lim2; off2++ {
			m.markNew(off2)
		}
	case off2 == lim2:
		for ; off1 < lim1; off1++ {
			m.markOld(off1)
		}
	default:
		i1, i2, minLo, minHi := m.split(off1, lim1, off2, lim2, needMin)
		m.recsCmp(off1, i1, off2, i2, minLo)
		m.recsCmp(i1, lim1, i2, lim2, minHi)
	}
}

// split is xdl_split: it returns the point where the box is cut and
// whether each half must be searched for a minimal path.
func (m *myers) split(off1, lim1, off2, lim2 int, needMin bool) (s1, s2 int, minLo, minHi bool) {
	dmin, dmax := off1-lim2, lim1-off2
	fmid, bmid := off1-off2, lim1-lim2
	odd := (fmid-bmid)&1 != 0
	fmin, fmax := fmid, fmid
	bmin, bmax := bmid, bmid
	m.fset(fmid, off1)
	m.bset(bmid, lim1)
	for ec := 1; ; ec++ {
		gotSnake := false
		if fmin > dmin {
			fmin--
			m.fset(fmin-1, -1)
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			m.fset(fmax+1, -1)
		} else {
			fmax--
		}
		for d := fmax; d >= fmin; d -= 2 {
			var i1 int
			if m.fget(d-1) >= m.fget(d+1) {
				i1 = m.fget(d-1) + 1
			} else {
				i1 = m.fget(d + 1)
			}
			prev1 := i1
			i2 := i1 - d
			for i1 < lim1 && i2 < lim2 && m.eq(i1, i2) {
				i1++
				i2++
			}
			if i1-prev1 > snakeCnt {
				gotSnake = true
			}
			m.fset(d, i1)
			if odd && bmin <= d && d <= bmax && m.bget(d) <= i1 {
				return i1, i2, true, true
			}
		}
		if bmin > dmin {
			bmin--
			m.bset(bmin-1, lineMax)
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			m.bset(bmax+1, lineMax)
		} else {
			bmax--
		}
		for d := bmax; d >= bmin; d -= 2 {
			var i1 int
			if m.bget(d-1) < m.bget(d+1) {
				i1 = m.bget(d - 1)
			} else {
				i1 = m.bget(d+1) - 1
			}
			prev1 := i1
			i2 := i1 - d
			for i1 > off1 && i2 > off2 && m.eq(i1-1, i2-1) {
				i1--
				i2--
			}
			if prev1-i1 > snakeCnt {
				gotSnake = true
			}
			m.bset(d, i1)
			if !odd && fmin <= d && d <= fmax && i1 <= m.fget(d) {
				return i1, i2, true, true
			}
		}
		if needMin {
			continue
		}
		if gotSnake && ec > heurMinCost {
			best := 0
			for d := fmax; d >= fmin; d -= 2 {
				dd := d - fmid
				if dd < 0 {
					dd = -dd
				}
				i1 := m.fget(d)
				i2 := i1 - d
				v := (i1 - off1) + (i2 - off2) - dd
				if v > kHeur*ec && v > best &&
					off1+snakeCnt <= i1 && i1 < lim1 &&
					off2+snakeCnt <= i2 && i2 < lim2 {
					for k := 1; m.eq(i1-k, i2-k); k++ {
						if k == snakeCnt {
							best = v
							s1, s2 = i1, i2
							break
						}
					}
				}
			}
			if best > 0 {
				return s1, s2, true, false
			}
			best = 0
			for d := bmax; d >= bmin; d -= 2 {
				dd := d - bmid
				if dd < 0 {
					dd = -dd
				}
				i1 := m.bget(d)
				i2 := i1 - d
				v := (lim1 - i1) + (lim2 - i2) - dd
				if v > kHeur*ec && v > best &&
					off1 < i1 && i1 <= lim1-snakeCnt &&
					off2 < i2 && i2 <= lim2-snakeCnt {
					for k := 0; m.eq(i1+k, i2+k); k++ {
						if k == snakeCnt-1 {
							best = v
							s1, s2 = i1, i2
							break
						}
					}
				}
			}
			if best > 0 {
				return s1, s2, false, true
			}
		}
		if ec >= m.mxcost {
			fbest, fbest1 := -1, -1
			for d := fmax; d >= fmin; d -= 2 {
				i1 := min(m.fget(d), lim1)
				i2 := i1 - d
				if lim2 < i2 {
					i1, i2 = lim2+d, lim2
				}
				if fbest < i1+i2 {
					fbest, fbest1 = i1+i2, i1
				}
			}
			bbest, bbest1 := lineMax, lineMax
			for d := bmax; d >= bmin; d -= 2 {
				i1 := max(off1, m.bget(d))
				i2 := i1 - d
				if i2 < off2 {
					i1, i2 = off2+d, off2
				}
				if i1+i2 < bbest {
					bbest, bbest1 = i1+i2, i1
				}
			}
			if (lim1+lim2)-bbest < fbest-(off1+off2) {
				return fbest1, fbest - fbest1, true, false
			}
			return bbest1, bbest - bbest1, false, true
		}
	}
}

// group is xdlgroup: a run of changed records [start, end) of one side
// (empty when start == end).
type group struct{ start, end int }

func (f *file) groupInit() group {
	g := group{}
	for f.changed(g.end) {
		g.end++
	}
	return g
}

func (f *file) groupNext(g *group) bool {
	if g.end == len(f.recs) {
		return false
	}
	g.start = g.end + 1
	g.end = g.start
	for f.changed(g.end) {
		g.end++
	}
	return true
}

func (f *file) groupPrevious(g *group) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	g.start = g.end
	for f.changed(g.start - 1) {
		g.start--
	}
	return true
}

func (f *file) slideDown(g *group) bool {
	if g.end < len(f.recs) && f.class[g.start] == f.class[g.end] {
		f.mark(g.start, false)
		g.start++
		f.mark(g.end, true)
		g.end++
		for f.changed(g.end) {
			g.end++
		}
		return true
	}
	return false
}

func (f *file) slideUp(g *group) bool {
	if g.start > 0 && f.class[g.start-1] == f.class[g.end-1] {
		g.start--
		f.mark(g.start, true)
		g.end--
		f.mark(g.end, false)
		for f.changed(g.start - 1) {
			g.start--
		}
		return true
	}
	return false
}

// brokenSync reports an impossible state of the group walk; git calls
// BUG() there.
func brokenSync(what string) { panic("gitdiff: group sync broken " + what) }

// compact is xdl_change_compact: each group of changes is slid up and down
// as far as it goes (merging with groups it meets), then placed: aligned
// with a group of the other side when one was passed, else where the
// indent heuristic scores best (when asked), else as low as it goes.
func compact(f, fo *file, indent bool) {
	g := f.groupInit()
	og := fo.groupInit()
	for {
		if g.end != g.start {
			var earliestEnd, endMatchingOther, groupsize int
			for {
				groupsize = g.end - g.start
				endMatchingOther = -1
				for f.slideUp(&g) {
					if !fo.groupPrevious(&og) {
						brokenSync("sliding up")
					}
				}
				earliestEnd = g.end
				if og.end > og.start {
					endMatchingOther = g.end
				}
				for f.slideDown(&g) {
					if !fo.groupNext(&og) {
						brokenSync("sliding down")
					}
					if og.end > og.start {
						endMatchingOther = g.end
					}
				}
				if groupsize == g.end-g.start {
					break
				}
			}
			switch {
			case g.end == earliestEnd:
			case endMatchingOther != -1:
				for og.end == og.start {
					if !f.slideUp(&g) {
						brokenSync("match disappeared")
					}
					if !fo.groupPrevious(&og) {
						brokenSync("sliding to match")
					}
				}
			case indent:
				shift := earliestEnd
				if g.end-groupsize-1 > shift {
					shift = g.end - groupsize - 1
				}
				if g.end-maxSliding > shift {
					shift = g.end - maxSliding
				}
				bestShift := -1
				var best splitScore
				for ; shift <= g.end; shift++ {
					var s splitScore
					f.measureSplit(shift).addTo(&s)
					f.measureSplit(shift - groupsize).addTo(&s)
					if bestShift == -1 || s.cmp(best) <= 0 {
						best = s
						bestShift = shift
					}
				}
				for g.end > bestShift {
					if !f.slideUp(&g) {
						brokenSync("best shift unreached")
					}
					if !fo.groupPrevious(&og) {
						brokenSync("sliding to blank line")
					}
				}
			}
		}
		if !f.groupNext(&g) {
			break
		}
		if !fo.groupNext(&og) {
			brokenSync("moving to next group")
		}
	}
	if fo.groupNext(&og) {
		brokenSync("at end of file")
	}
}

// isSpace is git's isspace: space, \t, \n, \r.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// indentOf is get_indent: the indentation of rec (a tab counts to the next
// multiple of 8), -1 for a line of only whitespace, at most maxIndent.
func indentOf(rec []byte) int {
	ret := 0
	for _, c := range rec {
		if !isSpace(c) {
			return ret
		}
		switch c {
		case ' ':
			ret++
		case '\t':
			ret += 8 - ret%8
		}
		if ret >= maxIndent {
			return maxIndent
		}
	}
	return -1
}

// splitMeasure is split_measurement.
type splitMeasure struct {
	endOfFile                   bool
	indent, preBlank, preIndent int
	postBlank, postIndent       int
}

func (f *file) measureSplit(split int) splitMeasure {
	var m splitMeasure
	if split >= len(f.recs) {
		m.endOfFile = true
		m.indent = -1
	} else {
		m.indent = indentOf(f.recs[split])
	}
	m.preIndent = -1
	for i := split - 1; i >= 0; i-- {
		m.preIndent = indentOf(f.recs[i])
		if m.preIndent != -1 {
			break
		}
		m.preBlank++
		if m.preBlank == maxBlanks {
			m.preIndent = 0
			break
		}
	}
	m.postIndent = -1
	for i := split + 1; i < len(f.recs); i++ {
		m.postIndent = indentOf(f.recs[i])
		if m.postIndent != -1 {
			break
		}
		m.postBlank++
		if m.postBlank == maxBlanks {
			m.postIndent = 0
			break
		}
	}
	return m
}

// splitScore is split_score.
type splitScore struct{ effectiveIndent, penalty int }

// addTo is score_add_split, with git's weights.
func (m splitMeasure) addTo(s *splitScore) {
	const (
		startOfFilePenalty              = 1
		endOfFilePenalty                = 21
		totalBlankWeight                = -30
		postBlankWeight                 = 6
		relativeIndentPenalty           = -4
		relativeIndentWithBlankPenalty  = 10
		relativeOutdentPenalty          = 24
		relativeOutdentWithBlankPenalty = 17
		relativeDedentPenalty           = 23
		relativeDedentWithBlankPenalty  = 17
	)
	if m.preIndent == -1 && m.preBlank == 0 {
		s.penalty += startOfFilePenalty
	}
	if m.endOfFile {
		s.penalty += endOfFilePenalty
	}
	postBlank := 0
	if m.indent == -1 {
		postBlank = 1 + m.postBlank
	}
	totalBlank := m.preBlank + postBlank
	s.penalty += totalBlankWeight * totalBlank
	s.penalty += postBlankWeight * postBlank
	indent := m.indent
	if indent == -1 {
		indent = m.postIndent
	}
	anyBlanks := totalBlank != 0
	s.effectiveIndent += indent
	pick := func(withBlank, without int) int {
		if anyBlanks {
			return withBlank
		}
		return without
	}
	switch {
	case indent == -1, m.preIndent == -1:
	case indent > m.preIndent:
		s.penalty += pick(relativeIndentWithBlankPenalty, relativeIndentPenalty)
	case indent == m.preIndent:
	case m.postIndent != -1 && m.postIndent > indent:
		s.penalty += pick(relativeOutdentWithBlankPenalty, relativeOutdentPenalty)
	default:
		s.penalty += pick(relativeDedentWithBlankPenalty, relativeDedentPenalty)
	}
}

// cmp is score_cmp.
func (s splitScore) cmp(o splitScore) int {
	c := 0
	if s.effectiveIndent > o.effectiveIndent {
		c = 1
	} else if s.effectiveIndent < o.effectiveIndent {
		c = -1
	}
	return indentWeight*c + (s.penalty - o.penalty)
}

// buildScript is xdl_build_script: the changes in order.
func buildScript(f1, f2 *file) []Change {
	var rev []Change
	for i1, i2 := len(f1.recs), len(f2.recs); i1 >= 0 || i2 >= 0; i1, i2 = i1-1, i2-1 {
		if f1.changed(i1-1) || f2.changed(i2-1) {
			l1, l2 := i1, i2
			for f1.changed(i1 - 1) {
				i1--
			}
			for f2.changed(i2 - 1) {
				i2--
			}
			rev = append(rev, Change{I1: i1, I2: i2, Chg1: l1 - i1, Chg2: l2 - i2})
		}
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}
