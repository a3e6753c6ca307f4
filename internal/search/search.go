package search

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/patch"
)

// Defaults and caps of Request and Limits.
const (
	DefaultMaxResults    = 50
	MaxMaxResults        = 500
	DefaultMaxFileSize   = 512 << 10
	DefaultMaxMatchChars = 500
	DefaultTimeout       = 10 * time.Second
)

// Engine names reported in Result.Engine.
const (
	EngineRG = "rg"
	EngineGo = "go"
)

// Request is one search.
type Request struct {
	Query           string `json:"query"`                      // literal by default
	Regex           bool   `json:"regex,omitempty"`            // Query is a regular expression
	Glob            string `json:"glob,omitempty"`             // doublestar glob over the relative path
	CaseInsensitive bool   `json:"case_insensitive,omitempty"` // fold case
	MaxResults      int    `json:"max_results,omitempty"`      // 0 = 50, max 500 (larger -> clamped)
}

// Limits bounds the work of one search.
type Limits struct {
	MaxFileSize   int64         // 0 = 512 KiB; larger files are skipped
	MaxMatchChars int           // 0 = 500; the line text is cut to this many runes and the match flagged
	Timeout       time.Duration // 0 = 10 s
}

// Match is one matching line.
type Match struct {
	Path   string `json:"path"`   // slash-separated, relative to root
	Line   int    `json:"line"`   // 1-based
	Column int    `json:"column"` // 1-based byte column of the first match in the line
	Text   string `json:"text"`   // the line, without its newline, cut to MaxMatchChars
	Cut    bool   `json:"cut,omitempty"`
}

// Result is the answer to a Request.
type Result struct {
	Matches   []Match `json:"matches"`
	Truncated bool    `json:"truncated"`          // more matches existed than MaxResults
	Engine    string  `json:"engine"`             // "rg", "go" or "index"
	Excluded  int     `json:"excluded,omitempty"` // files skipped because Exclude said so
}

// Searcher searches work trees. Its fields must not change once it has
// searched (a Cache remembers Exclude's answers per path); a Searcher is
// safe for concurrent use.
type Searcher struct {
	RG string // path of rg; "" = not available (New looks "rg" up in PATH once)
	// Start starts rg and git, built by the Searcher, in dir: harnessd
	// confines them like an agent's processes (the read profile: the
	// checkout readable but its secrets, nothing writable). It returns
	// the wait that ends the process. Nil = cmd.Start, unconfined.
	Start func(ctx context.Context, dir string, cmd *exec.Cmd) (wait func() error, err error)
	// Exclude tells the secret paths: never searched, never reported. Its
	// answer must depend on the path alone.
	Exclude func(rel string) bool
	Limits  Limits
}

// New returns a Searcher that uses the rg found in PATH, if any.
func New(exclude func(rel string) bool, lim Limits) *Searcher {
	s := &Searcher{Exclude: exclude, Limits: lim}
	if p, err := exec.LookPath("rg"); err == nil {
		s.RG = p
	}
	return s
}

// Search runs rg when s.RG is set and the Go engine otherwise. When rg cannot
// be started, Search falls back to the Go engine.
func (s *Searcher) Search(ctx context.Context, root string, req Request) (Result, error) {
	if s.RG == "" {
		return s.SearchGo(ctx, root, req)
	}
	res, err := s.SearchRG(ctx, root, req)
	if err != nil && errs.CodeOf(err) == errs.Unavailable {
		return s.SearchGo(ctx, root, req)
	}
	return res, err
}

// SearchGo searches with the pure-Go engine.
func (s *Searcher) SearchGo(ctx context.Context, root string, req Request) (Result, error) {
	p, err := s.prepare(root, req)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.lim.Timeout)
	defer cancel()
	closeRoot, err := p.openRoot()
	if err != nil {
		return Result{}, err
	}
	defer closeRoot()
	files, err := p.listFiles(ctx)
	if err != nil {
		return Result{}, ctxErr(ctx, err)
	}
	cands, excluded := p.filter(files)
	ms, err := searchFiles(ctx, p, cands, p.max+1)
	if err != nil {
		return Result{}, ctxErr(ctx, err)
	}
	return p.result(ms, EngineGo, excluded), nil
}

// plan is a validated request with its limits resolved.
type plan struct {
	root    string
	req     Request
	lim     Limits
	max     int
	m       *matcher
	glob    *globFilter
	exclude func(string) bool
	dir     *os.File // the open root (openRoot); nil = nothing can be read
	dirfd   int
	start   func(ctx context.Context, dir string, cmd *exec.Cmd) (func() error, error)
}

// run starts cmd in dir as the Searcher says (confined) and returns its wait.
func (p *plan) run(ctx context.Context, dir string, cmd *exec.Cmd) (func() error, error) {
	if p.start == nil {
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return cmd.Wait, nil
	}
	return p.start(ctx, dir, cmd)
}

func (s *Searcher) prepare(root string, req Request) (*plan, error) {
	p := &plan{req: req, lim: s.Limits, exclude: s.Exclude, start: s.Start}
	switch {
	case req.Query == "":
		return nil, errs.New(errs.InvalidArgument, "query is empty")
	case strings.IndexByte(req.Query, 0) >= 0:
		return nil, errs.New(errs.InvalidArgument, "query contains a NUL byte")
	case !utf8.ValidString(req.Query):
		return nil, errs.New(errs.InvalidArgument, "query is not valid UTF-8")
	case strings.IndexByte(req.Query, '\n') >= 0:
		return nil, errs.New(errs.InvalidArgument, "query contains a newline; queries match within one line")
	case req.MaxResults < 0:
		return nil, errs.New(errs.InvalidArgument, "max_results %d is negative", req.MaxResults)
	}
	p.max = req.MaxResults
	if p.max == 0 {
		p.max = DefaultMaxResults
	}
	if p.max > MaxMaxResults {
		p.max = MaxMaxResults
	}
	if p.lim.MaxFileSize <= 0 {
		p.lim.MaxFileSize = DefaultMaxFileSize
	}
	if p.lim.MaxMatchChars <= 0 {
		p.lim.MaxMatchChars = DefaultMaxMatchChars
	}
	if p.lim.Timeout <= 0 {
		p.lim.Timeout = DefaultTimeout
	}
	m, err := newMatcher(req)
	if err != nil {
		return nil, err
	}
	p.m = m
	if req.Glob != "" {
		g, err := newGlobFilter(req.Glob)
		if err != nil {
			return nil, err
		}
		p.glob = g
	}
	if root == "" {
		return nil, errs.New(errs.InvalidArgument, "root is empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "root %q: %v", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errs.Wrap(errs.NotFound, err, "root %q does not exist", root)
		}
		return nil, errs.Wrap(errs.Internal, err, "root %q: %v", root, err)
	}
	if !fi.IsDir() {
		return nil, errs.New(errs.InvalidArgument, "root %q is not a directory", root)
	}
	p.root = abs
	return p, nil
}

// filter applies the glob and Exclude to the listed files, in that order, and
// counts the files Exclude rejected. harnessd's own temp files are dropped
// first and not counted.
func (p *plan) filter(files []string) (cands []string, excluded int) {
	cands = make([]string, 0, len(files))
	for _, f := range files {
		if isTemp(f) {
			continue
		}
		if p.glob != nil && !p.glob.match(f) {
			continue
		}
		if p.exclude != nil && p.exclude(f) {
			excluded++
			continue
		}
		cands = append(cands, f)
	}
	return cands, excluded
}

// isTemp reports whether rel (slash-separated) is a temp file of a patch
// (see patch.IsTempName): a complete or partial copy of another file that a
// crash left behind. It is never searched or reported.
func isTemp(rel string) bool { return patch.IsTempName(rel[strings.LastIndexByte(rel, '/')+1:]) }

func (p *plan) result(ms []Match, engine string, excluded int) Result {
	r := Result{Matches: ms, Engine: engine, Excluded: excluded}
	if len(r.Matches) > p.max {
		r.Matches = r.Matches[:p.max]
		r.Truncated = true
	}
	if r.Matches == nil {
		r.Matches = []Match{}
	}
	return r
}

// makeMatch builds a Match from a raw line (which may end in "\n" or "\r\n").
func (p *plan) makeMatch(path string, line int, col int, raw []byte) Match {
	if n := len(raw); n > 0 && raw[n-1] == '\n' {
		raw = raw[:n-1]
		if n := len(raw); n > 0 && raw[n-1] == '\r' {
			raw = raw[:n-1]
		}
	} else if n > 0 && raw[n-1] == '\r' {
		raw = raw[:n-1]
	}
	text, cut := cutText(raw, p.lim.MaxMatchChars)
	return Match{Path: path, Line: line, Column: col + 1, Text: text, Cut: cut}
}

// cutText returns raw as valid UTF-8 (each invalid byte becomes U+FFFD), cut
// to at most max runes.
func cutText(raw []byte, max int) (string, bool) {
	if utf8.Valid(raw) {
		if len(raw) <= max {
			return string(raw), false
		}
		n, i := 0, 0
		for i < len(raw) && n < max {
			_, size := utf8.DecodeRune(raw[i:])
			i += size
			n++
		}
		return string(raw[:i]), i < len(raw)
	}
	var b strings.Builder
	b.Grow(len(raw))
	n := 0
	for i := 0; i < len(raw); n++ {
		if n == max {
			return b.String(), true
		}
		r, size := utf8.DecodeRune(raw[i:])
		b.WriteRune(r)
		i += size
	}
	return b.String(), false
}

// ctxErr turns a failure caused by ctx into the matching coded error.
func ctxErr(ctx context.Context, err error) error {
	switch ctx.Err() {
	case context.DeadlineExceeded:
		return errs.Wrap(errs.Timeout, err, "search timed out")
	case context.Canceled:
		return errs.Wrap(errs.Cancelled, err, "search cancelled")
	}
	return err
}

// matcher finds matching lines in a file's bytes.
type matcher struct {
	lit     []byte         // case-sensitive literal; nil when re is used
	litRare int            // rarestByte(lit), or of foldLit
	reqLit  []byte         // regexp mode: a literal every match contains (requiredLiteral), or nil
	reqRare int            // rarestByte(reqLit)
	re      *regexp.Regexp // multi-line regexp over the whole buffer, finds candidates
	lineRe  *regexp.Regexp // the same pattern over one line, confirms and finds the column
	perLine bool           // the pattern has \A or \z: only line-by-line matching is exact
	rgExpr  string         // the pattern handed to rg (regex mode)
	// foldLit is the ASCII-lowered query of a case-insensitive ASCII literal,
	// or of a literal a case-folding regexp requires (requiredFoldLiteral):
	// candidates are found as bytes.Index on an ASCII-lowered copy would.
	foldLit []byte
	// foldKS: foldLit has k or s, whose case orbits include non-ASCII runes
	// (KELVIN SIGN, LONG S); the fast path then needs all-ASCII data.
	foldKS bool
	// caseFold: the query folds case (then reqLit is not used to filter).
	caseFold bool
	// tree is the parsed pattern (regexp and case-insensitive modes):
	// the trigram plan is derived from it.
	tree *syntax.Regexp
}

func hasNonASCII(data []byte) bool {
	for _, c := range data {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

func newMatcher(req Request) (*matcher, error) {
	if !req.Regex && !req.CaseInsensitive {
		return &matcher{lit: []byte(req.Query), litRare: rarestByte([]byte(req.Query))}, nil
	}
	pat := req.Query
	if !req.Regex {
		pat = regexp.QuoteMeta(pat)
	}
	flags := ""
	if req.CaseInsensitive {
		flags = "(?i)"
	}
	lineRe, err := regexp.Compile(flags + pat)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "bad regular expression: %v", err)
	}
	re, err := regexp.Compile("(?m)" + flags + pat)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "bad regular expression: %v", err)
	}
	m := &matcher{re: re, lineRe: lineRe, caseFold: req.CaseInsensitive}
	if !req.Regex && !hasNonASCII([]byte(req.Query)) {
		m.foldLit = []byte(strings.ToLower(req.Query))
		m.foldKS = strings.ContainsAny(string(m.foldLit), "ks")
		m.litRare = rarestByte(m.foldLit)
	}
	sflags := syntax.Perl &^ syntax.OneLine
	if req.CaseInsensitive {
		sflags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(pat, sflags)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "bad regular expression: %v", err)
	}
	m.tree = tree
	m.perLine = hasTextAnchor(tree)
	if req.Regex && !m.perLine {
		m.reqLit = requiredLiteral(tree)
		m.reqRare = rarestByte(m.reqLit)
		if f := requiredFoldLiteral(tree); m.reqLit == nil && len(f) >= 2 {
			// A regex that folds case finds its candidate lines by a
			// literal it requires, as a case-insensitive literal does;
			// the line's regexp then decides (scan).
			m.foldLit, m.foldKS, m.litRare = f, strings.ContainsAny(string(f), "ks"), rarestByte(f)
		}
	}
	m.rgExpr = rustBoundaries(tree.String())
	return m, nil
}

func hasTextAnchor(r *syntax.Regexp) bool {
	if r.Op == syntax.OpBeginText || r.Op == syntax.OpEndText {
		return true
	}
	for _, s := range r.Sub {
		if hasTextAnchor(s) {
			return true
		}
	}
	return false
}

// rustBoundaries rewrites \b and \B in a regexp/syntax String() form to
// Rust's ASCII word boundaries, which are Go's.
func rustBoundaries(expr string) string {
	if !strings.Contains(expr, `\b`) && !strings.Contains(expr, `\B`) {
		return expr
	}
	var b strings.Builder
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c != '\\' || i+1 == len(expr) {
			b.WriteByte(c)
			continue
		}
		switch n := expr[i+1]; n {
		case 'b', 'B':
			b.WriteString(`(?-u:\` + string(n) + `)`)
		default:
			b.WriteByte(c)
			b.WriteByte(n)
		}
		i++
	}
	return b.String()
}

// scan calls fn for each matching line of data, in order, with the line's
// number, the byte offsets of its start and end (excluding "\n") and the
// offset of the first match within it, until fn returns false.
func (m *matcher) scan(data []byte, fn func(line, start, end, col int) bool) {
	if len(data) == 0 {
		return
	}
	if m.perLine {
		m.scanLines(data, fn)
		return
	}
	// fold: find candidates of an ASCII case-insensitive literal as they
	// would be found in an ASCII-lowered copy of data, without the copy.
	fold := m.foldLit != nil && !(m.foldKS && hasNonASCII(data))
	line, counted, pos := 1, 0, 0
	for pos < len(data) {
		var s int
		if fold {
			i := indexFold(data[pos:], m.foldLit, m.litRare)
			if i < 0 {
				return
			}
			s = pos + i
		} else if m.lit != nil {
			i := indexRare(data[pos:], m.lit, m.litRare)
			if i < 0 {
				return
			}
			s = pos + i
		} else if m.reqLit != nil {
			i := indexRare(data[pos:], m.reqLit, m.reqRare)
			if i < 0 {
				return
			}
			s = pos + i
		} else {
			loc := m.re.FindIndex(data[pos:])
			if loc == nil {
				return
			}
			s = pos + loc[0]
		}
		ls := pos
		if s > pos {
			ls = pos + lastIndexByte(data[pos:s], '\n') + 1
		}
		if ls >= len(data) {
			return // the empty text after the final newline is not a line
		}
		le := indexByteFrom(data, ls, '\n')
		line += countNL(data[counted:ls])
		counted = ls
		col := s - ls
		if m.lit == nil {
			loc := m.lineRe.FindIndex(data[ls:le])
			if loc == nil {
				pos = le + 1
				continue
			}
			col = loc[0]
		}
		if !fn(line, ls, le, col) {
			return
		}
		pos = le + 1
	}
}

func (m *matcher) scanLines(data []byte, fn func(line, start, end, col int) bool) {
	line := 1
	for ls := 0; ls < len(data); line++ {
		le := indexByteFrom(data, ls, '\n')
		if loc := m.lineRe.FindIndex(data[ls:le]); loc != nil {
			if !fn(line, ls, le, loc[0]) {
				return
			}
		}
		ls = le + 1
	}
}
