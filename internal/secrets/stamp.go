package secrets

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// stamp is what revalidation compares of one file: a change of content
// changes one of these (an absent file has the zero stamp).
type stamp struct {
	size, mtime, ctime int64
	ino                uint64
	mode               os.FileMode
	exists             bool
}

// statStamp returns the stamp of p, not following a final symlink.
func statStamp(p string) stamp {
	fi, err := os.Lstat(p)
	if err != nil {
		return stamp{}
	}
	st := stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode(), exists: true}
	sysStamp(fi, &st)
	return st
}

// fileStamps returns the stamps of the files rel (relative to root).
func fileStamps(root string, rel []string) []stamp {
	out := make([]stamp, len(rel))
	for i, r := range rel {
		out[i] = statStamp(filepath.Join(root, filepath.FromSlash(r)))
	}
	return out
}

// gitFiles returns the files whose stamps tell that the index, HEAD or
// config of the checkout at root changed: the index, HEAD, the config and
// config.worktree, and for a symbolic HEAD the branch's ref file and
// packed-refs. A .git file ("gitdir: ...", in linked worktrees and
// submodules) and a commondir file are followed.
func gitFiles(root string) []string {
	files, _ := gitFilesDir(root)
	return files
}

// gitFilesDir is gitFiles, and the git dir it found.
func gitFilesDir(root string) (files []string, gitDir string) {
	gitDir = filepath.Join(root, ".git")
	if fi, err := os.Lstat(gitDir); err == nil && fi.Mode().IsRegular() {
		if d, ok := strings.CutPrefix(readSmall(gitDir), "gitdir:"); ok {
			gitDir = absUnder(root, strings.TrimSpace(d))
		}
	}
	common := gitDir
	if c := strings.TrimSpace(readSmall(filepath.Join(gitDir, "commondir"))); c != "" {
		common = absUnder(gitDir, c)
	}
	files = []string{filepath.Join(gitDir, "index"), filepath.Join(gitDir, "HEAD")}
	// The config files: credentials in remote URLs and extra headers.
	files = append(files, filepath.Join(common, "config"), filepath.Join(gitDir, "config.worktree"))
	if ref, ok := strings.CutPrefix(strings.TrimSpace(readSmall(filepath.Join(gitDir, "HEAD"))), "ref:"); ok {
		ref = strings.TrimSpace(ref)
		if strings.HasPrefix(ref, "refs/") && filepath.IsLocal(ref) {
			files = append(files, filepath.Join(common, filepath.FromSlash(ref)), filepath.Join(common, "packed-refs"))
		}
	}
	return files, gitDir
}

// gitLocator remembers what gitFiles found for one checkout, with the
// stamps of the files it read to find it (.git, HEAD, commondir): while
// they are unchanged, and were not racy when taken, the answer is the same,
// and finding it costs three lstats instead of two reads.
type gitLocator struct {
	files  []string
	gitDir string
	key    []stamp
	at     time.Time
}

func (l *gitLocator) keyPaths(root string) []string {
	return []string{filepath.Join(root, ".git"), filepath.Join(l.gitDir, "HEAD"), filepath.Join(l.gitDir, "commondir")}
}

// find returns gitFiles(root), reusing the last answer when it still holds.
func (l *gitLocator) find(root string) []string {
	if l.gitDir != "" {
		key := fileStamps("", l.keyPaths(root))
		if slices.Equal(key, l.key) && !racy(l.at, l.key) {
			return l.files
		}
	}
	at := time.Now()
	// The stamps are taken before the reads: a change during them shows
	// as a different key next time.
	prev := l.gitDir
	if prev == "" {
		prev = filepath.Join(root, ".git")
	}
	l.gitDir = prev
	key := fileStamps("", l.keyPaths(root))
	files, gitDir := gitFilesDir(root)
	if gitDir != prev {
		l.gitDir = gitDir
		key = nil // taken on another git dir: find again next time
	}
	l.files, l.key, l.at = files, key, at
	return files
}

func absUnder(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// readSmall returns the first KiB of the regular file p, "" on any error.
func readSmall(p string) string { return readHead(p, 1024) }

// readHead returns the first limit bytes of the regular file p, "" on any
// error.
func readHead(p string, limit int64) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, limit))
	return string(b)
}
