package compat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// result is one comparison: a project × an action.
type result struct {
	action    string
	identical bool
	// reason says why not, led by the cause: an error code, the exit
	// status, the output, or redactions.
	reason string
	// redactions counts harnessd's redactions in this case (all spurious:
	// the corpus holds no secret).
	redactions int
	// note is what a person had to do (an approval).
	note string
	// detail is what was compared ("142 files").
	detail string
	// direct and through are both normalised outputs, for
	// HARNESSD_COMPAT_DEBUG=1.
	direct, through string
	// took is the time of both runs.
	took time.Duration
	// exitDiffers: the exit statuses differ.
	exitDiffers bool
}

// env is one project during its run: its two copies and its daemon.
type env struct {
	p       project
	h       *harnessd
	repoID  string
	direct  string // the copy the direct runs use
	through string // the copy harnessd registered
	files   []string
	edit    *liveEdit // the live-index edit both copies have, until edit-search restores them
}

// action is one column of the table.
type action struct {
	id      string
	heading string
	kind    string // "go", "npm" or "" (both)
	run     func(e *env) result
	// retry: a test run, whose outcome may depend on the project's own
	// flaky tests; it runs once more when the outputs differ.
	retry bool
	// needs is a program the action needs on PATH beyond go and git.
	needs string
}

func (a action) applies(p project) bool { return a.kind == "" || a.kind == p.Kind }

// actions, in the order an agent would do them: look around, read,
// search, run a focused test, the suite, then change something.
var actions = []action{
	{id: "ls", heading: "`ls -la`", run: cmd([]string{"ls", "-la"}, false)},
	{id: "git-log", heading: "`git log --oneline -5`", run: cmd([]string{"git", "log", "--oneline", "-5"}, false)},
	{id: "go-version", heading: "`go version`", kind: "go", run: cmd([]string{"go", "version"}, false)},
	{id: "node-version", heading: "`node --version`", needs: "node", run: cmd([]string{"node", "--version"}, false)},
	{id: "go-list", heading: "`go list ./...`", kind: "go", run: cmd([]string{"go", "list", "./..."}, false)},
	{id: "go-vet", heading: "`go vet ./...`", kind: "go", run: cmd([]string{"go", "vet", "./..."}, true)},
	{id: "npm-ls", heading: "`npm ls`", kind: "npm", run: cmd([]string{"npm", "ls"}, false)},
	{id: "grep", heading: "`grep -rn W .`", run: func(e *env) result { return e.command(e.grepArgv(false), true) }},
	{id: "grep-include", heading: "`grep -rn W --include=*.go .` (`*.js`)", run: func(e *env) result { return e.command(e.grepArgv(true), true) }},
	{id: "grep-miss", heading: "`grep -rn` of a word in no file (exit 1)", run: cmd([]string{"grep", "-rn", "compatCorpusNoSuchWord", "."}, false)},
	{id: "wc", heading: "`wc -l` of 3 files", run: func(e *env) result { return e.command(append([]string{"wc", "-l"}, e.p.Wc...), false) }},
	{id: "read", heading: "`read_file` of every tracked file", run: (*env).read},
	{id: "search", heading: "`search` of 2 words", run: (*env).search},
	{id: "live-status", heading: "`git_status` from the live index against `git status --porcelain -z --branch -uall` and `git rev-parse HEAD`, clean tree", run: (*env).liveStatus},
	{id: "live-diff", heading: "`git_diff` from the live index against `git diff` and `git diff --numstat`, clean tree", run: (*env).liveDiff},
	{id: "live-search", heading: "`search` from the live index against `rg -n --column` of 3 words and a regex", run: func(e *env) result { return e.liveSearch(e.liveQueries()) }},
	{id: "edit-status", heading: "live-status after an edit behind harnessd's back (a line changed, a line appended, a file deleted, a new file in a new directory)", run: (*env).editStatus},
	{id: "edit-diff", heading: "live-diff after that edit", run: (*env).editDiff},
	{id: "edit-search", heading: "live-search after that edit, and of the edited word", run: (*env).editSearch},
	{id: "check", heading: "`run_check` focused test", retry: true, run: func(e *env) result { return e.check(e.p.Check, false) }},
	{id: "check-v", heading: "`run_check` focused test `-v`", kind: "go", retry: true, run: func(e *env) result { return e.check(e.p.checkVArgv(), true) }},
	{id: "suite", heading: "`job_start` full suite", retry: true, run: (*env).suite},
	{id: "commit", heading: "`apply_patch` + `git_stage` + `git_commit`", run: (*env).commit},
}

// cmd is the action of one read-only command.
func cmd(argv []string, sortLines bool) func(e *env) result {
	return func(e *env) result { return e.command(argv, sortLines) }
}

func isAction(id string) bool {
	for _, a := range actions {
		if a.id == id {
			return true
		}
	}
	return false
}

func actionIDs() []string {
	var ids []string
	for _, a := range actions {
		ids = append(ids, a.id)
	}
	return ids
}

func (e *env) grepArgv(include bool) []string {
	argv := []string{"grep", "-rn"}
	if e.p.Kind == "npm" {
		argv = append(argv, "--exclude-dir=node_modules") // what a person types in an npm project
	}
	argv = append(argv, e.p.Grep)
	if include {
		if e.p.Kind == "npm" {
			argv = append(argv, "--include=*.js")
		} else {
			argv = append(argv, "--include=*.go")
		}
	}
	return append(argv, ".")
}

// directResult is a command run directly in the direct copy.
type directResult struct {
	exit           int
	stdout, stderr string
	took           time.Duration
}

// goDirect runs argv directly in the background.
func goDirect(dir string, argv []string, timeout time.Duration) <-chan directResult {
	c := make(chan directResult, 1)
	go func() { c <- runDirect(dir, argv, timeout) }()
	return c
}

func runDirect(dir string, argv []string, timeout time.Duration) directResult {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = daemonEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := directResult{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	case errors.Is(err, exec.ErrNotFound):
		r.exit = 127
		r.stderr += err.Error()
	default:
		r.exit = -1
		r.stderr += err.Error()
	}
	return r
}

// compare compares one output of harnessd with the direct one.
func (e *env) compare(d directResult, exit int, stdout, stderr string, sortLines bool, field int, note string) result {
	var res result
	res.note = note
	markers := countMarkers(stdout+stderr) - countMarkers(d.stdout+d.stderr)
	res.redactions = max(markers, field, 0)
	var why []string
	if note != "" {
		why = append(why, note)
	}
	if d.exit != exit {
		res.exitDiffers = true
		why = append(why, fmt.Sprintf("exit %d directly, %d through harnessd", d.exit, exit))
	}
	if res.redactions > 0 {
		why = append(why, fmt.Sprintf("%d spurious redactions", res.redactions))
	}
	do, ho := normalize(d.stdout, e.direct, sortLines), normalize(stdout, e.through, sortLines)
	if do != ho {
		why = append(why, "stdout "+firstDiff(do, ho))
	}
	de, he := normalize(d.stderr, e.direct, sortLines), normalize(stderr, e.through, sortLines)
	if de != he {
		why = append(why, "stderr "+firstDiff(de, he))
	}
	res.identical = len(why) == 0
	res.reason = strings.Join(why, "; ")
	res.direct = fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", d.exit, do, de)
	res.through = fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", exit, ho, he)
	return res
}

func errResult(a answer, note string) result {
	r := result{reason: a.errText(), redactions: max(countMarkers(strings.Join(a.strs, "\n")), a.redactionField())}
	if note != "" {
		r.note = note
		r.reason = note + "; " + r.reason
	}
	return r
}

// fastPathCap is run_command's default timeout on the Fast Path.
const fastPathCap = 10 * time.Second

// command compares a read-only command: directly, and as run_command.
func (e *env) command(argv []string, sortLines bool) result {
	d := runDirect(e.direct, argv, 2*time.Minute)
	a, note := e.h.callAsPerson(2*time.Minute, "run_command", map[string]any{"repo_id": e.repoID, "argv": argv})
	if !a.isErr && a.get("timed_out") == true && d.took > fastPathCap/4 {
		// A command that took a quarter of the Fast Path's cap directly
		// ran on a loaded machine (npm ls: 0.3 s alone, 8 s beside a
		// parallel build): both sides once more, before a difference.
		d = runDirect(e.direct, argv, 2*time.Minute)
		a, note = e.h.callAsPerson(2*time.Minute, "run_command", map[string]any{"repo_id": e.repoID, "argv": argv})
	}
	if a.isErr {
		return errResult(a, note)
	}
	exit, _ := a.num("exit_code")
	res := e.compare(d, exit, a.str("stdout.text"), a.str("stderr.text"), sortLines, a.redactionField(), note)
	if a.get("timed_out") == true {
		ms, _ := a.num("duration_ms")
		res.reason = fmt.Sprintf("timed out through harnessd after %.1f s (Fast Path default 10 s; %.1f s directly); %s", float64(ms)/1000, d.took.Seconds(), res.reason)
	}
	if a.get("stdout.truncated") == true || a.get("stderr.truncated") == true {
		res.detail = "harnessd truncated the output"
	}
	return res
}

// check compares a focused test: directly, and as run_check. With -v,
// parallel subtests interleave in no defined order: sortLines.
func (e *env) check(argv []string, sortLines bool) result {
	// One side after the other: a focused check has the Fast Path's 15 s,
	// which the load of both at once would eat into.
	d := runDirect(e.direct, argv, 10*time.Minute)
	t0 := time.Now()
	a, note := e.h.callAsPerson(11*time.Minute, "run_check", map[string]any{"repo_id": e.repoID, "argv": argv})
	took := time.Since(t0)
	if a.isErr {
		return errResult(a, note)
	}
	exit, _ := a.num("exit_code")
	res := e.compare(d, exit, a.str("stdout"), a.str("stderr"), sortLines, a.redactionField(), note)
	if a.get("timed_out") == true {
		res.reason = fmt.Sprintf("timed out through harnessd (%.1f s directly); %s", d.took.Seconds(), res.reason)
	}
	res.detail = fmt.Sprintf("path %s; directly %.1f s, through harnessd %.1f s", a.str("path"), d.took.Seconds(), took.Seconds())
	return res
}

// suite compares the full suite: directly, and as a durable job whose
// logs are read to the end.
func (e *env) suite() result {
	argv := e.p.suiteArgv()
	// Both sides at once (a job has minutes): the same load for both, half
	// the wall time.
	direct := goDirect(e.direct, argv, 10*time.Minute)
	d, waited := directResult{}, false
	wait := func() directResult {
		if !waited {
			d, waited = <-direct, true
		}
		return d
	}
	defer wait()
	t0 := time.Now()
	a, note := e.h.callAsPerson(time.Minute, "job_start", map[string]any{"repo_id": e.repoID, "argv": argv, "request_id": e.h.requestID("suite")})
	if a.isErr {
		return errResult(a, note)
	}
	id := a.str("job_id")
	deadline := time.Now().Add(11 * time.Minute)
	for {
		switch a.str("state") {
		case "succeeded", "failed", "timed_out", "cancelled", "interrupted":
		default:
			if time.Now().After(deadline) {
				return result{reason: "the job did not end within 11 minutes (state " + a.str("state") + ")", note: note}
			}
			a = e.h.call(11*time.Minute, "job_status", map[string]any{"job_id": id, "wait_s": 600})
			if a.isErr {
				return errResult(a, note)
			}
			continue
		}
		break
	}
	field := a.redactionField()
	exit, ok := a.num("exit_code")
	if !ok {
		exit = -1
	}
	var logs [2]string
	for i, stream := range []string{"stdout", "stderr"} {
		off := 0
		for {
			l := e.h.call(time.Minute, "job_logs", map[string]any{"job_id": id, "stream": stream, "offset": off})
			if l.isErr {
				return errResult(l, note)
			}
			logs[i] += l.str("data")
			next, _ := l.num("next_offset")
			total, _ := l.num("total")
			if l.get("eof") == true || next >= total || next <= off {
				break
			}
			off = next
		}
	}
	took := time.Since(t0)
	d = wait()
	res := e.compare(d, exit, logs[0], logs[1], false, field, note)
	res.detail = fmt.Sprintf("directly %.1f s, through harnessd %.1f s", d.took.Seconds(), took.Seconds())
	if st := a.str("state"); st != "succeeded" && st != "failed" {
		res.identical = false
		res.reason = strings.TrimPrefix(res.reason+"; job "+st, "; ")
	}
	return res
}

// read compares read_file of every tracked file, window by window, with
// the file's bytes.
func (e *env) read() result {
	var res result
	var bad []string
	for _, f := range e.files {
		want, err := os.ReadFile(filepath.Join(e.direct, f))
		if err != nil {
			bad = append(bad, f+": "+err.Error())
			continue
		}
		var got strings.Builder
		line, why := 1, ""
		for {
			a := e.h.call(time.Minute, "read_file", map[string]any{"repo_id": e.repoID, "path": f, "offset_line": line})
			if a.isErr {
				why = a.errText()
				break
			}
			text := a.str("content") // a binary file's, else the text block's
			if _, inJSON := a.m["content"]; !inJSON {
				text = a.text
			}
			res.redactions += max(countMarkers(text), a.redactionField())
			if a.get("binary") == true {
				sum := sha256.Sum256(want)
				if a.str("sha256") != hex.EncodeToString(sum[:]) {
					why = "binary, sha256 differs"
				}
				got.Reset()
				got.Write(want)
				break
			}
			got.WriteString(text)
			end, _ := a.num("end_line")
			total, _ := a.num("total_lines")
			if a.get("truncated") != true || end >= total {
				break
			}
			if end < line {
				why = fmt.Sprintf("window from line %d made no progress", line)
				break
			}
			line = end + 1
		}
		if why == "" && got.String() != string(want) {
			why = firstDiff(string(want), got.String())
		}
		if why != "" {
			bad = append(bad, f+": "+why)
		}
	}
	res.detail = fmt.Sprintf("%d files", len(e.files))
	var why []string
	if len(bad) > 0 {
		why = append(why, fmt.Sprintf("%d of %d files differ, first %s", len(bad), len(e.files), bad[0]))
	}
	if res.redactions > 0 {
		why = append(why, fmt.Sprintf("%d spurious redactions", res.redactions))
	}
	res.identical = len(why) == 0
	res.reason = strings.Join(why, "; ")
	return res
}

// search compares search of each word with grep -n -F over the tracked
// and untracked non-ignored files, run directly.
func (e *env) search() result {
	var res result
	files, err := searchableFiles(context.Background(), e.direct)
	if err != nil {
		return result{reason: "list files directly: " + err.Error()}
	}
	var why []string
	n, cuts := 0, 0
	for _, w := range e.p.Search {
		d := runDirect(e.direct, append([]string{"grep", "-n", "-H", "-I", "-F", "--", w}, files...), time.Minute)
		var want []string
		for _, l := range strings.Split(strings.TrimSuffix(d.stdout, "\n"), "\n") {
			if l != "" {
				want = append(want, l)
			}
		}
		a := e.h.call(time.Minute, "search", map[string]any{"repo_id": e.repoID, "query": w, "max_results": 500})
		if a.isErr {
			why = append(why, fmt.Sprintf("%q: %s", w, a.errText()))
			continue
		}
		// harnessd cuts a match's line to 500 characters and flags it
		// (cut: true): such a line is compared as far as it goes.
		var got []string
		cutAt := map[string]string{} // path:line -> the cut text
		ms, _ := a.get("matches").([]any)
		for _, m := range ms {
			mm, _ := m.(map[string]any)
			p, _ := mm["path"].(string)
			ln, _ := mm["line"].(float64)
			tx, _ := mm["text"].(string)
			key := fmt.Sprintf("%s:%d:", p, int(ln))
			if mm["cut"] == true {
				cutAt[key] = tx
				cuts++
			}
			got = append(got, key+tx)
		}
		res.redactions += max(countMarkers(strings.Join(got, "\n")), a.redactionField())
		for i, l := range want {
			for key, tx := range cutAt {
				if strings.HasPrefix(l, key) && strings.HasPrefix(l[len(key):], tx) {
					want[i] = key + tx
				}
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		n += len(want)
		if dw, dg := strings.Join(want, "\n"), strings.Join(got, "\n"); dw != dg {
			why = append(why, fmt.Sprintf("%q: %d matches directly, %d through harnessd, %s", w, len(want), len(got), firstDiff(dw, dg)))
		}
	}
	if res.redactions > 0 {
		why = append(why, fmt.Sprintf("%d spurious redactions", res.redactions))
	}
	res.detail = fmt.Sprintf("%d matches", n)
	if cuts > 0 {
		res.detail += fmt.Sprintf(", %d lines cut at 500 characters by harnessd (flagged, compared as far as they go)", cuts)
	}
	res.identical = len(why) == 0
	res.reason = strings.Join(why, "; ")
	return res
}

const commitMessage = "compat: a benign edit\n\nThe corpus's patch, stage and commit cycle.\n"

// commit makes the same edit, stages and commits it directly and through
// harnessd, and compares the commits (tree, parent, author, message less
// harnessd's trailers).
func (e *env) commit() result {
	path := e.p.Patch
	body, err := os.ReadFile(filepath.Join(e.direct, path))
	if err != nil {
		return result{reason: "read " + path + ": " + err.Error()}
	}
	old := uniqueLine(string(body))
	if old == "" {
		return result{reason: path + " has no line that occurs once"}
	}
	edited := old + " (edited by the compat corpus)"
	const created = "COMPAT.md"
	content := "A file the compat corpus created.\n"

	// Directly.
	if err := os.WriteFile(filepath.Join(e.direct, path), []byte(strings.Replace(string(body), old, edited, 1)), 0o644); err != nil {
		return result{reason: err.Error()}
	}
	if err := os.WriteFile(filepath.Join(e.direct, created), []byte(content), 0o644); err != nil {
		return result{reason: err.Error()}
	}
	for _, argv := range [][]string{{"git", "add", "--", path, created}, {"git", "commit", "-q", "-m", commitMessage}} {
		if d := runDirect(e.direct, argv, time.Minute); d.exit != 0 {
			return result{reason: "directly: " + strings.Join(argv, " ") + ": " + d.stderr}
		}
	}

	// Through harnessd.
	var notes []string
	steps := []struct {
		op   string
		args map[string]any
	}{
		{"apply_patch", map[string]any{"operations": []map[string]any{
			{"op": "replace", "path": path, "old_text": old, "new_text": edited},
			{"op": "create", "path": created, "content": content},
		}}},
		{"git_stage", map[string]any{"paths": []string{path, created}}},
		{"git_commit", map[string]any{"message": commitMessage}},
	}
	red := 0
	for _, s := range steps {
		s.args["repo_id"] = e.repoID
		s.args["request_id"] = e.h.requestID(s.op)
		a, note := e.h.callAsPerson(time.Minute, s.op, s.args)
		if note != "" {
			notes = append(notes, s.op+" "+note)
		}
		if a.isErr {
			r := errResult(a, strings.Join(notes, "; "))
			r.reason = s.op + ": " + r.reason
			return r
		}
		red += max(countMarkers(strings.Join(a.strs, "\n")), a.redactionField())
	}
	show := func(root string) (string, error) {
		out, err := run(context.Background(), root, fixedGitEnv(), "git", "log", "-1", "--format=tree %T%nparent %P%nauthor %an <%ae>%n%B")
		return out, err
	}
	dOut, err := show(e.direct)
	if err != nil {
		return result{reason: "directly: " + err.Error()}
	}
	hOut, err := show(e.through)
	if err != nil {
		return result{reason: "through harnessd: " + err.Error()}
	}
	var why []string
	if len(notes) > 0 {
		why = append(why, strings.Join(notes, "; "))
	}
	if red > 0 {
		why = append(why, fmt.Sprintf("%d spurious redactions", red))
	}
	if dw, hw := strings.TrimRight(dOut, "\n"), strings.TrimRight(stripTrailers(hOut), "\n"); dw != hw {
		why = append(why, "commit "+firstDiff(dw, hw))
	}
	return result{identical: len(why) == 0, reason: strings.Join(why, "; "), redactions: red, note: strings.Join(notes, "; ")}
}

// uniqueLine is the first line of at least 8 characters that occurs
// exactly once in body.
func uniqueLine(body string) string {
	for _, l := range strings.Split(body, "\n") {
		if len(strings.TrimSpace(l)) >= 8 && strings.Count(body, l) == 1 {
			return l
		}
	}
	return ""
}

// stripTrailers drops harnessd's provenance trailers (Harnessd-…: lines)
// and the blank line before them.
func stripTrailers(msg string) string {
	var keep []string
	for _, l := range strings.Split(msg, "\n") {
		if strings.HasPrefix(l, "Harnessd-") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.TrimRight(strings.Join(keep, "\n"), "\n")
}
