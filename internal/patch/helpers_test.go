package patch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// tb is the part of testing.TB the helpers use; *rapid.T has it too.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// testRoot is a minimal Resolver: it joins relative paths to dir and refuses
// absolute paths and ".." escapes. It does not resolve symlinks.
type testRoot struct{ dir string }

func (r testRoot) ResolveWrite(p string) (string, string, error) {
	if strings.ContainsRune(p, 0) {
		return "", "", errs.New(errs.InvalidArgument, "path contains NUL")
	}
	if filepath.IsAbs(p) {
		return "", "", errs.New(errs.PathOutsideRoot, "path %q escapes the repository root", p)
	}
	c := filepath.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", "", errs.New(errs.PathOutsideRoot, "path %q escapes the repository root", p)
	}
	return filepath.Join(r.dir, c), filepath.ToSlash(c), nil
}

// entry is one path of a snapshot.
type entry struct {
	Kind string // "file", "dir", "link"
	Data string // content or link target
	Mode fs.FileMode
}

func (e entry) String() string {
	return fmt.Sprintf("%s %v %q", e.Kind, e.Mode, e.Data)
}

// snapshot records every path under dir.
func snapshot(t tb, dir string) map[string]entry {
	t.Helper()
	m := make(map[string]entry)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			m[filepath.ToSlash(rel)] = entry{Kind: "dir", Mode: fi.Mode() & permBits}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			m[filepath.ToSlash(rel)] = entry{Kind: "link", Data: target}
		case !fi.Mode().IsRegular():
			m[filepath.ToSlash(rel)] = entry{Kind: fi.Mode().Type().String(), Mode: fi.Mode() & permBits}
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[filepath.ToSlash(rel)] = entry{Kind: "file", Data: string(b), Mode: fi.Mode() & permBits}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return m
}

// diffSnapshots describes how got differs from want, "" if equal.
func diffSnapshots(got, want map[string]entry) string {
	var keys []string
	seen := make(map[string]bool)
	for k := range got {
		keys, seen[k] = append(keys, k), true
	}
	for k := range want {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			fmt.Fprintf(&b, "  %s: missing, want %v\n", k, w)
		case !wok:
			fmt.Fprintf(&b, "  %s: got %v, want absent\n", k, g)
		case g != w:
			fmt.Fprintf(&b, "  %s: got %v, want %v\n", k, g, w)
		}
	}
	return b.String()
}

func assertTree(t tb, dir string, want map[string]entry) {
	t.Helper()
	if d := diffSnapshots(snapshot(t, dir), want); d != "" {
		t.Fatalf("tree differs:\n%s", d)
	}
}

// setup creates files ("path": content, mode 0644) under a new temp dir.
func setup(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		writeFile(t, dir, p, content, 0o644)
	}
	return dir
}

func writeFile(t tb, dir, p, content string, mode fs.FileMode) {
	t.Helper()
	abs := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(abs, mode); err != nil {
		t.Fatal(err)
	}
}

// codeOf returns the errs code of err, "" for nil.
func codeOf(err error) errs.Code { return errs.CodeOf(err) }

// details returns the details of a coded error.
func details(t tb, err error) map[string]any {
	t.Helper()
	var e *errs.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *errs.Error", err)
	}
	return e.Details
}

func fileEntry(data string, mode fs.FileMode) entry {
	return entry{Kind: "file", Data: data, Mode: mode}
}

func noSync() Options { return Options{NoSync: true} }
