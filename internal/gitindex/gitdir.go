package gitindex

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// GitDirs returns the git dirs of the work tree root: dir, its own (the
// index, HEAD, per-worktree refs, MERGE_HEAD and the like), and common,
// the one it shares (objects, refs, packed-refs, config, info/). For a
// main checkout (root/.git a directory) both are root/.git. For a linked
// worktree or a submodule, root/.git is a file "gitdir: <dir>" (relative
// to root when not absolute), and common is what dir's commondir file
// names (relative to dir), else dir itself. The directories must exist.
func GitDirs(root string) (dir, common string, err error) {
	dot := filepath.Join(root, ".git")
	fi, err := os.Lstat(dot)
	if err != nil {
		return "", "", err
	}
	switch {
	case fi.IsDir():
		dir = dot
	case fi.Mode().IsRegular():
		b, err := readSmall(dot)
		if err != nil {
			return "", "", err
		}
		d, ok := strings.CutPrefix(string(b), "gitdir: ")
		d = strings.TrimRight(d, "\r\n\t ")
		if !ok || d == "" || strings.ContainsRune(d, '\n') {
			return "", "", fmt.Errorf("%s is not a gitdir file", dot)
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(root, d)
		}
		dir = filepath.Clean(d)
	default:
		return "", "", fmt.Errorf("%s is neither a directory nor a gitdir file", dot)
	}
	common = dir
	if b, err := readSmall(filepath.Join(dir, "commondir")); err == nil {
		c := strings.TrimRight(string(b), "\r\n")
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		common = filepath.Clean(c)
	}
	for _, d := range []string{dir, common} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return "", "", fmt.Errorf("git dir %s of %s is not a directory", d, root)
		}
	}
	return dir, common, nil
}

// readSmall reads a file of at most 64 KiB (a .git or commondir file).
func readSmall(p string) ([]byte, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if len(b) > 64<<10 || bytes.IndexByte(b, 0) >= 0 {
		return nil, fmt.Errorf("%s is not a small text file", p)
	}
	return b, nil
}
