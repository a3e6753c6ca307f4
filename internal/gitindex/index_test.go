package gitindex

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/harnessd/harnessd/internal/testutil"
)

// newRepo makes a repository (object format sha1 or sha256) with files
// committed; names ending in "*" are made executable, "@target" bodies
// become symlinks.
func newRepo(t testing.TB, format string, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, "init", "-q", "-b", "main", "--object-format="+format)
	for name, body := range files {
		exec := strings.HasSuffix(name, "*")
		name = strings.TrimSuffix(name, "*")
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(body, "@"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := os.FileMode(0o644)
		if exec {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "initial")
	return dir
}

func readIndex(t testing.TB, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gitEntries parses `git ls-files -s --debug` into entries.
func gitEntries(t *testing.T, dir string) []Entry {
	t.Helper()
	out := testutil.Git(t, dir, "-c", "core.quotePath=false", "ls-files", "-s", "--debug")
	var es []Entry
	u := func(s string) uint32 {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			t.Fatalf("ls-files --debug: %q: %v", s, err)
		}
		return uint32(v)
	}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, " ") {
			meta, path, ok := strings.Cut(line, "\t")
			f := strings.Fields(meta)
			if !ok || len(f) != 3 {
				t.Fatalf("ls-files line %q", line)
			}
			mode, _ := strconv.ParseUint(f[0], 8, 32)
			oid, _ := hex.DecodeString(f[1])
			stage, _ := strconv.ParseUint(f[2], 10, 2)
			es = append(es, Entry{Path: path, Mode: uint32(mode), OID: oid, Stage: uint8(stage)})
			continue
		}
		e := &es[len(es)-1]
		f := strings.Fields(strings.NewReplacer(":", " ", "\t", " ").Replace(line))
		switch f[0] {
		case "ctime":
			e.CtimeSec, e.CtimeNsec = u(f[1]), u(f[2])
		case "mtime":
			e.MtimeSec, e.MtimeNsec = u(f[1]), u(f[2])
		case "dev":
			e.Dev, e.Ino = u(f[1]), u(f[3])
		case "uid":
			e.UID, e.GID = u(f[1]), u(f[3])
		case "size":
			e.Size = u(f[1])
		}
	}
	return es
}

func sameEntry(a, b Entry) bool {
	a.AssumeValid, a.SkipWorktree, a.IntentToAdd = false, false, false
	b.AssumeValid, b.SkipWorktree, b.IntentToAdd = false, false, false
	return fmt.Sprint(a) == fmt.Sprint(b)
}

var parseFiles = map[string]string{
	"a.go": "package a\n", "a.b": "x", "a/b": "y", "a-b": "z", "a/c/d.txt": "deep\n",
	"run.sh*": "#!/bin/sh\n", "link": "@a.go", "empty": "",
	strings.Repeat("long/", 30) + strings.Repeat("n", 200): "long path",
	"sp ace/ü.txt": "unicode",
}

// TestParseMatchesGit: every field Parse decodes equals what git itself
// prints for the same index, for index versions 2, 3 and 4 and both
// object formats; version 3 carries skip-worktree and intent-to-add flags.
func TestParseMatchesGit(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		for _, ver := range []int{2, 3, 4} {
			t.Run(fmt.Sprintf("%s/v%d", format, ver), func(t *testing.T) {
				dir := newRepo(t, format, parseFiles)
				if ver == 3 {
					testutil.WriteFile(t, dir, "ita.txt", "intent\n")
					testutil.Git(t, dir, "add", "-N", "ita.txt")
					testutil.Git(t, dir, "update-index", "--skip-worktree", "a.b")
				}
				testutil.Git(t, dir, "update-index", "--index-version", strconv.Itoa(ver))
				hs := 20
				if format == "sha256" {
					hs = 32
				}
				ix, err := Parse(readIndex(t, dir), hs)
				if err != nil {
					t.Fatal(err)
				}
				if ix.Version != ver || ix.HashSize != hs {
					t.Fatalf("version %d hash %d, want %d %d", ix.Version, ix.HashSize, ver, hs)
				}
				want := gitEntries(t, dir)
				if len(ix.Entries) != len(want) {
					t.Fatalf("%d entries, git lists %d", len(ix.Entries), len(want))
				}
				for i := range want {
					if !sameEntry(ix.Entries[i], want[i]) {
						t.Errorf("entry %d:\n got %+v\nwant %+v", i, ix.Entries[i], want[i])
					}
				}
				flags := map[string]string{}
				for _, e := range ix.Entries {
					if e.SkipWorktree {
						flags[e.Path] += "S"
					}
					if e.IntentToAdd {
						flags[e.Path] += "N"
					}
				}
				wantFlags := map[string]string{}
				if ver == 3 {
					wantFlags = map[string]string{"a.b": "S", "ita.txt": "N"}
				}
				if fmt.Sprint(flags) != fmt.Sprint(wantFlags) {
					t.Errorf("flags %v, want %v", flags, wantFlags)
				}
				if !ix.Has("TREE") && ver != 3 {
					// git writes TREE after a commit; v3 added an entry since.
					t.Errorf("extensions %v lack TREE", ix.Extensions)
				}
				for _, e := range want {
					if got, ok := ix.Lookup(e.Path); !ok || !bytes.Equal(got.OID, e.OID) {
						t.Errorf("Lookup(%q) = %v, %v", e.Path, got, ok)
					}
				}
				if _, ok := ix.Lookup("a"); ok {
					t.Error("Lookup of a directory found an entry")
				}
				any, err := ParseAny(readIndex(t, dir))
				if err != nil || any.HashSize != hs {
					t.Errorf("ParseAny: %v, hash %d", err, any.HashSize)
				}
			})
		}
	}
}

// rechecksum replaces b's trailing sha1 checksum with the right one.
func rechecksum(b []byte) []byte {
	b = append([]byte(nil), b...)
	copy(b[len(b)-20:], hashOf(20, b[:len(b)-20]))
	return b
}

// TestParseRejects: damaged or crafted indexes give ErrCorrupt, never a
// partial index; an all-zero checksum (index.skipHash) is accepted.
func TestParseRejects(t *testing.T) {
	dir := newRepo(t, "sha1", map[string]string{"a": "1", "b/c": "2", "d": "3"})
	good := readIndex(t, dir)
	firstName := 12 + 62 // v2: the first entry's path
	tests := []struct {
		name string
		b    []byte
		hash int
	}{
		{"flipped checksum", func() []byte { b := append([]byte(nil), good...); b[len(b)-1] ^= 1; return b }(), 20},
		{"flipped body byte", func() []byte { b := append([]byte(nil), good...); b[20] ^= 1; return b }(), 20},
		{"wrong hash size", good, 32},
		{"hash size 16", good, 16},
		{"truncated", rechecksum(good[:60]), 20},
		{"empty", nil, 20},
		{"bad signature", rechecksum(append([]byte("DIRX"), good[4:]...)), 20},
		{"version 5", rechecksum(append(append([]byte("DIRC"), 0, 0, 0, 5), good[8:]...)), 20},
		{"huge count", rechecksum(append(append([]byte("DIRC\x00\x00\x00\x02"), 0x7f, 0xff, 0xff, 0xff), good[12:]...)), 20},
		{"dotdot path", func() []byte {
			b := append([]byte(nil), good...)
			// "a" -> "." is not a path; the flags still say length 1.
			b[firstName] = '.'
			return rechecksum(b)
		}(), 20},
		{"out of order", func() []byte {
			b := append([]byte(nil), good...)
			b[firstName] = 'z' // "z" before "b/c"
			return rechecksum(b)
		}(), 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := Parse(tt.b, tt.hash)
			if !errors.Is(err, ErrCorrupt) || ix != nil {
				t.Fatalf("Parse = %v, %v; want ErrCorrupt", ix, err)
			}
		})
	}
	zero := append([]byte(nil), good...)
	clear(zero[len(zero)-20:])
	if ix, err := Parse(zero, 20); err != nil || len(ix.Entries) != 3 {
		t.Fatalf("all-zero checksum: %v, %v", ix, err)
	}
}

// TestHashBlob: HashBlob equals git hash-object for both object formats.
func TestHashBlob(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		dir := newRepo(t, format, nil)
		hs := map[string]int{"sha1": 20, "sha256": 32}[format]
		for _, body := range []string{"", "hello\n", strings.Repeat("x\x00y", 5000)} {
			testutil.WriteFile(t, dir, "f", body)
			want := testutil.Git(t, dir, "hash-object", "f")
			if got := hex.EncodeToString(HashBlob(hs, []byte(body))); got != want {
				t.Errorf("%s HashBlob(%d bytes) = %s, git says %s", format, len(body), got, want)
			}
		}
	}
}

// TestEntrySize pins the packing of Entry: a live view keeps one per
// tracked file, so 16 bytes more per entry are 1.6 MB more at 100,000
// files (and about twice that in RSS, through the GC's heap goal).
func TestEntrySize(t *testing.T) {
	if strconv.IntSize != 64 {
		t.Skip("sizes are pinned for 64-bit platforms")
	}
	if got := unsafe.Sizeof(Entry{}); got != 88 {
		t.Fatalf("Entry is %d bytes, want 88 (order the fields to pack: the 32-bit fields together, the byte-sized ones last)", got)
	}
}
