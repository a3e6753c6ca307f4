package ctxasm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/harnessd/harnessd/internal/gitindex"
)

// langByExt maps file extensions to the languages rules are chosen by.
var langByExt = map[string]string{
	".go": "go",
	".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript",
	".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
	".py": "python", ".pyi": "python",
	".rs":   "rust",
	".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala",
	".rb": "ruby", ".php": "php", ".swift": "swift", ".cs": "csharp",
	".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp",
	".sh": "shell", ".bash": "shell", ".zsh": "shell",
	".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hs": "haskell",
	".lua": "lua", ".dart": "dart", ".zig": "zig", ".sql": "sql",
}

// langWords are the words that name a language in a heading or a rule's
// description.
var langWords = map[string]string{
	"go": "go", "golang": "go",
	"typescript": "typescript", "ts": "typescript", "tsx": "typescript",
	"javascript": "javascript", "js": "javascript", "node": "javascript", "nodejs": "javascript",
	"python": "python", "py": "python",
	"rust": "rust", "java": "java", "kotlin": "kotlin", "scala": "scala",
	"ruby": "ruby", "php": "php", "swift": "swift", "csharp": "csharp",
	"c": "c", "cpp": "cpp", "shell": "shell", "bash": "shell",
	"elixir": "elixir", "erlang": "erlang", "haskell": "haskell",
	"lua": "lua", "dart": "dart", "zig": "zig", "sql": "sql",
}

// Languages returns the languages of paths by extension, sorted.
func Languages(paths []string) []string {
	seen := map[string]bool{}
	for _, p := range paths {
		if l, ok := langByExt[ext(p)]; ok {
			seen[l] = true
		}
	}
	out := make([]string, 0, len(seen))
	for l := range seen {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// errIndex is a git index that cannot be parsed.
var errIndex = errors.New("ctxasm: unreadable git index")

// ParseIndex returns the paths of a git index (versions 2, 3 and 4, SHA-1
// or SHA-256 object ids), in index order. It never panics on bad input.
// The decoding is gitindex.Parse's, the one index decoder of the repo.
func ParseIndex(b []byte) ([]string, error) {
	ix, err := gitindex.ParseAny(b)
	if err != nil || ix.Has("link") || ix.Has("sdir") {
		return nil, errIndex
	}
	paths := make([]string, len(ix.Entries))
	for i := range ix.Entries {
		paths[i] = ix.Entries[i].Path
	}
	return paths, nil
}

// indexPath returns the git index of the work tree at root: .git/index,
// or the index of the git dir a .git file names.
func indexPath(root string) string {
	dot := filepath.Join(root, ".git")
	fi, err := os.Lstat(dot)
	if err != nil {
		return ""
	}
	if fi.IsDir() {
		return filepath.Join(dot, "index")
	}
	b, err := os.ReadFile(dot)
	if err != nil || len(b) > 4096 {
		return ""
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	return filepath.Join(dir, "index")
}

// maxWalk bounds the fallback walk of a checkout without an index.
const maxWalk = 10000

// walkPaths lists files below root (no .git, no hidden or vendored
// directories), at most maxWalk: the fallback of a checkout without index.
func walkPaths(root string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if len(out) >= maxWalk {
			return filepath.SkipAll
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if rel, err := filepath.Rel(root, p); err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}
