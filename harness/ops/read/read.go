// Package read holds the Fast Path reads: read_file, list_dir, search,
// git_status and git_diff.
package read

import (
	"context"
	"fmt"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/liveview"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/readfile"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/search"
	"github.com/harnessd/harnessd/internal/secrets"
)

// Ops returns the read operations.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[ReadFileArgs]{Name: "read_file", Output: ReadFileResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Core, Roles: op.ReadRoles, BatchStep: true, Lane: true,
			Description: "Read a file, or a window of its lines: before you edit it, or to follow a search hit. A truncated read continues at offset_line. To find where something is: search; what a directory holds: list_dir. Example: {\"path\":\"src/app.go\",\"offset_line\":120}",
			Repo:        func(a ReadFileArgs) string { return a.RepoID }, Prepare: readFile}),
		op.Def(op.Spec[SearchArgs]{Name: "search", Output: SearchResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Core, Roles: op.ReadRoles, BatchStep: true, Lane: true,
			Description: "Find text in the repository's files (.gitignore respected): where a name is defined or used, which files mention something. Literal unless regex. A file you already know: read_file. Example: {\"query\":\"func Parse\",\"glob\":\"**/*.go\"}",
			Repo:        func(a SearchArgs) string { return a.RepoID }, Prepare: searchRepo}),
		op.Def(op.Spec[GitStatusArgs]{Name: "git_status", Output: GitStatusResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Core, Roles: op.ReadRoles, BatchStep: true, Lane: true,
			Description: "Which paths changed (staged, unstaged, untracked, conflicted), with branch, HEAD and ahead/behind: before committing. The changes themselves: git_diff. Example: {}",
			Repo:        func(a GitStatusArgs) string { return a.RepoID }, Prepare: gitStatus}),
		op.Def(op.Spec[GitDiffArgs]{Name: "git_diff", Output: GitDiffResult{}, ReadOnly: true,
			Route: route.Readonly, Toolset: op.Core, Roles: op.ReadRoles, BatchStep: true, Lane: true,
			Description: "Review changes as a unified diff: the work tree's (default), the index's (staged) or against rev, with numstat; before git_commit. Just the changed paths: git_status. Example: {\"paths\":[\"src\"]}",
			Repo:        func(a GitDiffArgs) string { return a.RepoID }, Prepare: gitDiff}),
		listDirOp(),
	}
}

// ReadFileArgs are the arguments of read_file.
type ReadFileArgs struct {
	RepoID                  string `json:"repo_id" jsonschema:"from repository_list"`
	Path                    string `json:"path" jsonschema:"relative to the repository root"`
	OffsetLine              int    `json:"offset_line,omitempty" jsonschema:"first line, 1-based (default 1)"`
	MaxLines                int    `json:"max_lines,omitempty" jsonschema:"default and max 2000"`
	MaxBytes                int    `json:"max_bytes,omitempty" jsonschema:"default and max 262144"`
	IncludeLatencyBreakdown bool   `json:"include_latency_breakdown,omitempty" jsonschema:"report the latency of each segment"`
	op.Approval
}

// ReadFileResult is the result of read_file.
type ReadFileResult struct {
	readfile.Result
	// Redactions counts values of the checkout's secret files replaced in
	// the content.
	Redactions int `json:"redactions,omitempty"`
	op.Meta
}

// TextBlock makes the MCP text block of read_file the file's text itself;
// the note says which lines these are and what was left out. A binary
// file has no text block of its own (the JSON says binary).
func (r *ReadFileResult) TextBlock() (text, note string, ok bool) {
	if r.Binary {
		return "", "", false
	}
	note = fmt.Sprintf("[%s: lines %d-%d of %d, %d bytes, sha256 %s", r.Path, r.StartLine, r.EndLine, r.TotalLines, r.SizeBytes, r.SHA256)
	if r.Truncated {
		note += fmt.Sprintf("; truncated: continue with offset_line %d", r.NextOffsetLine)
	}
	if r.Redactions > 0 {
		note += fmt.Sprintf("; %d secret values redacted", r.Redactions)
	}
	return r.Content, note + "]", true
}

// WithoutText is read_file's result without its content, for the MCP
// structured content when the text block carries the content: the content
// crosses the wire once.
func (r *ReadFileResult) WithoutText() any { return readFileMeta{ReadFileResult: r} }

// readFileMeta is a ReadFileResult whose content is left out of its JSON:
// the field of the shallower depth wins, and omitempty leaves it out.
type readFileMeta struct {
	*ReadFileResult
	Content string `json:"content,omitempty"`
}

func readFile(_ context.Context, c *op.Call, args ReadFileArgs) (*op.Plan, error) {
	return &op.Plan{Gate: govern.Input{Paths: []string{args.Path}}, Breakdown: args.IncludeLatencyBreakdown,
		Run: func(context.Context) (any, error) {
			res, err := readfile.Read(c.Root, readfile.Request{Path: args.Path, OffsetLine: args.OffsetLine, MaxLines: args.MaxLines, MaxBytes: args.MaxBytes}, readfile.Limits{})
			if err != nil {
				return nil, err
			}
			// Code is shown as it is, but never a value of a secret file
			// (sha256 stays that of the whole file on disk).
			if res.Content != "" {
				var n int
				res.Content, n = redactKnown(c, args.Path, res.Content)
				return &ReadFileResult{Result: res, Redactions: n}, nil
			}
			return &ReadFileResult{Result: res}, nil
		}}, nil
}

// redactKnown replaces the values of the checkout's secret files in the
// content of the file at path. The first read of a checkout does not wait
// for its history to be learned (seconds, in a long one) unless the
// content is suspect (secrets.Suspect: something the rules take for a
// secret, or a token that mixes letters and digits): then a value rotated
// out of a secret file and still written here could be one only the
// history knows, and the read waits for it; if the history is still not
// learned after the wait, the rules redact what they find too.
func redactKnown(c *op.Call, path, content string) (string, int) {
	ctx, root := context.Background(), c.Root.Path()
	k, pending := c.Env.KnownNow(ctx, root)
	rules := false
	if pending != nil && secrets.Suspect(c.Env.Redactor, path, content) {
		k = c.Env.KnownFor(ctx, root) // waits, at most the cache's HistoryWait
		_, still := c.Env.KnownNow(ctx, root)
		rules = still != nil
	}
	n := 0
	if k != nil {
		content, n = k.String(content)
	}
	if rules && c.Env.Redactor != nil {
		var m int
		content, m = c.Env.Redactor.StringIn(path, content)
		n += m
	}
	return content, n
}

// SearchArgs are the arguments of search.
type SearchArgs struct {
	RepoID                  string `json:"repo_id" jsonschema:"from repository_list"`
	Query                   string `json:"query" jsonschema:"text to find"`
	Regex                   bool   `json:"regex,omitempty" jsonschema:"query is an RE2 regular expression"`
	Glob                    string `json:"glob,omitempty" jsonschema:"only files matching it, e.g. src/**/*.go"`
	CaseInsensitive         bool   `json:"case_insensitive,omitempty" jsonschema:"ignore case"`
	MaxResults              int    `json:"max_results,omitempty" jsonschema:"default 50, max 500"`
	IncludeLatencyBreakdown bool   `json:"include_latency_breakdown,omitempty"`
	op.Approval
}

// SearchResult is the result of search.
type SearchResult struct {
	search.Result
	Redactions int `json:"redactions,omitempty"`
	// HardLinksOmitted counts matched files left out for being hard links:
	// another name of the file may be outside the root or a secret path.
	HardLinksOmitted int `json:"hard_links_omitted,omitempty"`
	// Source is "index" (searched in process over the live file list and
	// content cache; engine "index") or "exec" (rg, or the Go engine over
	// `git ls-files`); IndexReason says why not in process.
	Source      string `json:"source"`
	IndexReason string `json:"index_reason,omitempty"`
	op.Meta
}

// dropRefused removes the matches in files CheckLeaf refuses now (a hard
// link: another name of the file may be outside the root or a secret
// path; a secret by name, which the search's exclusions already left out)
// and returns how many hard-linked files it left out.
func dropRefused(root *pathsafe.Root, res *search.Result) int {
	refused := map[string]bool{}
	checked := map[string]bool{}
	linked := 0
	kept := res.Matches[:0]
	for _, m := range res.Matches {
		if !checked[m.Path] {
			checked[m.Path] = true
			if err := root.CheckLeafAt(m.Path); err != nil {
				refused[m.Path] = true
				if errs.CodeOf(err) == errs.PathNotAllowed {
					linked++
				}
			}
		}
		if !refused[m.Path] {
			kept = append(kept, m)
		}
	}
	res.Matches = kept
	return linked
}

func searchRepo(_ context.Context, c *op.Call, args SearchArgs) (*op.Plan, error) {
	return &op.Plan{Breakdown: args.IncludeLatencyBreakdown, Run: func(ctx context.Context) (any, error) {
		req := search.Request{
			Query: args.Query, Regex: args.Regex, Glob: args.Glob, CaseInsensitive: args.CaseInsensitive, MaxResults: args.MaxResults,
		}
		var res search.Result
		ok, source, reason := false, liveview.SourceExec, "the live index is off"
		if v := c.Env.View(c.Repo); v != nil {
			var err error
			if res, ok, err = v.Search(ctx, c.Env.SearcherFor(c.Repo.Repo.Root), req); err != nil {
				return nil, err
			}
			if ok {
				source, reason = liveview.SourceIndex, ""
			} else if reason = v.Reason(); reason == "" {
				reason = liveview.ReasonIndexing // in process once filled
			}
		}
		if !ok {
			var err error
			if res, err = c.Env.SearcherFor(c.Repo.Repo.Root).Search(ctx, c.Repo.Repo.Root, req); err != nil {
				return nil, err
			}
		}
		c.Mark(op.SegExecution)
		linked := dropRefused(c.Root, &res)
		red := c.Env.RedactorFor(ctx, c.Repo.Repo.Root)
		n := 0
		for i := range res.Matches {
			var k int
			res.Matches[i].Text, k = red.StringIn(res.Matches[i].Path, res.Matches[i].Text)
			n += k
		}
		if res.Matches == nil {
			res.Matches = []search.Match{}
		}
		c.FinishIn(op.SegReceipt)
		return &SearchResult{Result: res, Redactions: n, HardLinksOmitted: linked, Source: source, IndexReason: reason}, nil
	}}, nil
}

// GitStatusArgs are the arguments of git_status.
type GitStatusArgs struct {
	RepoID                  string `json:"repo_id" jsonschema:"from repository_list"`
	IncludeLatencyBreakdown bool   `json:"include_latency_breakdown,omitempty"`
	op.Approval
}

// GitStatusResult is the result of git_status.
type GitStatusResult struct {
	gitx.Status
	// Source is "index" (computed in process from .git/index and the paths
	// the watcher saw change) or "exec" (git status ran); IndexReason says
	// why not in process.
	Source      string `json:"source"`
	IndexReason string `json:"index_reason,omitempty"`
	op.Meta
}

func gitStatus(_ context.Context, c *op.Call, args GitStatusArgs) (*op.Plan, error) {
	return &op.Plan{Breakdown: args.IncludeLatencyBreakdown, Run: func(ctx context.Context) (any, error) {
		if v := c.Env.View(c.Repo); v != nil {
			st, err := v.Status(ctx)
			if err != nil {
				return nil, err
			}
			return &GitStatusResult{Status: EmptySlices(st.Status), Source: st.Source, IndexReason: st.Reason}, nil
		}
		st, err := c.Env.Git.Status(ctx, c.Repo.Repo.Root)
		if err != nil {
			return nil, err
		}
		return &GitStatusResult{Status: EmptySlices(st), Source: liveview.SourceExec, IndexReason: "the live index is off"}, nil
	}}, nil
}

// EmptySlices makes a status's lists empty rather than null.
func EmptySlices(st gitx.Status) gitx.Status {
	if st.Staged == nil {
		st.Staged = []gitx.Entry{}
	}
	if st.Unstaged == nil {
		st.Unstaged = []gitx.Entry{}
	}
	if st.Untracked == nil {
		st.Untracked = []string{}
	}
	if st.Conflicted == nil {
		st.Conflicted = []gitx.Entry{}
	}
	return st
}

// GitDiffArgs are the arguments of git_diff.
type GitDiffArgs struct {
	RepoID                  string   `json:"repo_id" jsonschema:"from repository_list"`
	Staged                  bool     `json:"staged,omitempty" jsonschema:"the index against HEAD (or rev)"`
	Rev                     string   `json:"rev,omitempty" jsonschema:"against this revision or range (HEAD~1, main, A..B); paths go in paths"`
	Paths                   []string `json:"paths,omitempty" jsonschema:"only these paths"`
	MaxBytes                int      `json:"max_bytes,omitempty" jsonschema:"default 262144"`
	Context                 int      `json:"context,omitempty" jsonschema:"context lines (default 3)"`
	IncludeLatencyBreakdown bool     `json:"include_latency_breakdown,omitempty"`
	op.Approval
}

// GitDiffResult is the result of git_diff.
type GitDiffResult struct {
	gitx.Diff
	Redactions int `json:"redactions,omitempty"`
	// Source is "index" (computed in process: the index blobs against the
	// work tree files the live status lists as changed, printed as git
	// prints them), "cache" (the same diff computed earlier, and the
	// watcher proves the tree unchanged since) or "exec" (git diff ran);
	// IndexReason says why not in process.
	Source      string `json:"source"`
	IndexReason string `json:"index_reason,omitempty"`
	op.Meta
}

func gitDiff(_ context.Context, c *op.Call, args GitDiffArgs) (*op.Plan, error) {
	if args.Rev != "" {
		// Refused before anything runs; Diff checks again.
		if err := gitx.CheckRev("rev", args.Rev); err != nil {
			return nil, err
		}
	}
	return &op.Plan{Gate: govern.Input{Paths: args.Paths}, Breakdown: args.IncludeLatencyBreakdown, Run: func(ctx context.Context) (any, error) {
		root, git := c.Root, c.Env.Git
		opts := gitx.DiffOptions{Staged: args.Staged, Rev: args.Rev, Paths: args.Paths, MaxBytes: args.MaxBytes, Context: args.Context}
		source, reason := liveview.SourceExec, "the live index is off"
		diff := func(opts gitx.DiffOptions) (gitx.Diff, error) {
			v := c.Env.View(c.Repo)
			if v == nil {
				return git.Diff(ctx, c.Repo.Repo.Root, opts)
			}
			r, err := v.Diff(ctx, opts)
			if err != nil {
				return gitx.Diff{}, err
			}
			source, reason = r.Source, r.Reason
			return r.Diff, nil
		}
		d, err := diff(opts)
		if err != nil {
			return nil, err
		}
		// Secret files never show in a diff: when one changed, diff again
		// without it (the first patch is discarded unseen).
		for _, f := range d.Files {
			for _, p := range []string{f.Path, f.OrigPath} {
				if p != "" && root.Excluded(p) {
					opts.Exclude = append(opts.Exclude, p)
				}
			}
		}
		if len(opts.Exclude) > 0 {
			if d, err = diff(opts); err != nil {
				return nil, err
			}
			d.SecretPathsOmitted = len(opts.Exclude)
		}
		c.Mark(op.SegExecution)
		var n int
		d.Patch, n = c.Env.RedactorFor(ctx, c.Repo.Repo.Root).String(d.Patch)
		if d.Files == nil {
			d.Files = []gitx.FileStat{}
		}
		c.FinishIn(op.SegReceipt)
		return &GitDiffResult{Diff: d, Redactions: n, Source: source, IndexReason: reason}, nil
	}}, nil
}
