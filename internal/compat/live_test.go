package compat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The live index's answers against git and rg run directly: git_status,
// git_diff and search, each answered in process (source index or cache)
// and compared byte for byte with what a person types, on the clean tree
// and again after an edit made behind harnessd's back in both copies.
//
// What the API structures differently, and how it is brought to git's
// form (nothing else is normalised):
//   - git_status is a structure: it is printed as `git status
//     --porcelain=v1 -z --branch --untracked-files=all` prints it
//     (porcelainV1), and its head is compared with `git rev-parse HEAD`.
//     The API lists every untracked file (-uall), not their directories.
//   - git_diff's patch is compared as it is with `git diff`; its files
//     with `git diff --numstat`.
//   - search's matches are printed as `rg --line-number --column
//     --no-heading --with-filename` prints them (a match's text is its
//     line without the line's end: rg's CR of a CRLF line is dropped) and
//     both sides sorted
//     (harnessd orders by path, rg's --sort=path by path component); rg
//     runs with --hidden --glob=!.git (harnessd searches dotfiles and
//     never .git) and --max-filesize=512K (harnessd's documented bound);
//     a line harnessd cut at 500 characters (flagged cut) is compared as
//     far as it goes.

// liveDeadline bounds the wait for a view (or its search index) to warm.
const liveDeadline = 90 * time.Second

// transient reports whether an exec answer's index_reason says the view
// is still warming (an answer in process follows), not that the index
// declined for good.
func transient(reason string) bool {
	return strings.Contains(reason, "is starting") || strings.Contains(reason, "is building")
}

// liveCall calls a read the live index answers until it answers in
// process or says why it will not (an index_reason that is not warming).
func (e *env) liveCall(name string, args map[string]any) answer {
	args["repo_id"] = e.repoID
	deadline := time.Now().Add(liveDeadline)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		a := e.h.call(time.Minute, name, args)
		if a.isErr || a.str("source") != "exec" || !transient(a.str("index_reason")) || time.Now().After(deadline) {
			return a
		}
		<-tick.C
	}
}

// fromIndex is the reason an answer that did not come from the live index
// differs, or "".
func fromIndex(a answer) string {
	switch s := a.str("source"); s {
	case "index", "cache":
		return ""
	default:
		return fmt.Sprintf("source %s, not the live index (%s)", s, a.str("index_reason"))
	}
}

// porcelainLetter is git's status letter for an entry status.
var porcelainLetter = map[string]byte{
	"modified": 'M', "added": 'A', "deleted": 'D', "renamed": 'R', "copied": 'C', "type_changed": 'T', "unmerged": 'U',
}

// apiEntry is one entry of git_status as the API answers it.
type apiEntry struct {
	Path, OrigPath, Status string
}

// apiStatus is git_status's answer as the API structures it.
type apiStatus struct {
	Branch, Head, Upstream string
	Detached               bool
	Ahead, Behind          int
	Staged, Unstaged       []apiEntry
	Untracked              []string
}

func entriesOf(v any) []apiEntry {
	var out []apiEntry
	l, _ := v.([]any)
	for _, x := range l {
		m, _ := x.(map[string]any)
		var en apiEntry
		en.Path, _ = m["path"].(string)
		en.OrigPath, _ = m["orig_path"].(string)
		en.Status, _ = m["status"].(string)
		out = append(out, en)
	}
	return out
}

func statusOf(a answer) apiStatus {
	s := apiStatus{Branch: a.str("branch"), Head: a.str("head"), Upstream: a.str("upstream"), Detached: a.get("detached") == true,
		Staged: entriesOf(a.get("staged")), Unstaged: entriesOf(a.get("unstaged"))}
	s.Ahead, _ = a.num("ahead")
	s.Behind, _ = a.num("behind")
	u, _ := a.get("untracked").([]any)
	for _, x := range u {
		if p, ok := x.(string); ok {
			s.Untracked = append(s.Untracked, p)
		}
	}
	return s
}

// porcelainV1 prints a status as `git status --porcelain=v1 -z --branch
// --untracked-files=all` does: the branch header, then one entry per
// changed path in path order (its staged and unstaged letters), then the
// untracked files.
func porcelainV1(s apiStatus) string {
	var b strings.Builder
	switch {
	case s.Detached:
		b.WriteString("## HEAD (no branch)")
	case s.Head == "":
		b.WriteString("## No commits yet on " + s.Branch)
	default:
		b.WriteString("## " + s.Branch)
		if s.Upstream != "" {
			b.WriteString("..." + s.Upstream)
			switch {
			case s.Ahead > 0 && s.Behind > 0:
				fmt.Fprintf(&b, " [ahead %d, behind %d]", s.Ahead, s.Behind)
			case s.Ahead > 0:
				fmt.Fprintf(&b, " [ahead %d]", s.Ahead)
			case s.Behind > 0:
				fmt.Fprintf(&b, " [behind %d]", s.Behind)
			}
		}
	}
	b.WriteByte(0)
	type line struct {
		x, y       byte
		path, orig string
	}
	lines := map[string]*line{}
	get := func(p string) *line {
		if lines[p] == nil {
			lines[p] = &line{x: ' ', y: ' ', path: p}
		}
		return lines[p]
	}
	for _, en := range s.Staged {
		l := get(en.Path)
		l.x, l.orig = porcelainLetter[en.Status], en.OrigPath
	}
	for _, en := range s.Unstaged {
		get(en.Path).y = porcelainLetter[en.Status]
	}
	var paths []string
	for p := range lines {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		l := lines[p]
		fmt.Fprintf(&b, "%c%c %s\x00", l.x, l.y, l.path)
		if l.orig != "" {
			b.WriteString(l.orig + "\x00")
		}
	}
	untracked := append([]string(nil), s.Untracked...)
	sort.Strings(untracked)
	for _, p := range untracked {
		b.WriteString("?? " + p + "\x00")
	}
	return b.String()
}

// liveStatus compares git_status with git's porcelain and HEAD.
func (e *env) liveStatus() result {
	a := e.liveCall("git_status", map[string]any{})
	if a.isErr {
		return errResult(a, "")
	}
	var why []string
	if r := fromIndex(a); r != "" {
		why = append(why, r)
	}
	st := statusOf(a)
	d := runDirect(e.direct, []string{"git", "status", "--porcelain=v1", "-z", "--branch", "--untracked-files=all"}, time.Minute)
	got := porcelainV1(st)
	if d.exit != 0 {
		why = append(why, fmt.Sprintf("git status exit %d: %s", d.exit, d.stderr))
	} else if d.stdout != got {
		why = append(why, "status "+firstDiff(strings.ReplaceAll(d.stdout, "\x00", "\n"), strings.ReplaceAll(got, "\x00", "\n")))
	}
	head := runDirect(e.direct, []string{"git", "rev-parse", "HEAD"}, time.Minute)
	if h := strings.TrimSpace(head.stdout); h != st.Head {
		why = append(why, fmt.Sprintf("head %s directly, %s through harnessd", h, st.Head))
	}
	n := strings.Count(d.stdout, "\x00") - 1
	return result{identical: len(why) == 0, reason: strings.Join(why, "; "), detail: fmt.Sprintf("%d entries, source %s", n, a.str("source")),
		direct: strings.ReplaceAll(d.stdout, "\x00", "\n"), through: strings.ReplaceAll(got, "\x00", "\n")}
}

// numstat prints git_diff's files as `git diff --numstat` does.
func numstat(a answer) string {
	var b strings.Builder
	l, _ := a.get("files").([]any)
	for _, x := range l {
		m, _ := x.(map[string]any)
		p, _ := m["path"].(string)
		if m["binary"] == true {
			b.WriteString("-\t-\t" + p + "\n")
			continue
		}
		ad, _ := m["added"].(float64)
		de, _ := m["deleted"].(float64)
		fmt.Fprintf(&b, "%d\t%d\t%s\n", int(ad), int(de), p)
	}
	return b.String()
}

// liveDiff compares git_diff (the work tree against the index) with git
// diff.
func (e *env) liveDiff() result {
	a := e.liveCall("git_diff", map[string]any{})
	if a.isErr {
		return errResult(a, "")
	}
	var why []string
	if r := fromIndex(a); r != "" {
		why = append(why, r)
	}
	if a.get("truncated") == true {
		why = append(why, "harnessd truncated the diff")
	}
	if n := a.redactionField(); n > 0 {
		why = append(why, fmt.Sprintf("%d spurious redactions", n))
	}
	d := runDirect(e.direct, []string{"git", "diff"}, time.Minute)
	patch := a.str("patch")
	if d.exit != 0 {
		why = append(why, fmt.Sprintf("git diff exit %d: %s", d.exit, d.stderr))
	} else if d.stdout != patch {
		why = append(why, "patch "+firstDiff(d.stdout, patch))
	}
	ns := runDirect(e.direct, []string{"git", "diff", "--numstat"}, time.Minute)
	if got := numstat(a); ns.stdout != got {
		why = append(why, "files "+firstDiff(ns.stdout, got))
	}
	return result{identical: len(why) == 0, reason: strings.Join(why, "; "), redactions: a.redactionField(),
		detail: fmt.Sprintf("%d bytes, source %s", len(patch), a.str("source")), direct: d.stdout, through: patch}
}

// liveQuery is one search of the live comparisons.
type liveQuery struct {
	text  string
	regex bool
}

// liveQueries are the project's search words and grep word as literals,
// and a regex over its search words.
func (e *env) liveQueries() []liveQuery {
	var qs []liveQuery
	words := append(append([]string(nil), e.p.Search...), e.p.Grep)
	seen := map[string]bool{}
	for _, w := range words {
		if !seen[w] {
			seen[w] = true
			qs = append(qs, liveQuery{text: w})
		}
	}
	var quoted []string
	for _, w := range e.p.Search {
		quoted = append(quoted, regexp.QuoteMeta(w))
	}
	qs = append(qs, liveQuery{text: "(?:" + strings.Join(quoted, "|") + `)[A-Za-z0-9_]*[(.]`, regex: true})
	return qs
}

// rgLine is one match as rg prints it with --line-number --column
// --no-heading --with-filename.
func rgLine(path string, line, col int, text string) string {
	return path + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col) + ":" + text
}

// searchOnce compares one query's matches with rg's.
func (e *env) searchOnce(q liveQuery) (why []string, n int, source string) {
	argv := []string{"rg", "--line-number", "--column", "--no-heading", "--with-filename", "--hidden", "--glob=!.git", "--max-filesize=512K", "--no-config"}
	if !q.regex {
		argv = append(argv, "--fixed-strings")
	}
	argv = append(argv, "--regexp="+q.text)
	d := runDirect(e.direct, argv, time.Minute)
	if d.exit > 1 {
		return []string{fmt.Sprintf("%q: rg exit %d: %s", q.text, d.exit, d.stderr)}, 0, ""
	}
	var want []string
	for _, l := range strings.Split(strings.TrimSuffix(d.stdout, "\n"), "\n") {
		if l != "" {
			want = append(want, strings.TrimSuffix(l, "\r"))
		}
	}
	a := e.liveCall("search", map[string]any{"query": q.text, "regex": q.regex, "max_results": 500})
	if a.isErr {
		return []string{fmt.Sprintf("%q: %s", q.text, a.errText())}, 0, ""
	}
	if r := fromIndex(a); r != "" {
		why = append(why, fmt.Sprintf("%q: %s", q.text, r))
	}
	if k := max(countMarkers(strings.Join(a.strs, "\n")), a.redactionField()); k > 0 {
		why = append(why, fmt.Sprintf("%q: %d spurious redactions", q.text, k))
	}
	var got []string
	cutAt := map[string]string{}
	ms, _ := a.get("matches").([]any)
	for _, m := range ms {
		mm, _ := m.(map[string]any)
		p, _ := mm["path"].(string)
		ln, _ := mm["line"].(float64)
		col, _ := mm["column"].(float64)
		tx, _ := mm["text"].(string)
		l := rgLine(p, int(ln), int(col), tx)
		if mm["cut"] == true {
			cutAt[rgLine(p, int(ln), int(col), "")] = tx
		}
		got = append(got, l)
	}
	for i, l := range want {
		for key, tx := range cutAt {
			if strings.HasPrefix(l, key) && strings.HasPrefix(l[len(key):], tx) {
				want[i] = key + tx
			}
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if a.get("truncated") == true && len(want) > len(got) {
		// 500 asked: harnessd's first 500 in path order are compared.
		want = want[:len(got)]
	}
	if dw, dg := strings.Join(want, "\n"), strings.Join(got, "\n"); dw != dg {
		why = append(why, fmt.Sprintf("%q: %d matches directly, %d through harnessd, %s", q.text, len(want), len(got), firstDiff(dw, dg)))
	}
	return why, len(want), a.str("source")
}

// liveSearch compares the project's queries with rg.
func (e *env) liveSearch(qs []liveQuery) result {
	var why, counts []string
	for _, q := range qs {
		w, n, src := e.searchOnce(q)
		why = append(why, w...)
		counts = append(counts, fmt.Sprintf("%q %d (%s)", q.text, n, src))
	}
	return result{identical: len(why) == 0, reason: strings.Join(why, "; "), detail: strings.Join(counts, ", ")}
}

// liveEdit is the edit both copies get behind harnessd's back: a line of
// the patch file changed, a line appended to the first wc file, the last
// wc file deleted, a new file in a new directory. It keeps what it
// changed, to restore it.
type liveEdit struct {
	saved map[string][]byte // path -> original bytes (nil: created)
}

// editedWord is in the edited line: the search after the edit finds it.
const editedWord = "compatLiveIndexEdit"

func (e *env) editBoth() error {
	e.edit = &liveEdit{saved: map[string][]byte{}}
	patchFile, appendFile, deleteFile := e.p.Patch, e.p.Wc[0], e.p.Wc[len(e.p.Wc)-1]
	for _, root := range []string{e.direct, e.through} {
		body, err := os.ReadFile(filepath.Join(root, patchFile))
		if err != nil {
			return err
		}
		old := uniqueLine(string(body))
		if old == "" {
			return fmt.Errorf("%s has no line that occurs once", patchFile)
		}
		e.edit.saved[patchFile] = body
		if err := os.WriteFile(filepath.Join(root, patchFile), []byte(strings.Replace(string(body), old, old+" "+editedWord, 1)), 0o644); err != nil {
			return err
		}
		if appendFile != patchFile {
			b, err := os.ReadFile(filepath.Join(root, appendFile))
			if err != nil {
				return err
			}
			e.edit.saved[appendFile] = b
			if err := os.WriteFile(filepath.Join(root, appendFile), append(bytes.Clone(b), []byte("\n// "+editedWord+" appended\n")...), 0o644); err != nil {
				return err
			}
		}
		if deleteFile != patchFile && deleteFile != appendFile {
			b, err := os.ReadFile(filepath.Join(root, deleteFile))
			if err != nil {
				return err
			}
			e.edit.saved[deleteFile] = b
			if err := os.Remove(filepath.Join(root, deleteFile)); err != nil {
				return err
			}
		}
		created := filepath.Join(root, "compat-live", "notes.txt")
		if err := os.MkdirAll(filepath.Dir(created), 0o755); err != nil {
			return err
		}
		e.edit.saved["compat-live/notes.txt"] = nil
		if err := os.WriteFile(created, []byte("notes of the compat corpus: "+editedWord+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// restoreBoth undoes editBoth in both copies: the later actions (checks,
// the suite, the commit) see the pristine tree.
func (e *env) restoreBoth() error {
	if e.edit == nil {
		return nil
	}
	defer func() { e.edit = nil }()
	for _, root := range []string{e.direct, e.through} {
		for p, b := range e.edit.saved {
			if b == nil {
				if err := os.RemoveAll(filepath.Join(root, filepath.Dir(p))); err != nil {
					return err
				}
				continue
			}
			if err := os.WriteFile(filepath.Join(root, p), b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// editStatus makes the edit, then compares git_status.
func (e *env) editStatus() result {
	if err := e.editBoth(); err != nil {
		return result{reason: "edit: " + err.Error()}
	}
	return e.liveStatus()
}

// editDiff compares git_diff after the edit.
func (e *env) editDiff() result {
	if e.edit == nil {
		return result{reason: "the edit of edit-status was not made"}
	}
	return e.liveDiff()
}

// editSearch searches for the edited word and the project's queries after
// the edit, then restores both copies.
func (e *env) editSearch() result {
	if e.edit == nil {
		return result{reason: "the edit of edit-status was not made"}
	}
	res := e.liveSearch(append([]liveQuery{{text: editedWord}}, e.liveQueries()...))
	if err := e.restoreBoth(); err != nil {
		res.identical = false
		res.reason = strings.TrimPrefix(res.reason+"; restore: "+err.Error(), "; ")
	}
	return res
}

func TestPorcelainV1(t *testing.T) {
	tests := []struct {
		name string
		st   apiStatus
		want string
	}{
		{"clean", apiStatus{Branch: "main", Head: "abc"}, "## main\x00"},
		{"unborn", apiStatus{Branch: "main"}, "## No commits yet on main\x00"},
		{"detached", apiStatus{Detached: true, Head: "abc"}, "## HEAD (no branch)\x00"},
		{"upstream", apiStatus{Branch: "main", Head: "abc", Upstream: "origin/main", Ahead: 1, Behind: 2}, "## main...origin/main [ahead 1, behind 2]\x00"},
		{"entries in path order, both letters on one line, untracked last", apiStatus{Branch: "main", Head: "abc",
			Staged:    []apiEntry{{Path: "b.go", Status: "modified"}, {Path: "new.go", OrigPath: "old.go", Status: "renamed"}},
			Unstaged:  []apiEntry{{Path: "b.go", Status: "modified"}, {Path: "a.go", Status: "deleted"}},
			Untracked: []string{"z/u.txt", "c.txt"}},
			"## main\x00 D a.go\x00MM b.go\x00R  new.go\x00old.go\x00?? c.txt\x00?? z/u.txt\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcelainV1(tt.st); got != tt.want {
				t.Fatalf("porcelainV1 = %q, want %q", got, tt.want)
			}
		})
	}
}
