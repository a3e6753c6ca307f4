package search

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testMaxFileSize is the file size cap the fixture is built around.
const testMaxFileSize = 64 << 10

// git runs git in dir for a test fixture.
func git(t fatalT, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func writeFile(t fatalT, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func requireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// fixtureFiles is the content of the fixture work tree.
func fixtureFiles() map[string]string {
	many := strings.Builder{}
	for i := 1; i <= 600; i++ {
		many.WriteString("manyword line\n")
	}
	late := strings.Repeat("needle before a late NUL\n", 4000) + "\x00needle\n"
	return map[string]string{
		".gitignore":                "ignored.txt\nbuild/\n*.log\n",
		"src/main.go":               "package main\n\n// needle in main\nfunc main() {}\n",
		"src/util/helper.go":        "package util\n\nvar X = \"needle\" // needle twice\n",
		"src/util/deep/deeper/x.go": "package deeper\n// the needle is deep\n",
		"src-tools/y.go":            "package tools // needle\n",
		"docs.md":                   "needle docs file\n",
		"docs/guide.md":             "# Guide\nno match here\nthe needle guide\n",
		"ignored.txt":               "needle ignored\n",
		"build/out.txt":             "needle built\n",
		"app.log":                   "needle log\n",
		"keep.log":                  "tracked needle despite ignore\n",
		"localonly.txt":             "needle excluded by info/exclude\n",
		"untracked.txt":             "untracked needle\n",
		".github/x.yml":             "on: push # needle\n",
		"bin.dat":                   "needle\x00binary\n",
		"late.bin":                  late,
		"big.txt":                   "needle\n" + strings.Repeat("x", testMaxFileSize),
		"exact.txt":                 "needle\n" + strings.Repeat("y", testMaxFileSize-8) + "\n",
		".env":                      "TOKEN=needle-secret\n",
		"conf[1].env":               "needle=secret2\n",
		"secrets/key.txt":           "needle private key\n",
		"unicode.txt":               "héllo needle 日本語\nÄRGER NEEDLE ÜBER\n",
		"upper.txt":                 "NEEDLE ONLY UPPER\n",
		"long.txt":                  strings.Repeat("é", 600) + " needle\n",
		"crlf.txt":                  "first needle\r\nsecond\r\nthird needle\r\n",
		"latin1.txt":                "caf\xe9 needle\n",
		"bom.txt":                   "\xef\xbb\xbfneedle after bom\n",
		"many.txt":                  many.String(),
		"noeol.txt":                 "a\nneedle without newline",
		"empty.txt":                 "",
		"words.txt":                 "needles\nneedle\nfoo_needle\n",
	}
}

// makeFixture builds a git work tree exercising every file-selection rule.
func makeFixture(t testing.TB) string {
	t.Helper()
	requireGit(t)
	root := t.TempDir()
	git(t, root, "init", "-q", ".")
	for rel, c := range fixtureFiles() {
		writeFile(t, root, rel, c)
	}
	writeFile(t, root, ".git/info/exclude", "localonly.txt\n")
	if err := os.Symlink("src/main.go", filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	git(t, root, "add", ".")
	git(t, root, "add", "-f", "keep.log")
	git(t, root, "rm", "-q", "--cached", "untracked.txt")
	git(t, root, "commit", "-q", "-m", "fixture")
	return root
}

// isSecret is the fixture's Exclude.
func isSecret(rel string) bool {
	return strings.HasSuffix(rel, ".env") || strings.HasPrefix(rel, "secrets/")
}

func testSearcher(rg string) *Searcher {
	return &Searcher{RG: rg, Exclude: isSecret, Limits: Limits{MaxFileSize: testMaxFileSize}}
}

func rgPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("rg")
	if err != nil {
		t.Skip("ripgrep (rg) is not installed")
	}
	return p
}
