package read

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/readfile"
	"github.com/harnessd/harnessd/internal/route"
)

// listDirOp is list_dir: a directory's entries, in core.
func listDirOp() op.Op {
	return op.Def(op.Spec[ListDirArgs]{Name: "list_dir", Output: ListDirResult{}, ReadOnly: true,
		Route: route.Readonly, Toolset: op.Core, Roles: op.ReadRoles,
		Description: "List a directory (names, types, sizes): to see what is there before you read. Text inside files: search. Example: {\"path\":\"src\"}",
		Repo:        func(a ListDirArgs) string { return a.RepoID }, Prepare: listDir})
}

// ListDirArgs are the arguments of list_dir.
type ListDirArgs struct {
	RepoID                  string `json:"repo_id" jsonschema:"from repository_list"`
	Path                    string `json:"path,omitempty" jsonschema:"default the root"`
	MaxEntries              int    `json:"max_entries,omitempty" jsonschema:"default 500, max 2000"`
	IncludeLatencyBreakdown bool   `json:"include_latency_breakdown,omitempty"`
	op.Approval
}

// ListDirResult is the result of list_dir.
type ListDirResult struct {
	readfile.Listing
	op.Meta
}

// TextBlock makes the MCP text block of list_dir the listing itself, one
// entry a line as ls -p writes them (a directory ends in /, a symlink in
// @), with a file's size after a tab; the note says what was left out.
func (r *ListDirResult) TextBlock() (text, note string, ok bool) {
	var b strings.Builder
	for _, e := range r.Entries {
		b.WriteString(e.Name)
		switch e.Type {
		case "dir":
			b.WriteByte('/')
		case "symlink":
			b.WriteByte('@')
		case "file":
			b.WriteByte('\t')
			b.WriteString(strconv.FormatInt(e.Size, 10))
		}
		b.WriteByte('\n')
	}
	note = fmt.Sprintf("[%s: %d entries", r.Path, len(r.Entries))
	if r.Truncated {
		note += "; truncated: more entries (raise max_entries, or list a subdirectory)"
	}
	if r.Omitted > 0 {
		note += fmt.Sprintf("; %d left out (secret paths, .git)", r.Omitted)
	}
	return b.String(), note + "]", true
}

// WithoutText is list_dir's result without its entries, for the MCP
// structured content when the text block carries them.
func (r *ListDirResult) WithoutText() any {
	return listDirMeta{ListDirResult: r, Count: len(r.Entries)}
}

// listDirMeta is a ListDirResult whose entries are left out of its JSON,
// with their count.
type listDirMeta struct {
	*ListDirResult
	Entries []readfile.Entry `json:"entries,omitempty"`
	Count   int              `json:"count"`
}

func listDir(_ context.Context, c *op.Call, args ListDirArgs) (*op.Plan, error) {
	path := args.Path
	if path == "" {
		path = "."
	}
	return &op.Plan{Gate: govern.Input{Paths: []string{path}}, Breakdown: args.IncludeLatencyBreakdown,
		Run: func(context.Context) (any, error) {
			l, err := readfile.List(c.Root, readfile.ListRequest{Path: args.Path, MaxEntries: args.MaxEntries})
			if err != nil {
				return nil, err
			}
			return &ListDirResult{Listing: l}, nil
		}}, nil
}
