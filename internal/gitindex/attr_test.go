package gitindex

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/testutil"
)

// attrNames are the attributes the tests compare with git's: those that
// decide what status hashes, and some that do not.
var attrNames = []string{"text", "crlf", "eol", "ident", "filter", "working-tree-encoding", "diff", "merge", "binary", "mymac", "linguist-generated", "foo"}

// gitAttrs is the oracle: `git check-attr` through gitx (no system or
// user attributes file, as for every git harnessd runs), for each path the
// value of each name as check-attr prints it ("unspecified", "set",
// "unset" or the value).
func gitAttrs(t testing.TB, dir string, fold bool, paths []string) map[string]map[string]string {
	t.Helper()
	args := []string{"-c", "core.ignorecase=" + boolWord(fold), "check-attr", "-z"}
	args = append(args, attrNames...)
	args = append(args, "--")
	args = append(args, paths...)
	out, _, err := (&gitx.Git{}).Run(context.Background(), dir, 0, args...)
	if err != nil {
		t.Fatalf("git check-attr: %v", err)
	}
	got := map[string]map[string]string{}
	f := strings.Split(string(out), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if got[f[i]] == nil {
			got[f[i]] = map[string]string{}
		}
		got[f[i]][f[i+1]] = f[i+2]
	}
	return got
}

func boolWord(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// ourAttrs is Attributes.values in check-attr's words.
func ourAttrs(t testing.TB, a *Attributes, paths []string) map[string]map[string]string {
	t.Helper()
	got := map[string]map[string]string{}
	for _, p := range paths {
		vals, _, err := a.values(p)
		if err != nil {
			t.Fatalf("values(%q): %v", p, err)
		}
		m := map[string]string{}
		for _, n := range attrNames {
			v := vals[n]
			switch v.kind {
			case attrSet:
				m[n] = "set"
			case attrFalse:
				m[n] = "unset"
			case attrString:
				m[n] = v.val
			default:
				m[n] = "unspecified"
			}
		}
		got[p] = m
	}
	return got
}

// catFile reads a blob as the view does.
func catFile(dir string) func(oid []byte) ([]byte, error) {
	return func(oid []byte) ([]byte, error) {
		out, _, err := (&gitx.Git{}).Run(context.Background(), dir, 0, "cat-file", "blob", hex.EncodeToString(oid))
		return out, err
	}
}

var (
	attrDirs     = []string{"", "a", "a/b", "B", "a/b/c"}
	attrBase     = []string{"x", "x.txt", "a", "A.TXT", "ab", "b.bin", "[ab]", "read me", "y.c", "ax", "*"}
	patternParts = []string{"a", "b", "x", "*", "?", "**", "/", "[ab]", "[!a]", "[^x]", "[a-c]", "[[:alpha:]]", "[[:upper:]]",
		"[A]", "\\*", "\\A", ".txt", ".TXT", "A", "[", "]", "[]a]", "[a-]", "[[:nope:]]", "[[:al]", "\\", "!", "#", "r", "e", " "}
	settingParts = []string{"text", "-text", "!text", "text=auto", "text=input", "eol=lf", "eol=crlf", "eol=no", "crlf", "-crlf",
		"crlf=input", "ident", "-ident", "filter=x", "filter=lfs", "binary", "-binary", "!binary", "mymac", "-mymac", "diff", "-diff",
		"diff=go", "merge=union", "foo", "foo=", "foo=bar", "working-tree-encoding=UTF-16", "linguist-generated", "-linguist-generated=true",
		"bad/name", "=x", "builtinx"}
)

// genAttrLine draws one line of an attributes file.
func genAttrLine(t *rapid.T, label string) string {
	var pat strings.Builder
	for i, n := 0, rapid.IntRange(1, 4).Draw(t, label+"parts"); i < n; i++ {
		pat.WriteString(rapid.SampledFrom(patternParts).Draw(t, label+"part"))
	}
	p := pat.String()
	switch rapid.IntRange(0, 9).Draw(t, label+"form") {
	case 0:
		p = cquote(p) // a blank is part of a quoted pattern
	case 1:
		p = "[attr]mymac"
	case 2:
		p = "#" + strings.ReplaceAll(p, " ", "")
	case 3:
		p = " \t" + strings.ReplaceAll(p, " ", "")
	default:
		p = strings.ReplaceAll(p, " ", "") // a blank would end the pattern
	}
	var sets []string
	for i, n := 0, rapid.IntRange(0, 4).Draw(t, label+"nsets"); i < n; i++ {
		sets = append(sets, rapid.SampledFrom(settingParts).Draw(t, label+"set"))
	}
	return p + " " + strings.Join(sets, " ")
}

// cquote quotes s as git's C quoting does for the characters it uses.
func cquote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

// TestAttributesProperty: for random attribute files (patterns from
// globs, brackets, classes, escapes, double stars and quoted names;
// settings, unsettings, values, macros and invalid names) in random
// directories and in info/attributes, some only in the index, with and
// without core.ignorecase, Attributes gives every path git check-attr's
// values.
func TestAttributesProperty(t *testing.T) {
	limitChecks(t, "40")
	rapid.Check(t, func(rt *rapid.T) {
		dir := newRepo(t, "sha1", map[string]string{"keep": "k"})
		fold := rapid.Bool().Draw(rt, "fold")
		files := map[string][]string{}
		for _, d := range attrDirs {
			if !rapid.Bool().Draw(rt, "has "+d) {
				continue
			}
			var lines []string
			for i, n := 0, rapid.IntRange(1, 6).Draw(rt, "lines"); i < n; i++ {
				lines = append(lines, genAttrLine(rt, "l"))
			}
			files[d] = lines
		}
		var info []string
		if rapid.Bool().Draw(rt, "info") {
			for i, n := 0, rapid.IntRange(1, 3).Draw(rt, "infolines"); i < n; i++ {
				info = append(info, genAttrLine(rt, "i"))
			}
		}
		eol := rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(rt, "eol")
		for d, lines := range files {
			testutil.WriteFile(t, dir, path.Join(d, ".gitattributes"), strings.Join(lines, eol)+eol)
		}
		if info != nil {
			testutil.WriteFile(t, dir, ".git/info/attributes", strings.Join(info, "\n")+"\n")
		}
		// Some files only in the index: git reads the index's copy.
		var indexOnly []string
		for d := range files {
			if rapid.IntRange(0, 3).Draw(rt, "indexonly "+d) == 0 {
				indexOnly = append(indexOnly, path.Join(d, ".gitattributes"))
			}
		}
		for _, p := range indexOnly {
			// Not `git add`: the file's own attributes could make it fail.
			oid := testutil.Git(t, dir, "hash-object", "-w", "--no-filters", "--", p)
			testutil.Git(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+oid+","+p)
			must(t, os.Remove(filepath.Join(dir, filepath.FromSlash(p))))
		}
		ix, err := ReadFile(filepath.Join(dir, ".git", "index"), 20)
		must(t, err)
		a, err := NewAttributes(dir, filepath.Join(dir, ".git"), ix, fold, catFile(dir))
		must(t, err)
		var paths []string
		for _, d := range attrDirs {
			for _, b := range attrBase {
				paths = append(paths, path.Join(d, b))
			}
		}
		got, want := ourAttrs(t, a, paths), gitAttrs(t, dir, fold, paths)
		for _, p := range paths {
			if !reflect.DeepEqual(got[p], want[p]) {
				var desc strings.Builder
				desc.WriteString("info/attributes:\n  " + strings.Join(info, "\n  ") + "\n")
				for d, lines := range files {
					desc.WriteString("/" + d + "/.gitattributes:\n  " + strings.Join(lines, "\n  ") + "\n")
				}
				rt.Fatalf("%s (fold %v, index only %v):\n got %v\nwant %v\n%s", p, fold, indexOnly, got[p], want[p], desc.String())
			}
		}
	})
}

// TestAttributesCorners pins the reading rules git applies to the files
// themselves, each against git check-attr: a BOM, CRLF lines, a line too
// long, a symbolic link (not followed: the index's copy is read), a
// directory named .gitattributes, a macro outside the root, a negative
// pattern, a quoted pattern, a pattern with a trailing slash.
func TestAttributesCorners(t *testing.T) {
	dir := newRepo(t, "sha1", map[string]string{"keep": "k", "l/.gitattributes": "*.txt text\n"})
	long := "x.txt foo=" + strings.Repeat("v", 2100)
	testutil.WriteFile(t, dir, ".gitattributes", "\xef\xbb\xbf*.txt ident\r\n"+long+"\n[attr]mymac -text foo=m\n\"read me\" mymac\n!x.txt diff\nb/ merge\n*.bin binary\n")
	testutil.WriteFile(t, dir, "a/.gitattributes", "[attr]mymac diff\n*.bin mymac\n")
	must(t, os.MkdirAll(filepath.Join(dir, "d", ".gitattributes"), 0o755))
	must(t, os.Remove(filepath.Join(dir, "l", ".gitattributes")))
	must(t, os.Symlink("../.gitattributes", filepath.Join(dir, "l", ".gitattributes")))
	ix, err := ReadFile(filepath.Join(dir, ".git", "index"), 20)
	must(t, err)
	a, err := NewAttributes(dir, filepath.Join(dir, ".git"), ix, false, catFile(dir))
	must(t, err)
	paths := []string{"x.txt", "read me", "b", "b/x", "a/y.bin", "d/x.txt", "l/x.txt", "l/y.bin"}
	got, want := ourAttrs(t, a, paths), gitAttrs(t, dir, false, paths)
	if !reflect.DeepEqual(got, want) {
		for _, p := range paths {
			if !reflect.DeepEqual(got[p], want[p]) {
				t.Errorf("%s:\n got %v\nwant %v", p, got[p], want[p])
			}
		}
	}
}

// FuzzAttributes: any bytes parse without panic as a file and as a blob,
// matching any path; the file and blob readings agree when the input has
// neither a CR, a NUL nor a BOM; the rules do not depend on the order the
// paths are asked in.
func FuzzAttributes(f *testing.F) {
	f.Add([]byte("*.txt text eol=crlf\n[attr]m -diff\n\"a b\" m\n!neg x\n**/d/** -text\n"), "d/a b")
	f.Add([]byte("[[:alpha:]]*.[ch] ident filter=x\n\\!x working-tree-encoding=UTF-16\n"), "x/!x")
	f.Add([]byte("a/**/b binary\n/a*/ foo\n*[ merge\n"), "a/x/y/b")
	f.Fuzz(func(t *testing.T, b []byte, p string) {
		if len(b) > 1<<16 || len(p) > 256 {
			return
		}
		file := parseAttrFile(b, false, true, false)
		blob := parseAttrFile(b, true, true, true)
		if !bytes.ContainsAny(b, "\r\x00") && !bytes.HasPrefix(b, []byte("\xef\xbb\xbf")) && len(file.rules) != len(blob.rules) {
			t.Fatalf("file reading has %d rules, blob reading %d", len(file.rules), len(blob.rules))
		}
		p = strings.Trim(path.Clean("/"+p), "/")
		if p == "" {
			return
		}
		a := &Attributes{frames: map[string]*attrFile{}, info: &attrFile{}}
		a.frames[""] = file
		for d := parent(p); d != ""; d = parent(d) {
			a.frames[d] = blob
		}
		first, _, err := a.values(p)
		if err != nil {
			t.Fatal(err)
		}
		a.macros = nil
		second, _, _ := a.values(p)
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("values differ between two readings: %v, %v", first, second)
		}
	})
}
