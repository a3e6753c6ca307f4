package target

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/readfile"
	"github.com/harnessd/harnessd/internal/search"
)

// ReadFileArgs are the arguments of target_read_file.
type ReadFileArgs struct {
	TargetID                string `json:"target_id" jsonschema:"from target_list"`
	Path                    string `json:"path" jsonschema:"relative to the target root"`
	OffsetLine              int    `json:"offset_line,omitempty" jsonschema:"1-based first line (default 1)"`
	MaxLines                int    `json:"max_lines,omitempty" jsonschema:"default and max 2000"`
	MaxBytes                int    `json:"max_bytes,omitempty" jsonschema:"default and max 262144"`
	IncludeLatencyBreakdown bool   `json:"include_latency_breakdown,omitempty"`
	op.Approval
}

// ReadFileResult is the result of target_read_file.
type ReadFileResult struct {
	readfile.Result
	TargetID   string `json:"target_id"`
	Redactions int    `json:"redactions,omitempty"`
	op.Meta
}

func readFile(_ context.Context, c *op.Call, args ReadFileArgs) (*op.Plan, error) {
	r, err := resolveTarget(c, args.TargetID, false)
	if err != nil {
		return nil, err
	}
	return &op.Plan{Gate: gate(r, "target_read_file", []string{args.Path}, false, 5), Breakdown: args.IncludeLatencyBreakdown,
		Run: func(ctx context.Context) (any, error) {
			res, err := readfile.Read(r.Root, readfile.Request{Path: args.Path, OffsetLine: args.OffsetLine, MaxLines: args.MaxLines, MaxBytes: args.MaxBytes}, readfile.Limits{})
			if err != nil {
				return nil, err
			}
			out := &ReadFileResult{Result: res, TargetID: r.id()}
			if k := c.Env.KnownFor(ctx, r.path()); k != nil && res.Content != "" {
				out.Content, out.Redactions = k.String(res.Content)
			}
			return out, nil
		}}, nil
}

// ListDirArgs are the arguments of target_list_dir.
type ListDirArgs struct {
	TargetID   string `json:"target_id" jsonschema:"from target_list"`
	Path       string `json:"path,omitempty" jsonschema:"relative to the target root (default the root)"`
	MaxEntries int    `json:"max_entries,omitempty" jsonschema:"default 500, max 2000"`
	op.Approval
}

// DirEntry is one entry of target_list_dir.
type DirEntry struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Type is file, dir, symlink or other.
	Type string `json:"type"`
	Size int64  `json:"size"`
}

// ListDirResult is the result of target_list_dir.
type ListDirResult struct {
	TargetID string     `json:"target_id"`
	Path     string     `json:"path"`
	Entries  []DirEntry `json:"entries"`
	// Truncated says there were more entries than max_entries.
	Truncated bool `json:"truncated"`
	// Omitted counts secret paths, .git and harnessd's temp files left out.
	Omitted int `json:"omitted,omitempty"`
	op.Meta
}

// List limits.
const (
	listDefault = 500
	listMax     = 2000
)

func listDir(_ context.Context, c *op.Call, args ListDirArgs) (*op.Plan, error) {
	r, err := resolveTarget(c, args.TargetID, false)
	if err != nil {
		return nil, err
	}
	if args.MaxEntries < 0 || args.MaxEntries > listMax {
		return nil, errs.New(errs.InvalidArgument, "max_entries must be between 1 and %d", listMax)
	}
	limit := args.MaxEntries
	if limit == 0 {
		limit = listDefault
	}
	var paths []string
	if args.Path != "" {
		paths = []string{args.Path}
	}
	return &op.Plan{Gate: gate(r, "target_list_dir", paths, false, 5), Run: func(context.Context) (any, error) {
		abs, rel, err := r.Root.Dir(args.Path)
		if err != nil {
			return nil, err
		}
		f, err := os.Open(abs)
		if err != nil {
			return nil, errs.Wrap(errs.NotFound, err, "open %q: %v", args.Path, err).With("path", args.Path)
		}
		defer f.Close()
		// Read at most one entry more than the limit past the omitted ones
		// (bounded: a huge directory is never read whole into memory).
		out := &ListDirResult{TargetID: r.id(), Path: rel, Entries: []DirEntry{}}
		for {
			ents, err := f.ReadDir(256)
			for _, e := range ents {
				child := e.Name()
				if rel != "" && rel != "." {
					child = path.Join(rel, e.Name())
				}
				// A temp file of a write (a crash's leftover until the next
				// sweep) is not the user's: left out like .git.
				if e.Name() == ".git" || r.Root.Excluded(child) || !e.IsDir() && patch.IsTempName(e.Name()) {
					out.Omitted++
					continue
				}
				if len(out.Entries) == limit {
					out.Truncated = true
					break
				}
				out.Entries = append(out.Entries, dirEntry(abs, child, e))
			}
			if out.Truncated || err != nil || len(ents) == 0 {
				break
			}
		}
		sort.Slice(out.Entries, func(i, j int) bool { return out.Entries[i].Name < out.Entries[j].Name })
		return out, nil
	}}, nil
}

func dirEntry(dir, rel string, e os.DirEntry) DirEntry {
	d := DirEntry{Name: e.Name(), Path: rel, Type: readfile.TypeName(e.Type())}
	if d.Type == "file" {
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(dir, e.Name()), &st) == nil {
			d.Size = st.Size
		}
	}
	return d
}

// SearchArgs are the arguments of target_search.
type SearchArgs struct {
	TargetID        string `json:"target_id" jsonschema:"from target_list"`
	Query           string `json:"query" jsonschema:"text to find (literal unless regex)"`
	Regex           bool   `json:"regex,omitempty" jsonschema:"query is an RE2 regular expression"`
	Glob            string `json:"glob,omitempty" jsonschema:"only files matching it, e.g. **/*.md"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty"`
	MaxResults      int    `json:"max_results,omitempty" jsonschema:"default 50, max 500"`
	op.Approval
}

// SearchResult is the result of target_search.
type SearchResult struct {
	search.Result
	TargetID   string `json:"target_id"`
	Redactions int    `json:"redactions,omitempty"`
	// HardLinksOmitted counts matched files left out for being hard links.
	HardLinksOmitted int `json:"hard_links_omitted,omitempty"`
	op.Meta
}

func runSearch(ctx context.Context, c *op.Call, r resolved, args SearchArgs) (any, error) {
	res, err := c.Env.SearcherFor(r.path()).Search(ctx, r.path(), search.Request{
		Query: args.Query, Regex: args.Regex, Glob: args.Glob, CaseInsensitive: args.CaseInsensitive, MaxResults: args.MaxResults,
	})
	if err != nil {
		return nil, err
	}
	// A match in a file CheckLeaf refuses is left out: a file with more
	// than one name (another may be outside the root or a secret path).
	kept := res.Matches[:0]
	linked := map[string]bool{}
	refused := map[string]bool{}
	for _, m := range res.Matches {
		ref, seen := refused[m.Path]
		if !seen {
			err := r.Root.CheckLeafAt(m.Path)
			ref = err != nil
			refused[m.Path] = ref
			if errs.CodeOf(err) == errs.PathNotAllowed {
				linked[m.Path] = true
			}
		}
		if !ref {
			kept = append(kept, m)
		}
	}
	res.Matches = kept
	red := c.Env.RedactorFor(ctx, r.path())
	n := 0
	for i := range res.Matches {
		var k int
		res.Matches[i].Text, k = red.StringIn(res.Matches[i].Path, res.Matches[i].Text)
		n += k
	}
	if res.Matches == nil {
		res.Matches = []search.Match{}
	}
	return &SearchResult{Result: res, TargetID: r.id(), Redactions: n, HardLinksOmitted: len(linked)}, nil
}

func searchTarget(_ context.Context, c *op.Call, args SearchArgs) (*op.Plan, error) {
	r, err := resolveTarget(c, args.TargetID, false)
	if err != nil {
		return nil, err
	}
	return &op.Plan{Gate: gate(r, "target_search", nil, false, 5), Run: func(ctx context.Context) (any, error) {
		return runSearch(ctx, c, r, args)
	}}, nil
}
