package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/textsafe"
)

// The everyday verbs print what the tools people know print: cat the
// file, grep path:line:text, diff the unified diff, status git's short
// status, log one line per commit. Each finds its repository from the
// current directory (where.go); --json prints the operation's answer.

const whereFlags = `  --repo REPO_ID   this repository instead of the one of the current directory
  --register       register the current git work tree first when harnessd does not know it
`

var catCommand = command{name: "cat", usage: "cat FILE...              print files of the repository of the current directory (read_file)", run: catCmd,
	help: "Usage:\n  harness cat [--raw] FILE...\n\nPrints the files (paths relative to the current directory) through read_file:\n" +
		"exactly into a pipe or a file; on a terminal control characters are shown escaped (--raw: exactly).\n" +
		"Secret values are redacted (a note on stderr says how many).\n" + whereFlags,
	flags: []string{"--repo", "--register", "--raw"}}

var grepCommand = command{name: "grep", usage: "grep [-i] [-E] PATTERN [PATH...]   search the repository (path:line:text)", run: grepCmd,
	help: "Usage:\n  harness grep [-i] [-E] [--max N] PATTERN [PATH...]\n\nSearches the files of the repository (.gitignore respected; secrets never) and prints\n" +
		"path:line:text, like grep -n. Without PATH: the current directory and below. PATH may be a\n" +
		"directory, a file or a glob (src/**/*.go). Exit 1 when nothing matched.\n" +
		"  -i, --ignore-case   ignore case\n  -E, --regex         PATTERN is an RE2 regular expression (default: literal)\n  --max N             at most N matches (default 200, max 500)\n" + whereFlags,
	flags: []string{"--repo", "--register", "--ignore-case", "-i", "--regex", "-E", "--max"}}

var diffCommand = command{name: "diff", usage: "diff [--staged] [--rev R] [PATH...]   the repository's changes as a unified diff", run: diffCmd,
	help: "Usage:\n  harness diff [--staged] [--rev R] [-U N] [PATH...]\n\nPrints the unified diff of the work tree (or the index with --staged, or against R)\n" +
		"through git_diff; paths relative to the current directory. Secret files are left out.\n" + whereFlags,
	flags: []string{"--repo", "--register", "--staged", "--rev", "-U", "--raw"}}

var patchCommand = command{name: "patch", usage: "patch [FILE] | patch --replace PATH OLD NEW   apply a unified diff (stdin or FILE) with apply_patch", run: patchCmd,
	help: `Usage:
  harness patch [FILE]                 apply a unified diff read from FILE or stdin
  harness patch --replace PATH OLD NEW replace the text OLD (found exactly once) by NEW in PATH

Applies the change through apply_patch: all or nothing, a receipt 'harness revert'
undoes. Each hunk of the diff replaces its old lines by its new ones and is refused
unless they are found exactly once; new files are created, removed ones deleted.
Diff paths are relative to the repository root (as git diff writes them); the PATH
of --replace is relative to the current directory.
  --replace          one exact replacement instead of a diff
  --request-id ID    idempotency key (default: a new one, printed on stderr)
  --approval-id ID   after APPROVAL_REQUIRED: the approval a person granted
` + whereFlags,
	flags: []string{"--repo", "--register", "--replace", "--request-id", "--approval-id"}}

var logCommand = command{name: "log", usage: "log [-n N] [PATH...]     commits, one line each (hash date author subject)", run: logCmd,
	help: "Usage:\n  harness log [-n N] [PATH...]\n\nPrints the newest N commits (default 20) of HEAD, one line each: hash, date, author,\n" +
		"subject (git log through run_command); with PATH only the commits touching it.\n" + whereFlags,
	flags: []string{"--repo", "--register", "-n"}}

// whereFlagSet is a flag set with --repo and --register.
func whereFlagSet(name string) (fs *pflag.FlagSet, repo *string, register *bool) {
	fs = pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	repo = fs.String("repo", "", "repository id")
	register = fs.Bool("register", false, "register the current git work tree first")
	return fs, repo, register
}

// repoPaths converts path arguments to repository-relative paths.
func (h here) repoPaths(args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for _, a := range args {
		p, err := h.repoPath(a)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// requestID is id, or a new one named after what it is for (printed on
// stderr so that the person can replay the call).
func (c *cli) requestID(id, what string) string {
	if id != "" {
		return id
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id = "cli-" + what + "-" + hex.EncodeToString(b[:])
	fmt.Fprintf(c.stderr, "request_id %s\n", id)
	return id
}

func catCmd(ctx context.Context, c *cli, args []string) error {
	fs, repo, register := whereFlagSet("cat")
	raw := fs.Bool("raw", false, "exact bytes on a terminal too")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	if fs.NArg() == 0 {
		return usageErr{"usage: harness cat FILE..."}
	}
	h, err := c.resolve(ctx, *repo, *register)
	if err != nil {
		return err
	}
	files, err := h.repoPaths(fs.Args())
	if err != nil {
		return err
	}
	var docs []json.RawMessage
	exact := *raw || !terminal(c.stdout)
	for _, f := range files {
		for offset := 1; ; {
			b, err := c.c.Call(ctx, "read_file", harness.ReadFileArgs{RepoID: h.ID, Path: f, OffsetLine: offset})
			if err != nil {
				return err
			}
			if c.json {
				docs = append(docs, b)
			}
			var r harness.ReadFileResult
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("decode read_file: %w", err)
			}
			if r.Binary && !c.json {
				return silentFailure{fmt.Sprintf("%s is a binary file (%d bytes, sha256 %s): not printed", h.display(f), r.SizeBytes, r.SHA256)}
			}
			if !c.json {
				if exact {
					io.WriteString(c.stdout, r.Content)
				} else {
					io.WriteString(c.stdout, textsafe.Text(r.Content))
				}
				if r.Redactions > 0 && offset == 1 {
					fmt.Fprintf(c.stderr, "harness: %s: %d secret values redacted\n", esc(h.display(f)), r.Redactions)
				}
			}
			if !r.Truncated || r.NextOffsetLine <= offset {
				break
			}
			offset = r.NextOffsetLine
		}
	}
	if c.json {
		if len(docs) == 1 {
			return c.printJSON(docs[0])
		}
		b, _ := json.Marshal(docs)
		return c.printJSON(b)
	}
	return nil
}

// grepGlob is the search glob of a PATH argument (repository-relative):
// a directory and what is below it, a file, or the glob as given.
func grepGlob(root, rel string) string {
	if rel == "." || rel == "" {
		return ""
	}
	if st, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err == nil && st.IsDir() {
		return rel + "/**"
	}
	return rel
}

func grepCmd(ctx context.Context, c *cli, args []string) error {
	fs, repo, register := whereFlagSet("grep")
	icase := fs.BoolP("ignore-case", "i", false, "ignore case")
	regex := fs.BoolP("regex", "E", false, "RE2 regular expression")
	maxN := fs.Int("max", 200, "at most N matches")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	if fs.NArg() == 0 {
		return usageErr{"usage: harness grep [-i] [-E] PATTERN [PATH...]"}
	}
	h, err := c.resolve(ctx, *repo, *register)
	if err != nil {
		return err
	}
	var globs []string
	if fs.NArg() == 1 {
		globs = []string{grepGlob(h.Root, h.Prefix)}
	} else {
		for _, a := range fs.Args()[1:] {
			rel, err := h.repoPath(a)
			if err != nil {
				return err
			}
			globs = append(globs, grepGlob(h.Root, rel))
		}
	}
	var docs []json.RawMessage
	var matches []grepMatch
	seen := map[string]bool{}
	truncated := false
	for _, g := range globs {
		b, err := c.c.Call(ctx, "search", harness.SearchArgs{RepoID: h.ID, Query: fs.Arg(0), Regex: *regex, CaseInsensitive: *icase, Glob: g, MaxResults: *maxN})
		if err != nil {
			return err
		}
		docs = append(docs, b)
		var r harness.SearchResult
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("decode search: %w", err)
		}
		truncated = truncated || r.Truncated
		for _, m := range r.Matches {
			k := m.Path + ":" + strconv.Itoa(m.Line)
			if !seen[k] {
				seen[k] = true
				matches = append(matches, grepMatch{m.Path, m.Line, m.Text})
			}
		}
	}
	if c.json {
		if len(docs) == 1 {
			if err := c.printJSON(docs[0]); err != nil {
				return err
			}
		} else {
			b, _ := json.Marshal(docs)
			if err := c.printJSON(b); err != nil {
				return err
			}
		}
	} else {
		io.WriteString(c.stdout, grepLines(h, matches))
		if truncated {
			fmt.Fprintf(c.stderr, "harness: more matches than --max %d: narrow the PATH or raise --max\n", *maxN)
		}
	}
	if len(matches) == 0 {
		return silentFailure{"no match"}
	}
	return nil
}

type grepMatch struct {
	path string
	line int
	text string
}

// grepLines prints matches as grep -n does: path:line:text, the path as
// seen from the current directory, sorted by path and line; the text is
// the file's, escaped.
func grepLines(h here, ms []grepMatch) string {
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].path != ms[j].path {
			return ms[i].path < ms[j].path
		}
		return ms[i].line < ms[j].line
	})
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s:%d:%s\n", esc(h.display(m.path)), m.line, esc(m.text))
	}
	return b.String()
}

func diffCmd(ctx context.Context, c *cli, args []string) error {
	fs, repo, register := whereFlagSet("diff")
	staged := fs.Bool("staged", false, "the index against HEAD")
	rev := fs.String("rev", "", "against this revision or range")
	unified := fs.IntP("unified", "U", 0, "context lines")
	raw := fs.Bool("raw", false, "exact bytes on a terminal too")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	h, err := c.resolve(ctx, *repo, *register)
	if err != nil {
		return err
	}
	paths, err := h.repoPaths(fs.Args())
	if err != nil {
		return err
	}
	b, err := c.c.Call(ctx, "git_diff", harness.GitDiffArgs{RepoID: h.ID, Staged: *staged, Rev: *rev, Paths: paths, Context: *unified})
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(b)
	}
	var r harness.GitDiffResult
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("decode git_diff: %w", err)
	}
	if *raw || !terminal(c.stdout) {
		io.WriteString(c.stdout, r.Patch)
	} else {
		io.WriteString(c.stdout, textsafe.Text(r.Patch))
	}
	if r.Truncated {
		fmt.Fprintf(c.stderr, "harness: the diff is cut at %d of %d bytes: name PATHs for the rest\n", len(r.Patch), r.Bytes)
	}
	if r.SecretPathsOmitted > 0 {
		fmt.Fprintf(c.stderr, "harness: %d changed secret files left out\n", r.SecretPathsOmitted)
	}
	return nil
}

// gitStatus prints the repository's status as `git status --short
// --branch` does.
func (c *cli) gitStatus(ctx context.Context, h here) error {
	b, err := c.c.Call(ctx, "git_status", harness.GitStatusArgs{RepoID: h.ID})
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(b)
	}
	var r harness.GitStatusResult
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("decode git_status: %w", err)
	}
	io.WriteString(c.stdout, shortStatus(h, r.Status))
	fmt.Fprintf(c.stdout, "(repository %s at %s; the daemon's status: harness daemon)\n", esc(h.ID), esc(h.Root))
	return nil
}

// statusLetter is git's short status letter of an entry's status.
func statusLetter(s string) byte {
	switch s {
	case "modified":
		return 'M'
	case "added":
		return 'A'
	case "deleted":
		return 'D'
	case "renamed":
		return 'R'
	case "copied":
		return 'C'
	case "type_changed":
		return 'T'
	case "unmerged":
		return 'U'
	}
	return '?'
}

// shortStatus is st as `git status --short --branch` prints it, paths as
// seen from the current directory.
func shortStatus(h here, st gitx.Status) string {
	var b strings.Builder
	switch {
	case st.Detached:
		b.WriteString("## HEAD (no branch)")
	case st.Head == "":
		fmt.Fprintf(&b, "## No commits yet on %s", esc(st.Branch))
	default:
		b.WriteString("## " + esc(st.Branch))
	}
	if st.Upstream != "" {
		b.WriteString("..." + esc(st.Upstream))
		var ab []string
		if st.Ahead > 0 {
			ab = append(ab, fmt.Sprintf("ahead %d", st.Ahead))
		}
		if st.Behind > 0 {
			ab = append(ab, fmt.Sprintf("behind %d", st.Behind))
		}
		if len(ab) > 0 {
			b.WriteString(" [" + strings.Join(ab, ", ") + "]")
		}
	}
	b.WriteByte('\n')
	type row struct {
		x, y       byte
		path, orig string
	}
	rows := map[string]*row{}
	var order []string
	get := func(e gitx.Entry) *row {
		r, ok := rows[e.Path]
		if !ok {
			r = &row{x: ' ', y: ' ', path: e.Path}
			rows[e.Path] = r
			order = append(order, e.Path)
		}
		if e.OrigPath != "" {
			r.orig = e.OrigPath
		}
		return r
	}
	for _, e := range st.Conflicted {
		r := get(e)
		r.x, r.y = 'U', 'U'
	}
	for _, e := range st.Staged {
		get(e).x = statusLetter(e.Status)
	}
	for _, e := range st.Unstaged {
		get(e).y = statusLetter(e.Status)
	}
	sort.Strings(order)
	for _, p := range order {
		r := rows[p]
		name := esc(h.display(r.path))
		if r.orig != "" {
			name = esc(h.display(r.orig)) + " -> " + name
		}
		fmt.Fprintf(&b, "%c%c %s\n", r.x, r.y, name)
	}
	untracked := append([]string(nil), st.Untracked...)
	sort.Strings(untracked)
	for _, p := range untracked {
		fmt.Fprintf(&b, "?? %s\n", esc(h.display(p)))
	}
	if st.Truncated {
		b.WriteString("… (git's output was cut: more changes exist)\n")
	}
	return b.String()
}

func patchCmd(ctx context.Context, c *cli, args []string) error {
	fs, repo, register := whereFlagSet("patch")
	replace := fs.Bool("replace", false, "one exact replacement: PATH OLD NEW")
	reqID := fs.String("request-id", "", "idempotency key")
	approval := fs.String("approval-id", "", "the approval a person granted")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	if (*replace && fs.NArg() != 3) || (!*replace && fs.NArg() > 1) {
		return usageErr{"usage: harness patch [FILE] | harness patch --replace PATH OLD NEW"}
	}
	var ops []patch.Op
	var h here
	var err error
	if *replace {
		if h, err = c.resolve(ctx, *repo, *register); err != nil {
			return err
		}
		p, err := h.repoPath(fs.Arg(0))
		if err != nil {
			return err
		}
		ops = []patch.Op{{Op: "replace", Path: p, OldText: fs.Arg(1), NewText: fs.Arg(2)}}
	} else {
		var in []byte
		if fs.NArg() == 1 && fs.Arg(0) != "-" {
			in, err = os.ReadFile(fs.Arg(0))
		} else {
			in, err = io.ReadAll(c.stdin)
		}
		if err != nil {
			return usageErr{"read the diff: " + err.Error()}
		}
		if ops, err = patchOps(string(in)); err != nil {
			return err
		}
		if h, err = c.resolve(ctx, *repo, *register); err != nil {
			return err
		}
	}
	in := harness.ApplyPatchArgs{RepoID: h.ID, RequestID: c.requestID(*reqID, "patch"), Operations: ops, ApprovalID: *approval}
	return c.show(ctx, "apply_patch", in, func(raw json.RawMessage) {
		var r harness.MutationResult
		_ = json.Unmarshal(raw, &r)
		fmt.Fprintf(c.stdout, "patched: receipt %s (token %d; undo with 'harness revert %s')\n", esc(r.ReceiptID), r.FencingToken, esc(r.ReceiptID))
		for _, ch := range r.Changes {
			fmt.Fprintf(c.stdout, "  %-8s %s\n", esc(ch.Op), esc(h.display(ch.Path)))
		}
		for _, w := range r.Warnings {
			fmt.Fprintf(c.stdout, "  warning: %s\n", esc(w))
		}
	})
}

// logFormat is the line of one commit: hash, date, author, subject,
// separated by tabs (printed as spaces).
const logFormat = "--format=%h%x09%ad%x09%an%x09%s"

func logCmd(ctx context.Context, c *cli, args []string) error {
	fs, repo, register := whereFlagSet("log")
	n := fs.IntP("max-count", "n", 20, "commits")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error()}
	}
	if *n < 1 {
		return usageErr{fmt.Sprintf("-n %d: want at least 1", *n)}
	}
	h, err := c.resolve(ctx, *repo, *register)
	if err != nil {
		return err
	}
	paths, err := h.repoPaths(fs.Args())
	if err != nil {
		return err
	}
	argv := append([]string{"git", "log", "-n", strconv.Itoa(*n), "--date=short", logFormat}, "--")
	argv = append(argv, paths...)
	if len(paths) == 0 {
		argv = argv[:len(argv)-1]
	}
	b, err := c.c.Call(ctx, "run_command", harness.RunCommandArgs{RepoID: h.ID, Argv: argv})
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(b)
	}
	var r harness.RunCommandResult
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("decode run_command: %w", err)
	}
	if r.ExitCode != 0 {
		return silentFailure{fmt.Sprintf("git log exited %d: %s", r.ExitCode, strings.TrimSpace(r.Stderr.Text))}
	}
	io.WriteString(c.stdout, logLines(r.Stdout.Text))
	return nil
}

// logLines is git log's tab-separated output as aligned lines, escaped.
func logLines(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, "\t", 4)
		for len(f) < 4 {
			f = append(f, "")
		}
		fmt.Fprintf(&b, "%s %s %-16s %s\n", esc(f[0]), esc(f[1]), clip(f[2], 16), esc(f[3]))
	}
	return b.String()
}
