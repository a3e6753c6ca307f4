package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/messages"
)

func TestContaining(t *testing.T) {
	repos := []registered{{"repo_a", "/src/app"}, {"repo_v", "/src/app/vendor/lib"}, {"repo_x", "/src/apple"}, {"repo_r", "/"}}
	for _, tc := range []struct {
		dir, want string
	}{
		{"/src/app", "repo_a"},
		{"/src/app/cmd/x", "repo_a"},
		{"/src/app/vendor/lib", "repo_v"},     // the longest root wins
		{"/src/app/vendor/lib/a/b", "repo_v"}, // and below it
		{"/src/app/vendor", "repo_a"},
		{"/src/apple/x", "repo_x"}, // not /src/app: a prefix of the name is not a parent
		{"/tmp", "repo_r"},
	} {
		got, ok := containing(tc.dir, repos)
		if !ok || got.ID != tc.want {
			t.Errorf("containing(%s) = %v %v, want %s", tc.dir, got, ok, tc.want)
		}
	}
	if got, ok := containing("/src/app", []registered{{"repo_x", "/src/apple"}}); ok {
		t.Errorf("containing found %v", got)
	}
}

func TestRepoPath(t *testing.T) {
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	if err := os.MkdirAll(filepath.Join(root, "src", "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	in := placed(registered{"repo_1", root}, filepath.Join(root, "src"))
	elsewhere := placed(registered{"repo_1", root}, "/somewhere/else")
	for _, tc := range []struct {
		h       here
		arg     string
		want    string
		wantErr string
	}{
		{in, "a.go", "src/a.go", ""},
		{in, "pkg/../b.go", "src/b.go", ""},
		{in, "../README.md", "README.md", ""},
		{in, ".", "src", ""},
		{in, "..", ".", ""},
		{in, "new/file.go", "src/new/file.go", ""}, // not there yet (patch --replace of a new path)
		{in, filepath.Join(root, "go.mod"), "go.mod", ""},
		{in, filepath.Join(link, "src", "pkg", "x.go"), "src/pkg/x.go", ""}, // through a symlink to the root
		{in, "../../etc/passwd", "", "outside the repository"},
		{in, "/etc/passwd", "", "outside the repository"},
		{in, "", "", "empty path"},
		{elsewhere, "docs/a.md", "docs/a.md", ""}, // --repo from outside: relative to its root
	} {
		got, err := tc.h.repoPath(tc.arg)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("repoPath(%q) = %q, %v; want an error %q", tc.arg, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("repoPath(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
		}
	}
	if in.Prefix != "src" || elsewhere.Prefix != "" || elsewhere.cwd != "" {
		t.Errorf("placed: %+v %+v", in, elsewhere)
	}
	for rel, want := range map[string]string{"src/a.go": "a.go", "README.md": "../README.md", "src/pkg/x.go": "pkg/x.go"} {
		if got := in.display(rel); got != want {
			t.Errorf("display(%s) = %s, want %s", rel, got, want)
		}
	}
	if got := elsewhere.display("src/a.go"); got != "src/a.go" {
		t.Errorf("display from elsewhere = %s", got)
	}
}

func TestPatchOps(t *testing.T) {
	for _, tc := range []struct {
		name, diff string
		want       []patch.Op
		wantErr    string
	}{
		{name: "git diff of one hunk",
			diff: "diff --git a/src/a.go b/src/a.go\nindex 1111111..2222222 100644\n--- a/src/a.go\n+++ b/src/a.go\n@@ -1,3 +1,3 @@\n package a\n-var n = 1\n+var n = 2\n // end\n",
			want: []patch.Op{{Op: "replace", Path: "src/a.go", OldText: "package a\nvar n = 1\n// end\n", NewText: "package a\nvar n = 2\n// end\n"}}},
		{name: "two hunks, two files, diff -u timestamps",
			diff: "--- a.txt\t2026-01-01 00:00:00\n+++ a.txt\t2026-01-02 00:00:00\n@@ -1 +1,2 @@\n one\n+two\n@@ -9,2 +10 @@\n x\n-y\n--- b/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-old\n+new\n",
			want: []patch.Op{{Op: "replace", Path: "a.txt", OldText: "one\n", NewText: "one\ntwo\n"}, {Op: "replace", Path: "a.txt", OldText: "x\ny\n", NewText: "x\n"},
				{Op: "replace", Path: "c.txt", OldText: "old\n", NewText: "new\n"}}},
		{name: "no newline at end of file",
			diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n keep\n-last\n\\ No newline at end of file\n+last!\n\\ No newline at end of file\n",
			want: []patch.Op{{Op: "replace", Path: "f", OldText: "keep\nlast", NewText: "keep\nlast!"}}},
		{name: "a context line whose space was trimmed",
			diff: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n",
			want: []patch.Op{{Op: "replace", Path: "f", OldText: "a\n\nb\n", NewText: "a\n\nc\n"}}},
		{name: "new executable file",
			diff: "diff --git a/run.sh b/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo hi\n",
			want: []patch.Op{{Op: "create", Path: "run.sh", Content: "#!/bin/sh\necho hi\n", Mode: "0755"}}},
		{name: "deleted file",
			diff: "diff --git a/old.go b/old.go\ndeleted file mode 100644\n--- a/old.go\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-package old\n-var x = 1\n",
			want: []patch.Op{{Op: "delete", Path: "old.go"}}},
		{name: "empty", diff: "", wantErr: "no hunk found"},
		{name: "not a diff", diff: "hello\nworld\n", wantErr: "no hunk found"},
		{name: "hunk without header", diff: "@@ -1 +1 @@\n-a\n+b\n", wantErr: "before its file's ---/+++ header"},
		{name: "short hunk", diff: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n", wantErr: "ends early"},
		{name: "garbage in a hunk", diff: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n*b\n", wantErr: "is not a line of a hunk"},
		{name: "rename", diff: "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n", wantErr: "renames and copies are not supported"},
		{name: "binary", diff: "diff --git a/i.png b/i.png\nBinary files a/i.png and b/i.png differ\n", wantErr: "binary changes are not supported"},
		{name: "pure insertion without context", diff: "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n", wantErr: "without context lines"},
		{name: "bad header", diff: "--- a/f\n+++ b/f\n@@ -x +1 @@\n", wantErr: "bad line number"},
	} {
		got, err := patchOps(tc.diff)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %+v, %v; want an error %q", tc.name, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: op %d = %+v, want %+v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

func TestShortStatus(t *testing.T) {
	h := placed(registered{"repo_1", "/r"}, "/r/src")
	st := gitx.Status{Branch: "main", Head: "abc", Upstream: "origin/main", Ahead: 1, Behind: 2,
		Staged:     []gitx.Entry{{Path: "src/a.go", Status: "modified"}, {Path: "src/new.go", Status: "added"}, {Path: "src/r2.go", OrigPath: "src/r1.go", Status: "renamed"}},
		Unstaged:   []gitx.Entry{{Path: "src/a.go", Status: "modified"}, {Path: "README.md", Status: "deleted"}},
		Conflicted: []gitx.Entry{{Path: "src/c.go", Status: "unmerged"}},
		Untracked:  []string{"src/z.txt", "notes\x1b[2J.txt"}}
	want := "## main...origin/main [ahead 1, behind 2]\n" +
		" D ../README.md\n" +
		"MM a.go\n" +
		"UU c.go\n" +
		"A  new.go\n" +
		"R  r1.go -> r2.go\n" +
		`?? ../notes\x1b[2J.txt` + "\n" +
		"?? z.txt\n"
	if got := shortStatus(h, st); got != want {
		t.Errorf("shortStatus:\n%s\nwant:\n%s", got, want)
	}
	for _, tc := range []struct {
		st   gitx.Status
		want string
	}{
		{gitx.Status{Detached: true, Head: "abc", Clean: true}, "## HEAD (no branch)\n"},
		{gitx.Status{Branch: "main"}, "## No commits yet on main\n"},
		{gitx.Status{Branch: "dev", Head: "abc", Upstream: "origin/dev"}, "## dev...origin/dev\n"},
	} {
		if got := shortStatus(h, tc.st); got != tc.want {
			t.Errorf("shortStatus(%+v) = %q, want %q", tc.st, got, tc.want)
		}
	}
}

func TestGrepAndLogLines(t *testing.T) {
	h := placed(registered{"repo_1", "/r"}, "/r/src")
	got := grepLines(h, []grepMatch{{"src/b.go", 3, "x"}, {"README.md", 10, "see src"}, {"src/b.go", 1, "a\rb"}})
	if want := "../README.md:10:see src\nb.go:1:a\\rb\nb.go:3:x\n"; got != want {
		t.Errorf("grepLines = %q, want %q", got, want)
	}
	got = logLines("abc1234\t2026-12-01\tAda Lovelace\tparser: accept empty input\ndef5678\t2026-11-30\tX\x1b]0;t\x07\tfix\n")
	if want := "abc1234 2026-12-01 Ada Lovelace     parser: accept empty input\ndef5678 2026-11-30 " + `X\x1b]0;t\x07` + "    fix\n"; got != want {
		t.Errorf("logLines = %q, want %q", got, want)
	}
}

func TestAuditSubject(t *testing.T) {
	for _, tc := range []struct {
		e    messages.AuditEntry
		want string
	}{
		{messages.AuditEntry{Kind: "job", Operation: "job_start", RequestID: "j1", Details: map[string]string{"job_id": "job_7", "attempt": "1"}}, "job job_7, req j1"},
		{messages.AuditEntry{Kind: "mutation", Operation: "apply_patch", Paths: []string{"a.go", "b.go"}, RequestID: "fix-1"}, "a.go b.go, req fix-1"},
		{messages.AuditEntry{Kind: "ask", Operation: "run_command", RuleID: "ask-ls-tree", RunID: "run_1"}, "run run_1, rule ask-ls-tree"},
		{messages.AuditEntry{Kind: "approval", Details: map[string]string{"approval_id": "apr_1"}}, "approval apr_1"},
		{messages.AuditEntry{Kind: "policy_load"}, "-"},
	} {
		if got := auditSubject(tc.e); got != tc.want {
			t.Errorf("auditSubject(%+v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestUnchangedPaths(t *testing.T) {
	st := gitx.Status{Staged: []gitx.Entry{{Path: "s.go"}}, Unstaged: []gitx.Entry{{Path: "u.go"}, {Path: "new.go", OrigPath: "old.go"}}, Untracked: []string{"n.go"}}
	got := unchangedPaths([]string{"s.go", "u.go", "n.go", "old.go", "c.go", "d.go"}, st)
	if strings.Join(got, " ") != "c.go d.go" {
		t.Errorf("unchangedPaths = %v", got)
	}
	if w := committedWarning("rcpt_1", got, false); !strings.Contains(w, "already committed (c.go d.go as in HEAD)") || !strings.Contains(w, "uncommitted change") {
		t.Errorf("warning: %s", w)
	}
	if w := committedWarning("rcpt_1", got, true); strings.Contains(w, "uncommitted") {
		t.Errorf("warning with --commit: %s", w)
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{"/src/app": "/src/app", "/tmp/a b": `'/tmp/a b'`, "/x/it's": `'/x/it'\''s'`, "": "''", "/a/$HOME": `'/a/$HOME'`} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
