package gitx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileRepo builds a repository whose config (and an included file) tries
// every way to make git run a program, each program touching its own marker
// file in markers. It returns the repo and the marker directory.
func hostileRepo(t *testing.T) (dir, markers string) {
	t.Helper()
	dir = newRepo(t)
	markers = t.TempDir()
	script := func(name string) string {
		p := filepath.Join(markers, name+".sh")
		body := "#!/bin/sh\ntouch '" + filepath.Join(markers, name+".ran") + "'\ncat\n"
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeFile(t, dir, "a.txt", "hello\n")
	writeFile(t, dir, "img.bin", "\x00\x01binary\n")
	writeFile(t, dir, ".gitattributes", "*.txt diff=evil filter=evil merge=evil\n*.bin diff=evil2 filter=evil2\n")
	commitAll(t, dir, "base")

	hooks := filepath.Join(markers, "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"pre-commit", "post-checkout", "post-index-change", "reference-transaction", "fsmonitor-watchman", "pre-auto-gc"} {
		s := script("hook-" + h)
		for _, d := range []string{hooks, filepath.Join(dir, ".git", "hooks")} {
			if err := os.WriteFile(filepath.Join(d, h), []byte("#!/bin/sh\nexec '"+s+"'\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	included := filepath.Join(markers, "included.cfg")
	inc := "[filter \"evil2\"]\n\tclean = " + script("filter2-clean") + "\n\tprocess = " + script("filter2-process") + "\n" +
		"[diff \"evil2\"]\n\ttextconv = " + script("textconv2") + "\n\tcommand = " + script("diffcmd2") + "\n"
	if err := os.WriteFile(included, []byte(inc), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]string{
		"core.fsmonitor":     script("fsmonitor"),
		"core.hooksPath":     hooks,
		"core.pager":         script("pager"),
		"pager.status":       script("pager-status"),
		"pager.diff":         script("pager-diff"),
		"core.editor":        script("editor"),
		"core.askPass":       script("askpass"),
		"core.sshCommand":    script("ssh"),
		"diff.external":      script("external"),
		"diff.evil.textconv": script("textconv"),
		"diff.evil.command":  script("diffcmd"),
		"filter.evil.clean":  script("filter-clean"),
		"filter.evil.smudge": script("filter-smudge"),
		"merge.evil.driver":  script("merge-driver"),
		"gpg.program":        script("gpg"),
		"commit.gpgSign":     "true",
		"credential.helper":  script("credential"),
		"include.path":       included,
	}
	for k, v := range cfg {
		gitT(t, dir, "config", k, v)
	}
	// Dirty the work tree so status must hash files (running clean filters).
	writeFile(t, dir, "a.txt", "hello\nworld\n")
	writeFile(t, dir, "img.bin", "\x00\x02binary\n")
	return dir, markers
}

func ranMarkers(t *testing.T, markers string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(markers, "*.ran"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// TestHostileConfigIsReal checks that the hostile repository really runs
// programs under plain git, so the hardened tests below prove something.
func TestHostileConfigIsReal(t *testing.T) {
	dir, markers := hostileRepo(t)
	gitTErr(dir, "status")
	gitTErr(dir, "diff")
	got := strings.Join(ranMarkers(t, markers), " ")
	for _, want := range []string{"fsmonitor.ran", "filter-clean.ran", "diffcmd.ran", "hook-post-index-change.ran"} {
		if !strings.Contains(got, want) {
			t.Errorf("plain git did not run %s (ran: %s)", want, got)
		}
	}
}

func TestHostileConfigStatusAndDiff(t *testing.T) {
	ctx := testCtx(t)
	dir, markers := hostileRepo(t)
	var g Git

	st, err := g.Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Unstaged) != 2 {
		t.Errorf("unstaged = %+v, want a.txt and img.bin", st.Unstaged)
	}
	for _, o := range []DiffOptions{{}, {Staged: true}, {Rev: "HEAD"}, {Staged: true, Rev: "HEAD"}, {Paths: []string{"a.txt"}}} {
		d, err := g.Diff(ctx, dir, o)
		if err != nil {
			t.Fatalf("Diff(%+v): %v", o, err)
		}
		if !o.Staged && !strings.Contains(d.Patch, "+world") {
			t.Errorf("Diff(%+v) patch = %q, want the raw change", o, d.Patch)
		}
	}
	if _, _, err := g.Run(ctx, dir, 0, "log", "-p", "-1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Run(ctx, dir, 0, "show", "HEAD"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.TopLevel(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if ran := ranMarkers(t, markers); len(ran) != 0 {
		t.Fatalf("hostile programs ran: %v", ran)
	}
}

// TestHostileCommitAndStage covers mutations other packages run through Run.
func TestHostileCommitAndStage(t *testing.T) {
	ctx := testCtx(t)
	dir, markers := hostileRepo(t)
	t.Setenv("GIT_AUTHOR_NAME", "A")
	t.Setenv("GIT_AUTHOR_EMAIL", "a@example.com")
	var g Git
	if _, _, err := g.Run(ctx, dir, 0, "add", "--", "a.txt"); err != nil {
		t.Fatal(err)
	}
	_, _, err := g.Run(ctx, dir, 0, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-q", "-m", "msg")
	if err != nil {
		t.Fatal(err)
	}
	if ran := ranMarkers(t, markers); len(ran) != 0 {
		t.Fatalf("hostile programs ran: %v", ran)
	}
}

// TestHostileEnvironment sets the variables that would redirect or subvert
// git and checks that gitx ignores them.
func TestHostileEnvironment(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "one\n")
	commitAll(t, dir, "base")
	writeFile(t, dir, "a.txt", "two\n")
	markers := t.TempDir()
	evil := filepath.Join(markers, "evil.sh")
	if err := os.WriteFile(evil, []byte("#!/bin/sh\ntouch '"+filepath.Join(markers, "env.ran")+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := newRepo(t)
	for k, v := range map[string]string{
		"GIT_DIR":               filepath.Join(other, ".git"),
		"GIT_WORK_TREE":         other,
		"GIT_INDEX_FILE":        filepath.Join(markers, "index"),
		"GIT_EXTERNAL_DIFF":     evil,
		"GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='" + evil + "'",
		"GIT_CONFIG_COUNT":      "1",
		"GIT_CONFIG_KEY_0":      "core.fsmonitor",
		"GIT_CONFIG_VALUE_0":    evil,
		"GIT_SSH_COMMAND":       evil,
		"GIT_ASKPASS":           evil,
		"GIT_EXEC_PATH":         markers,
		"GIT_PAGER":             evil,
		"PAGER":                 evil,
	} {
		t.Setenv(k, v)
	}
	var g Git
	st, err := g.Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Unstaged) != 1 || st.Unstaged[0].Path != "a.txt" {
		t.Errorf("unstaged = %+v, want a.txt (GIT_DIR/GIT_WORK_TREE must be ignored)", st.Unstaged)
	}
	d, err := g.Diff(ctx, dir, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Patch, "+two") {
		t.Errorf("patch = %q, want +two", d.Patch)
	}
	if _, err := os.Stat(filepath.Join(markers, "env.ran")); err == nil {
		t.Fatal("a program named by the environment ran")
	}
}
