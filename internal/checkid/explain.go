package checkid

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/internal/gitx"
)

// Parts is what the check actor stores with evidence so that a later miss
// can be explained.
type Parts struct {
	Revision   Revision   `json:"revision"`
	Definition Definition `json:"definition"`
	Env        Env        `json:"env"`
}

// maxListedFiles caps the files named by one reason and the per-file
// reasons.
const maxListedFiles = 10

// maxValueLen caps a value quoted in a reason.
const maxValueLen = 120

// explainMaxOut bounds the git output ExplainMiss reads.
const explainMaxOut = 1 << 20

// Empty tree object ids, which git knows without storing them.
const (
	emptyTreeSHA1   = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	emptyTreeSHA256 = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
)

// ExplainMiss returns human reasons why cur's identity differs from prev's,
// most specific first: per-file changes ("src/a.go changed (modified since
// the evidence)", "src/b.go is new", "src/c.go was deleted", at most 10 and
// a count of the rest), a HEAD move with the files that changed between the
// two trees (one `git diff --name-only` in root), environment variables,
// tool versions, the definition's argv, cwd, effects and timeout, and
// finally "schema changed" when a stored digest no longer matches its parts.
// It returns nil when nothing differs. git failures degrade a reason, they
// never drop it.
func ExplainMiss(ctx context.Context, g *gitx.Git, root string, prev, cur Parts) []string {
	if g == nil {
		g = &gitx.Git{}
	}
	var reasons []string
	reasons = append(reasons, fileReasons(ctx, g, root, prev.Revision, cur.Revision)...)
	if r := headReason(ctx, g, root, prev.Revision, cur.Revision); r != "" {
		reasons = append(reasons, r)
	}
	reasons = append(reasons, envReasons(prev.Env, cur.Env)...)
	reasons = append(reasons, definitionReasons(prev.Definition, cur.Definition)...)
	if schemaChanged(prev) || schemaChanged(cur) {
		reasons = append(reasons, fmt.Sprintf("schema changed (evidence computed differently than by schema %d)", SchemaVersion))
	}
	return reasons
}

// fileReasons compares the dirty maps path by path.
func fileReasons(ctx context.Context, g *gitx.Git, root string, prev, cur Revision) []string {
	union := make([]string, 0, len(prev.Dirty)+len(cur.Dirty))
	for p, v := range prev.Dirty {
		if cv, ok := cur.Dirty[p]; !ok || cv != v {
			union = append(union, p)
		}
	}
	for p := range cur.Dirty {
		if _, ok := prev.Dirty[p]; !ok {
			union = append(union, p)
		}
	}
	if len(union) == 0 {
		return nil
	}
	sort.Strings(union)
	shown := union[:min(len(union), maxListedFiles)]

	// Which of the paths that appeared with content are tracked in the
	// current tree ("changed") rather than new.
	var probe []string
	for _, p := range shown {
		_, inPrev := prev.Dirty[p]
		if cv, inCur := cur.Dirty[p]; inCur && cv != DirtyDeleted && (!inPrev || prev.Dirty[p] == DirtyDeleted) {
			probe = append(probe, p)
		}
	}
	tracked, trackedKnown := trackedPaths(ctx, g, root, cur.Tree, probe)

	reasons := make([]string, 0, len(shown)+1)
	for _, p := range shown {
		pv, inPrev := prev.Dirty[p]
		cv, inCur := cur.Dirty[p]
		var r string
		switch {
		case inCur && cv == DirtyDeleted:
			r = p + " was deleted"
		case !inCur && pv == DirtyDeleted:
			r = p + " was restored to the committed version"
		case !inCur:
			r = p + " changed (now matches the committed version)"
		case !inPrev || pv == DirtyDeleted:
			switch {
			case !trackedKnown:
				r = p + " changed (modified or new since the evidence)"
			case tracked[p] && pv == DirtyDeleted:
				r = p + " was restored and changed (modified since the evidence)"
			case tracked[p]:
				r = p + " changed (modified since the evidence)"
			default:
				r = p + " is new"
			}
		default:
			r = p + " changed (modified since the evidence)"
		}
		reasons = append(reasons, r)
	}
	if rest := len(union) - len(shown); rest > 0 {
		reasons = append(reasons, fmt.Sprintf("and %d more %s changed", rest, plural(rest, "file", "files")))
	}
	return reasons
}

// trackedPaths reports which of paths exist in tree, with one git ls-tree.
// ok is false when that could not be determined.
func trackedPaths(ctx context.Context, g *gitx.Git, root, tree string, paths []string) (map[string]bool, bool) {
	set := map[string]bool{}
	if len(paths) == 0 || tree == "" {
		return set, true
	}
	if !isOID(tree) {
		return nil, false
	}
	for _, p := range paths {
		if gitx.ValidatePathspec(p) != nil {
			return nil, false
		}
	}
	args := append([]string{"--literal-pathspecs", "ls-tree", "-z", "--name-only", "--full-tree", tree, "--"}, paths...)
	out, truncated, err := g.Run(ctx, root, explainMaxOut, args...)
	if err != nil || truncated {
		return nil, false
	}
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) > 0 {
			set[string(rec)] = true
		}
	}
	return set, true
}

// headReason explains a tree change; commits alone do not change identity.
func headReason(ctx context.Context, g *gitx.Git, root string, prev, cur Revision) string {
	if prev.Tree == cur.Tree {
		return ""
	}
	from, to := shortRef(prev.Head, prev.Tree), shortRef(cur.Head, cur.Tree)
	if prev.Head == cur.Head {
		from, to = "tree "+short(prev.Tree), "tree "+short(cur.Tree)
	}
	r := "HEAD moved from " + from + " to " + to
	a, b := prev.Tree, cur.Tree
	if a == "" {
		a = emptyTree(b)
	}
	if b == "" {
		b = emptyTree(a)
	}
	if !isOID(a) || !isOID(b) {
		return r + " (changed files unknown)"
	}
	out, truncated, err := g.Run(ctx, root, explainMaxOut,
		"diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", "--name-only", "-z", a, b, "--")
	if err != nil {
		return r + " (changed files unknown: " + clip(err.Error()) + ")"
	}
	var files []string
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) > 0 {
			files = append(files, string(rec))
		}
	}
	if truncated && len(files) > 0 {
		files = files[:len(files)-1] // the last record may be cut
	}
	count := strconv.Itoa(len(files))
	if truncated {
		count = "more than " + count
	}
	if len(files) == 0 && !truncated {
		return r + " (no file changes)"
	}
	shown := files[:min(len(files), maxListedFiles)]
	list := strings.Join(shown, ", ")
	if rest := len(files) - len(shown); rest > 0 || truncated {
		list += ", ..."
	}
	return fmt.Sprintf("%s: %s %s changed: %s", r, count, plural(len(files), "file", "files"), list)
}

func emptyTree(other string) string {
	if len(other) == 64 {
		return emptyTreeSHA256
	}
	return emptyTreeSHA1
}

func shortRef(head, tree string) string {
	if head == "" {
		if tree == "" {
			return "(unborn)"
		}
		return "tree " + short(tree)
	}
	return short(head)
}

func short(oid string) string {
	if len(oid) > 7 {
		return oid[:7]
	}
	return oid
}

// envReasons compares variables and tools.
func envReasons(prev, cur Env) []string {
	var reasons []string
	for _, k := range changedKeys(prev.Vars, cur.Vars) {
		pv, pok := prev.Vars[k]
		cv, cok := cur.Vars[k]
		from, to := quoteValue(pv, pok, cv, cok), quoteValue(cv, cok, pv, pok)
		reasons = append(reasons, fmt.Sprintf("variable %s changed from %s to %s", k, from, to))
	}
	for _, k := range changedKeys(prev.Tools, cur.Tools) {
		pv, pok := prev.Tools[k]
		cv, cok := cur.Tools[k]
		from, to := quoteValue(pv, pok, cv, cok), quoteValue(cv, cok, pv, pok)
		if strings.HasPrefix(pv, "sha256:") || strings.HasPrefix(cv, "sha256:") {
			reasons = append(reasons, fmt.Sprintf("executable %s changed (path, size or modification time)", k))
			continue
		}
		reasons = append(reasons, fmt.Sprintf("%s version changed from %s to %s", k, from, to))
	}
	return reasons
}

// quoteValue quotes a value for a reason. An absent value reads as "" unless
// the other side is present and empty, where it reads as unset.
func quoteValue(v string, present bool, other string, otherPresent bool) string {
	if !present && otherPresent && other == "" {
		return "unset"
	}
	return strconv.Quote(clip(v))
}

// changedKeys returns the sorted keys whose presence or value differs.
func changedKeys(a, b map[string]string) []string {
	var keys []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// definitionReasons compares the parts of two definitions.
func definitionReasons(prev, cur Definition) []string {
	var reasons []string
	if !slices.Equal(prev.Argv, cur.Argv) {
		reasons = append(reasons, "argv changed from "+quoteList(prev.Argv)+" to "+quoteList(cur.Argv))
	}
	if pc, cc := canonicalCwd(prev.Cwd), canonicalCwd(cur.Cwd); pc != cc {
		reasons = append(reasons, fmt.Sprintf("cwd changed from %q to %q", clip(pc), clip(cc)))
	}
	if pe, ce := canonicalEffects(prev.Effects), canonicalEffects(cur.Effects); !slices.Equal(pe, ce) {
		reasons = append(reasons, "effects changed from "+quoteList(pe)+" to "+quoteList(ce))
	}
	if prev.TimeoutMs != cur.TimeoutMs {
		reasons = append(reasons, fmt.Sprintf("timeout changed from %d ms to %d ms", prev.TimeoutMs, cur.TimeoutMs))
	}
	return reasons
}

// schemaChanged reports that a stored digest does not match its parts as
// this schema computes them: the evidence predates a schema change.
func schemaChanged(p Parts) bool {
	if p.Revision.Digest != "" && p.Revision.Digest != p.Revision.ComputeDigest() {
		return true
	}
	return p.Env.Digest != "" && p.Env.Digest != p.Env.ComputeDigest()
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return clip("[" + strings.Join(q, " ") + "]")
}

// clip bounds s for a message, keeping valid UTF-8.
func clip(s string) string {
	if len(s) <= maxValueLen {
		return s
	}
	return strings.ToValidUTF8(s[:maxValueLen], "") + "..."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
