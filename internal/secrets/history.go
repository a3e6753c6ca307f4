package secrets

import (
	"bytes"
	"context"
	"strings"

	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

// History bounds: the blobs of secret paths read from the repository's
// history, and their bytes together.
const (
	maxHistoryBlobs = 256
	maxHistoryBytes = 16 << 20
	maxHistoryLog   = 8 << 20 // output of the git log that finds them
)

// historyPathspecs turns the denylist into git pathspecs matching the same
// paths at any depth, case-insensitively (patterns git's globs cannot say,
// such as braces, are left out). A list whose patterns match through the
// root's own path (a root inside .aws: "credentials") has a match no name
// below the root shows: every path is listed, and secretInHistory decides.
func historyPathspecs(deny *pathsafe.Denylist) []string {
	if deny.Crosses() {
		return []string{":(glob)**"}
	}
	var out []string
	for _, p := range deny.Patterns() {
		if strings.ContainsAny(p, "{}") {
			continue
		}
		p = strings.Trim(p, "/")
		out = append(out, ":(glob,icase)**/"+p)
		if !strings.HasSuffix(p, "**") {
			out = append(out, ":(glob,icase)**/"+p+"/**") // a directory of that name
		}
	}
	return out
}

// secretInHistory reports whether the path p of a commit is a secret of the
// root or lies in a secret directory (the pathspecs also list the files
// below a directory named like a secret, as the walk closes them).
func secretInHistory(deny *pathsafe.Denylist, p string) bool {
	for {
		if _, ok := deny.Match(p); ok {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// learnHistory returns the values held by the secret paths anywhere in the
// repository's history (every ref, the stash included), and the ids of
// their blobs: a value rotated out of HEAD still comes back through
// `git log -p` or `git cat-file` of its old blob. It reads at most
// maxHistoryBlobs blobs.
func learnHistory(ctx context.Context, git *gitx.Git, root string, deny *pathsafe.Denylist) (values, oids []string, err error) {
	specs := historyPathspecs(deny)
	if len(specs) == 0 {
		return nil, nil, nil
	}
	args := append([]string{"log", "--all", "--no-renames", "--format=", "--raw", "--no-abbrev", "-z", "--"}, specs...)
	out, _, err := git.Run(ctx, root, maxHistoryLog, args...)
	if err != nil {
		return nil, nil, err
	}
	// Records: ":<mode> <mode> <old> <new> <status>\0<path>\0".
	type blob struct{ oid, path string }
	var blobs []blob
	seen := map[string]bool{}
	fields := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(fields) && len(blobs) < maxHistoryBlobs; i += 2 {
		meta := strings.Fields(strings.TrimPrefix(string(fields[i]), ":"))
		if len(meta) < 5 {
			break
		}
		path := string(fields[i+1])
		if !secretInHistory(deny, path) {
			continue // a person's exception, or a wider pathspec's catch
		}
		for _, oid := range meta[2:4] {
			if validOID(oid) && strings.Trim(oid, "0") != "" && !seen[oid] && (isFileMode(meta[0]) || isFileMode(meta[1])) {
				seen[oid] = true
				blobs = append(blobs, blob{oid: oid, path: path})
			}
		}
	}
	for _, b := range blobs {
		oids = append(oids, b.oid)
	}
	vs := newValueSet()
	budget := maxHistoryBytes
	var first error
	for _, b := range blobs {
		if budget <= 0 || ctx.Err() != nil {
			break
		}
		content, _, err := git.Run(ctx, root, min(MaxFileBytes, budget), "cat-file", "blob", b.oid)
		if err != nil {
			if first == nil && ctx.Err() == nil {
				first = err
			}
			continue
		}
		budget -= len(content)
		extract(b.path, string(content), vs)
	}
	return vs.sorted(), oids, first
}
