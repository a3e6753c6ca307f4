package gitindex

import (
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/testutil"
)

// FuzzParse: Parse never panics, and what it accepts is consistent: entries
// fit in the input, are strictly ordered, and have valid paths. Each input
// is also tried with its checksum repaired, so mutations reach the entry
// decoder instead of stopping at the checksum.
func FuzzParse(f *testing.F) {
	for _, ver := range []int{2, 3, 4} {
		dir := newRepo(f, "sha1", map[string]string{"a-c": "1", "a.b": "2", "a/b": "3", "dir/sub/c.txt": "4"})
		if ver == 3 {
			testutil.Git(f, dir, "update-index", "--skip-worktree", "a-c")
		}
		testutil.Git(f, dir, "update-index", "--index-version", strconv.Itoa(ver))
		f.Add(readIndex(f, dir))
	}
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(b []byte) {
			ix, err := Parse(b, 20)
			if err != nil {
				return
			}
			if len(ix.Entries) > len(b)/64 {
				t.Fatalf("%d entries from %d bytes", len(ix.Entries), len(b))
			}
			if ix.Has("link") || ix.Has("sdir") {
				return // split or sparse: entries are not all paths
			}
			for i, e := range ix.Entries {
				if err := checkPath([]byte(e.Path)); err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(e.Path, "/") || len(e.OID) != 20 {
					t.Fatalf("entry %+v", e)
				}
				if i > 0 && ix.Entries[i-1].Path > e.Path {
					t.Fatalf("unordered %q > %q", ix.Entries[i-1].Path, e.Path)
				}
				if got, ok := ix.Lookup(e.Path); e.Stage == 0 && (!ok || got.Path != e.Path) {
					t.Fatalf("Lookup(%q) failed", e.Path)
				}
			}
		}
		check(b)
		if len(b) > 20 {
			check(rechecksum(b))
		}
	})
}

// FuzzNormalize: changed paths are either refused with INVALID_ARGUMENT or
// become clean relative paths inside the work tree, outside any .git.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"a", "./a//b/", "../x", "/abs", ".git/index", "sub/.git/HEAD", "a/../../b", ".", "", "a\x00b", ".GIT/x"} {
		f.Add(s, "d/e")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		out, err := normalize([]string{a, b})
		if err != nil {
			if errs.CodeOf(err) != errs.InvalidArgument {
				t.Fatalf("error %v is not INVALID_ARGUMENT", err)
			}
			return
		}
		for _, p := range out {
			if p == "" {
				if len(out) != 1 {
					t.Fatalf("the whole tree and more: %q", out)
				}
				continue
			}
			if path.Clean(p) != p || strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") || strings.IndexByte(p, 0) >= 0 {
				t.Fatalf("normalize(%q, %q) gave %q", a, b, p)
			}
			for _, c := range strings.Split(p, "/") {
				if strings.EqualFold(c, ".git") {
					t.Fatalf("normalize(%q, %q) gave %q inside .git", a, b, p)
				}
			}
		}
	})
}
