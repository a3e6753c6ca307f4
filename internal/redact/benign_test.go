package redact

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// grepPrefixRE matches the file name and line number that grep -rn, git
// grep -n and rg -n (--column) put in front of a matched line, or the
// path-line- of a context line. The search operation returns the line
// without it, and its path beside it.
var grepPrefixRE = regexp.MustCompile(`^(?:[A-Za-z0-9_~^-]+:)?((?:\./)?[^\s:]*?[^\s:\d][^\s:]*?)(?::\d+:(?:\d+:)?|-\d+-)`)

type benignLine struct {
	where string // file:line in testdata/benign
	text  string
	path  string // the file a search match comes from, or ""
}

// redact redacts l as harnessd does: a search match with its path
// (StringIn), anything else as it comes (String).
func (l benignLine) redact(r *Redactor) (string, int) {
	if l.path != "" {
		return r.StringIn(l.path, l.text)
	}
	return r.String(l.text)
}

// benignLines returns every line of testdata/benign (README aside), and
// the lines of grep-like output once more without their path:line: prefix.
func benignLines(t testing.TB) (lines []benignLine, stripped int) {
	t.Helper()
	root := filepath.Join("testdata", "benign")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "README.md" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		grepLike := strings.Contains(rel, "grep") || strings.HasPrefix(rel, "rg-")
		for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			where := rel + ":" + itoa(i+1)
			lines = append(lines, benignLine{where: where, text: l})
			if grepLike {
				if m := grepPrefixRE.FindStringSubmatch(l); m != nil {
					lines = append(lines, benignLine{where: where + " (search match)", text: l[len(m[0]):], path: m[1]})
					stripped++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 4000 {
		t.Fatalf("benign corpus: %d lines, want the whole corpus (at least 4000)", len(lines))
	}
	return lines, stripped
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		if i /= 10; i == 0 {
			return string(b[n:])
		}
	}
}

// TestBenignCorpus is the precision test: no line of real, secret-free
// output (test runners, grep and search results of real projects,
// lockfiles, hashes and test vectors) is redacted.
func TestBenignCorpus(t *testing.T) {
	lines, stripped := benignLines(t)
	r := Default()
	fp := 0
	byRule := map[string]int{}
	for _, l := range lines {
		out, n := l.redact(r)
		if n == 0 {
			continue
		}
		fp++
		for _, part := range strings.Split(out, markerPrefix)[1:] {
			byRule[part[:strings.IndexByte(part, ']')]]++
		}
		if fp <= 40 {
			t.Errorf("%s: false positive\n  in:  %.300s\n  out: %.300s", l.where, l.text, out)
		}
	}
	t.Logf("benign corpus: %d lines (%d of them grep lines as search matches), %d redacted, by rule %v", len(lines), stripped, fp, byRule)
	if fp > 40 {
		t.Errorf("... %d false positives in all", fp)
	}
}
