package command

import (
	"context"
	"path"
	"slices"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/sandbox"
)

// shieldArgv returns argv with arguments added so that a read-only command
// that reads whole trees (git diff/log/show/grep and the diff plumbing,
// rg, grep -r) skips secret paths: argument checks (pathsafe.CheckArgv)
// only see the paths an agent names, not the files a recursive read
// reaches. patterns are the secret denylist (doublestar globs matched
// case-insensitively at any depth unless they start with "/"); closed are
// the other files the sandbox closes to the command (root-relative: the
// loose objects of secret blobs, other names of hard-linked secret files),
// which a recursive read would otherwise fail on with "Permission denied".
// Other programs are returned unchanged; output redaction remains the
// backstop for everything.
//
// harnessd's exclusions never change what the agent's own options select:
// the agent's arguments keep their order and every one of them, and
// harnessd's come after them, where each tool lets the later option win
// (GNU grep: "if contradictory --include and --exclude options are given,
// the last matching one wins", and whether an unmatched file is included
// depends on the first such option, which stays the agent's; rg: globs
// given later take precedence, and every --iglob comes after every -g) and
// before the "--" that ends the options. A trailing option still waiting
// for its value keeps waiting: the exclusions go in front of it and the
// tool reports the missing value as it would have. git's pathspecs are a
// set: an exclude pathspec removes paths from whatever the agent's select
// (and, with none, from what git selects by default: the whole tree for
// diff and log, the current directory for grep).
//
// Where a tool can't say what the denylist says, the exclusion covers more,
// never less: grep matches base names only, so a pattern with directories
// (".aws/credentials") leaves out the directory named in it (".aws"), and a
// closed file leaves out every file of its base name (a loose object's name
// is 38 hex digits: only itself); rg and git match anchored patterns
// ("/x") at any depth and are told the rest exactly.
//
// The one error: git --literal-pathspecs turns the pathspec magic off, so
// harnessd could not exclude anything.
func shieldArgv(argv, patterns, closed []string) ([]string, error) {
	if len(argv) == 0 || (len(patterns) == 0 && len(closed) == 0) {
		return argv, nil
	}
	switch path.Base(argv[0]) {
	case "git":
		return shieldGit(argv, patterns, closed)
	case "rg":
		return insertAt(argv, rgOptions().end(argv), rgExclusions(patterns, closed)), nil
	case "grep", "egrep", "fgrep":
		return insertAt(argv, grepOptions().end(argv), grepExclusions(patterns, closed)), nil
	}
	return argv, nil
}

// closedFiles returns the files the sandbox closes to argv that the secret
// patterns don't name (so shieldArgv must be told them): the loose objects
// of secret blobs and the other names of hard-linked secret files. Only
// grep and rg need them (a recursive read opens every file; git opens its
// objects by name), and only where the kernel closes anything. An error
// of the policy is left to the confinement that follows, which fails the
// same way.
func closedFiles(ctx context.Context, c *op.Call, argv []string) []string {
	if len(argv) == 0 || !c.Env.Confines(sandbox.Read) {
		return nil
	}
	switch path.Base(argv[0]) {
	case "rg", "grep", "egrep", "fgrep":
	default:
		return nil
	}
	p, err := c.Env.Policy(ctx, sandbox.Read, c.Repo)
	if err != nil {
		return nil
	}
	deny := c.Root.Deny() // the root's own list (its exceptions too)
	var out []string
	for _, s := range p.Secrets {
		if _, ok := deny.Match(s); !ok {
			out = append(out, s)
		}
	}
	return out
}

// options describes how a program parses its options, as far as finding
// where options added after the agent's go.
type options struct {
	short  string          // short option letters that take a value
	long   map[string]bool // long option names; true: takes a value (unless attached with "=")
	abbrev bool            // unique prefixes of long names are accepted (getopt_long)
}

// end returns the index in argv where options added after the agent's
// keep their meaning: the "--" that ends the options (not one that is an
// option's value), else the end, except in front of a trailing option
// still waiting for its value.
func (o options) end(argv []string) int {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			return i
		}
		if o.takesValue(a) {
			if i+1 == len(argv) {
				return i
			}
			i++
		}
	}
	return len(argv)
}

// takesValue reports whether a is an option whose value is the next
// argument.
func (o options) takesValue(a string) bool {
	switch {
	case strings.HasPrefix(a, "--"):
		name, _, attached := strings.Cut(a[2:], "=")
		return !attached && o.longValue(name)
	case len(a) > 1 && a[0] == '-':
		for j := 1; j < len(a); j++ {
			if strings.IndexByte(o.short, a[j]) >= 0 {
				return j == len(a)-1
			}
		}
	}
	return false
}

// longValue reports whether the long option name takes a value. An
// abbreviation that could be several options counts as taking one when any
// of them does (the tool refuses the ambiguity before reading anything).
func (o options) longValue(name string) bool {
	if v, ok := o.long[name]; ok {
		return v
	}
	if !o.abbrev || name == "" {
		return false
	}
	for full, v := range o.long {
		if v && strings.HasPrefix(full, name) {
			return true
		}
	}
	return false
}

// grepOptions() are GNU grep's (3.x) options.
func grepOptions() options {
	return options{short: "ABCDXdefm", abbrev: true, long: map[string]bool{
		"after-context": true, "before-context": true, "context": true, "devices": true, "directories": true,
		"regexp": true, "file": true, "max-count": true, "include": true, "exclude": true, "exclude-from": true,
		"exclude-dir": true, "label": true, "binary-files": true, "group-separator": true,
		"basic-regexp": false, "extended-regexp": false, "fixed-strings": false, "perl-regexp": false,
		"byte-offset": false, "color": false, "colour": false, "count": false, "dereference-recursive": false,
		"files-with-matches": false, "files-without-match": false, "help": false, "ignore-case": false,
		"no-ignore-case": false, "initial-tab": false, "line-buffered": false, "line-number": false,
		"line-regexp": false, "no-filename": false, "no-group-separator": false, "no-messages": false,
		"null": false, "null-data": false, "only-matching": false, "quiet": false, "recursive": false,
		"invert-match": false, "silent": false, "text": false, "binary": false, "unix-byte-offsets": false,
		"version": false, "with-filename": false, "word-regexp": false,
	}}
}

// rgOptions() are ripgrep's (13 and 14) options that take a value; rg takes
// no abbreviations.
func rgOptions() options {
	return options{short: "ABCEMTdefgjmrt", long: map[string]bool{
		"after-context": true, "before-context": true, "color": true, "colors": true, "context": true,
		"context-separator": true, "dfa-size-limit": true, "encoding": true, "engine": true,
		"field-context-separator": true, "field-match-separator": true, "file": true, "glob": true,
		"iglob": true, "ignore-file": true, "max-columns": true, "max-count": true, "max-depth": true,
		"maxdepth": true, "max-filesize": true, "path-separator": true, "pre": true, "pre-glob": true,
		"regex-size-limit": true, "regexp": true, "replace": true, "sort": true, "sortr": true,
		"threads": true, "type": true, "type-add": true, "type-clear": true, "type-not": true,
		"hostname-bin": true, "hyperlink-format": true, "generate": true,
	}}
}

// grepExclusions returns GNU grep's options that leave out the secret
// paths and the closed files. grep matches --exclude against a file's base
// name and --exclude-dir against a directory's, with fnmatch and
// case-sensitively: each pattern is spelled case-insensitively ([eE]) and
// its braces expanded.
func grepExclusions(patterns, closed []string) []string {
	var out []string
	add := func(opt, glob string) {
		if s := opt + glob; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, p := range patterns {
		for _, q := range expandBraces(normPattern(p)) {
			files, dirs := grepGlobs(q)
			for _, g := range files {
				add("--exclude=", foldCase(g))
			}
			for _, g := range dirs {
				add("--exclude-dir=", foldCase(g))
			}
		}
	}
	for _, c := range closed {
		add("--exclude=", escapeGlob(path.Base(c)))
	}
	return out
}

// grepGlobs returns the base-name globs of the files and directories grep
// must leave out for a normalised pattern q to be covered: every path q
// matches is a file or directory whose base name matches one of files or
// dirs, or lies below a directory whose base name matches one of dirs.
func grepGlobs(q string) (files, dirs []string) {
	segs := strings.Split(q, "/")
	last := segs[len(segs)-1]
	switch {
	case len(segs) == 1 && last == "**":
		return []string{"*"}, []string{"*"}
	case len(segs) == 1:
		// The name matches a file, or a directory the sandbox closes whole.
		return []string{last}, []string{last}
	case last == "**":
		// "d/**" matches d itself and everything below it.
		for k := len(segs) - 2; k >= 0; k-- {
			if segs[k] != "**" && segs[k] != "" {
				return []string{segs[k]}, []string{segs[k]}
			}
		}
		return []string{"*"}, []string{"*"}
	}
	// Every path "a/b" matches lies below a directory named a: leave that
	// out rather than every file named b (".kube/config": not every
	// config).
	for k := len(segs) - 2; k >= 0; k-- {
		if segs[k] != "**" && segs[k] != "" && !hasMeta(segs[k]) {
			return nil, []string{segs[k]}
		}
	}
	return []string{last}, []string{last}
}

// rgExclusions returns rg's options that leave out the secret paths and
// the closed files: --iglob (case-insensitive, and after every -g) with a
// leading "!" (exclude) and "**/" (any depth below the directory rg runs
// in); "d/**" leaves out d itself, so rg never lists a directory the
// sandbox closes.
func rgExclusions(patterns, closed []string) []string {
	var out []string
	add := func(glob string) {
		if s := "--iglob=!" + glob; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, p := range patterns {
		for _, q := range expandBraces(normPattern(p)) {
			for strings.HasSuffix(q, "/**") {
				q = strings.TrimSuffix(q, "/**")
			}
			if q == "**" {
				add("**")
				continue
			}
			add("**/" + q)
		}
	}
	for _, c := range closed {
		add("**/" + escapeGlob(path.Base(c)))
	}
	return out
}

// gitTreeReader reports the git subcommands that print file contents of
// many paths and take pathspecs.
func gitTreeReader(sub string) bool {
	switch sub {
	case "diff", "log", "show", "grep", "whatchanged", "diff-tree", "diff-index", "diff-files":
		return true
	}
	return false
}

// gitGlobalValue() are git's options before the subcommand that take the
// next argument as their value.
func gitGlobalValue() map[string]bool {
	return map[string]bool{
		"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true,
		"--super-prefix": true, "--config-env": true, "--attr-source": true,
	}
}

// gitGrepOptions() are git grep's options that take a value (parse-options:
// abbreviations accepted).
func gitGrepOptions() options {
	return options{short: "efABCmO", abbrev: true, long: map[string]bool{
		"max-depth": true, "threads": true, "context": true, "after-context": true, "before-context": true,
		"max-count": true, "open-files-in-pager": false, "and": false, "or": false, "not": false,
	}}
}

// gitRevValue() are options of git log, show, diff and the diff plumbing
// that take the next argument as their value.
func gitRevValue() options {
	return options{short: "nSGOLlI", long: map[string]bool{
		"max-count": true, "skip": true, "max-age": true, "min-age": true, "since": true, "after": true,
		"until": true, "before": true, "author": true, "committer": true, "grep": true, "grep-reflog": true,
		"exclude": true, "exclude-hidden": true, "decorate-refs": true, "decorate-refs-exclude": true,
		"diff-merges": true, "find-object": true, "anchored": true, "ignore-matching-lines": true,
		"word-diff-regex": true, "color-moved-ws": true, "src-prefix": true, "dst-prefix": true,
		"line-prefix": true, "inter-hunk-context": true, "diff-algorithm": true, "rotate-to": true,
		"skip-to": true, "since-as-filter": true, "output": true,
	}}
}

// shieldGit appends exclude pathspecs to a git tree reader. They go last:
// after "--" they are paths; without it git takes trailing arguments that
// are no revision as paths, and ":(...)" pathspecs never are one (git grep
// takes them after its pattern). A trailing option still waiting for its
// value keeps waiting (they go in front of it); any other trailing option
// gets a first copy of the first pathspec, so that an option that takes a
// value takes the copy. --follow and -L take exactly one path and no
// pathspec: they are left alone (pathsafe checked the path they name).
func shieldGit(argv, patterns, closed []string) ([]string, error) {
	i := 1
	literal := false
	for i < len(argv) && strings.HasPrefix(argv[i], "-") && argv[i] != "--" {
		a := argv[i]
		if a == "--literal-pathspecs" {
			literal = true
		}
		if gitGlobalValue()[a] {
			i++
		}
		i++
	}
	if i >= len(argv) || !gitTreeReader(argv[i]) {
		return argv, nil
	}
	sub, rest := argv[i], argv[i+1:]
	if literal {
		return nil, errs.New(errs.InvalidArgument, "git --literal-pathspecs turns off the pathspec magic harnessd leaves secret paths out with: drop it (quote a path with the :(literal) pathspec magic instead)")
	}
	dashdash := -1
	opts := gitRevValue()
	if sub == "grep" {
		opts = gitGrepOptions()
	}
	pattern := false // git grep: a pattern is given (-e, -f or the first operand)
	inOpts := true   // git grep's options stop at its first operand
	for k := 0; k < len(rest); k++ {
		a := rest[k]
		if a == "--" {
			dashdash = k
			break
		}
		if !inOpts {
			continue
		}
		switch {
		case sub == "grep" && (a == "-" || !strings.HasPrefix(a, "-")):
			pattern, inOpts = true, false
			continue
		case sub == "grep" && grepPatternOption(a):
			pattern = true
		case sub != "grep" && (a == "--follow" || strings.HasPrefix(a, "-L")):
			return argv, nil
		}
		if opts.takesValue(a) {
			k++
		}
	}
	if sub == "grep" && !pattern && dashdash < 0 {
		return argv, nil // no pattern: git refuses the command before reading anything
	}
	extra := gitExclusions(patterns, closed)
	if len(extra) == 0 {
		return argv, nil
	}
	at := len(argv)
	if dashdash < 0 && len(rest) > 0 {
		last := rest[len(rest)-1]
		switch {
		case opts.takesValue(last):
			at = len(argv) - 1
		case strings.HasPrefix(last, "-") && last != "-":
			extra = append([]string{extra[0]}, extra...)
		}
	}
	return insertAt(argv, at, extra), nil
}

// grepPatternOption reports whether a gives git grep a pattern: -e or -f,
// alone or ending a cluster of flags.
func grepPatternOption(a string) bool {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return false
	}
	for j := 1; j < len(a); j++ {
		if strings.IndexByte(gitGrepOptions().short, a[j]) >= 0 {
			return a[j] == 'e' || a[j] == 'f'
		}
	}
	return false
}

// gitExclusions returns the exclude pathspecs of the secret patterns
// (matched from the top of the work tree, as globs, ignoring case; at any
// depth unless anchored with "/"; a match and everything below it) and of
// the closed files outside .git (literally).
func gitExclusions(patterns, closed []string) []string {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	const magic = ":(exclude,top,glob,icase)"
	for _, p := range patterns {
		anchored := strings.HasPrefix(strings.TrimSpace(p), "/")
		for _, q := range expandBraces(normPattern(p)) {
			for strings.HasSuffix(q, "/**") {
				q = strings.TrimSuffix(q, "/**")
			}
			if !anchored && q != "**" && !strings.HasPrefix(q, "**/") {
				q = "**/" + q
			}
			add(magic + q)
			add(magic + q + "/**")
		}
	}
	for _, c := range closed {
		if c != ".git" && !strings.HasPrefix(c, ".git/") {
			add(":(exclude,top,literal)" + c)
		}
	}
	return out
}

// normPattern spells a denylist pattern as pathsafe compiles it, without
// its anchor: trimmed, no leading "/", a trailing "/" as "/**".
func normPattern(p string) string {
	p = strings.TrimLeft(strings.TrimSpace(p), "/")
	if strings.HasSuffix(p, "/") {
		p = strings.TrimRight(p, "/") + "/**"
	}
	return p
}

// hasMeta reports whether s has glob syntax.
func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[]{}\`) }

// escapeGlob quotes the glob syntax in a file name.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]{}\!`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// maxBraceAlternatives bounds the brace expansion of one pattern: past it,
// every group is spelled "*" (it leaves out more, never less).
const maxBraceAlternatives = 64

// expandBraces expands doublestar's {a,b} alternatives (for grep's
// fnmatch and git's wildmatch, which have none, and rg, which nests none).
func expandBraces(s string) []string {
	out := []string{}
	var expand func(s string) bool
	expand = func(s string) bool {
		open, close, alts := braceGroup(s)
		if open < 0 {
			out = append(out, s)
			return len(out) <= maxBraceAlternatives
		}
		for _, a := range alts {
			if !expand(s[:open] + a + s[close+1:]) {
				return false
			}
		}
		return true
	}
	if !expand(s) {
		for {
			open, close, _ := braceGroup(s)
			if open < 0 {
				return []string{oneStar(s)}
			}
			s = s[:open] + "*" + s[close+1:]
		}
	}
	for i, o := range out {
		out[i] = oneStar(o)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// oneStar spells a run of stars inside a path component as one star: "**"
// is doublestar's (and rg's) only as a whole component, and rg refuses it
// elsewhere.
func oneStar(s string) string {
	segs := strings.Split(s, "/")
	for i, g := range segs {
		if g == "**" {
			continue
		}
		for strings.Contains(g, "**") && !strings.Contains(g, `\*`) {
			g = strings.ReplaceAll(g, "**", "*")
		}
		segs[i] = g
	}
	return strings.Join(segs, "/")
}

// braceGroup finds the first brace group of s outside bracket expressions
// and escapes, and its top-level alternatives (-1 when there is none).
func braceGroup(s string) (open, close int, alts []string) {
	open = -1
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '[' && depth == 0:
			if j := bracketEnd(s, i); j > i {
				i = j
			}
		case c == '{':
			if depth == 0 {
				open, start = i, i+1
			}
			depth++
		case c == ',' && depth == 1:
			alts = append(alts, s[start:i])
			start = i + 1
		case c == '}' && depth > 0:
			depth--
			if depth == 0 {
				return open, i, append(alts, s[start:i])
			}
		}
	}
	return -1, -1, nil
}

// bracketEnd returns the index of the "]" closing the bracket expression
// at s[i] ("[" itself), or -1.
func bracketEnd(s string, i int) int {
	j := i + 1
	if j < len(s) && (s[j] == '!' || s[j] == '^') {
		j++
	}
	if j < len(s) && s[j] == ']' {
		j++
	}
	for ; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case ']':
			return j
		}
	}
	return -1
}

// foldCase spells an fnmatch glob so that it matches regardless of the
// case of ASCII letters: a letter outside brackets becomes [xX], a bracket
// expression gets the other case of each letter and range.
func foldCase(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case c == '\\' && i+1 < len(g):
			i++
			if isLetter(g[i]) {
				b.WriteString(bothCases(g[i]))
			} else {
				b.WriteByte('\\')
				b.WriteByte(g[i])
			}
		case c == '[':
			j := bracketEnd(g, i)
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(foldBracket(g[i : j+1]))
			i = j
		case isLetter(c):
			b.WriteString(bothCases(c))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// foldBracket adds the other case of every letter and letter range to a
// bracket expression ("[a-c]" -> "[a-cA-C]").
func foldBracket(br string) string {
	body := br[1 : len(br)-1]
	head := ""
	if body != "" && (body[0] == '!' || body[0] == '^') {
		head, body = "!", body[1:]
	}
	var extra strings.Builder
	for k := 0; k < len(body); k++ {
		c := body[k]
		if c == '\\' && k+1 < len(body) {
			k++
			c = body[k]
		}
		if k+2 < len(body) && body[k+1] == '-' && body[k+2] != ']' {
			lo, hi := c, body[k+2]
			k += 2
			if isLetter(lo) && isLetter(hi) && isUpper(lo) == isUpper(hi) {
				extra.WriteByte(swapCase(lo))
				extra.WriteByte('-')
				extra.WriteByte(swapCase(hi))
			}
			continue
		}
		if isLetter(c) {
			extra.WriteByte(swapCase(c))
		}
	}
	return "[" + head + body + extra.String() + "]"
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

func swapCase(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c - ('a' - 'A')
}

func bothCases(c byte) string {
	lo := c
	if isUpper(c) {
		lo = swapCase(c)
	}
	return "[" + string(lo) + string(swapCase(lo)) + "]"
}

func insertAt(argv []string, at int, extra []string) []string {
	if len(extra) == 0 {
		return argv
	}
	out := make([]string, 0, len(argv)+len(extra))
	out = append(out, argv[:at]...)
	out = append(out, extra...)
	return append(out, argv[at:]...)
}
