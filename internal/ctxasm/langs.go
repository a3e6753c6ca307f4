package ctxasm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// maxIndexEntries bounds the entries read from a git index.
const maxIndexEntries = 1 << 21

// errIndex is a git index that cannot be parsed.
var errIndex = errors.New("ctxasm: unreadable git index")

// ParseIndex returns the paths of a git index (versions 2, 3 and 4, SHA-1
// or SHA-256 object ids), in index order. It never panics on bad input.
func ParseIndex(b []byte) ([]string, error) {
	for _, hashSize := range [...]int{20, 32} {
		if paths, err := parseIndex(b, hashSize); err == nil {
			return paths, nil
		}
	}
	return nil, errIndex
}

func parseIndex(b []byte, hashSize int) ([]string, error) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, errIndex
	}
	ver := binary.BigEndian.Uint32(b[4:8])
	n := binary.BigEndian.Uint32(b[8:12])
	if ver < 2 || ver > 4 || n > maxIndexEntries {
		return nil, errIndex
	}
	fixed := 40 + hashSize + 2 // stat fields, object id, flags
	off := 12
	paths := make([]string, 0, min(int(n), 1<<16))
	var prev []byte
	for i := uint32(0); i < n; i++ {
		start := off
		if off+fixed > len(b) {
			return nil, errIndex
		}
		flags := binary.BigEndian.Uint16(b[off+fixed-2 : off+fixed])
		off += fixed
		if flags&0x4000 != 0 {
			if ver < 3 || off+2 > len(b) {
				return nil, errIndex
			}
			off += 2
		}
		var name []byte
		if ver == 4 {
			strip, k := varint(b[off:])
			if k <= 0 || strip > uint64(len(prev)) {
				return nil, errIndex
			}
			off += k
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, errIndex
			}
			name = append(append([]byte(nil), prev[:len(prev)-int(strip)]...), b[off:off+end]...)
			off += end + 1
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, errIndex
			}
			name = b[off : off+end]
			entry := off + end - start
			off = start + (entry+8)&^7 // 1 to 8 NULs pad the entry to 8 bytes
			if off > len(b) {
				return nil, errIndex
			}
		}
		if len(name) == 0 {
			return nil, errIndex
		}
		prev = name
		paths = append(paths, string(name))
	}
	return paths, nil
}

// varint decodes git's offset varint (index v4 prefix lengths).
func varint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 0x7f)
	i := 1
	for c&0x80 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		c = b[i]
		v = ((v + 1) << 7) | uint64(c&0x7f)
		i++
	}
	return v, i
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
