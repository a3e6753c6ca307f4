package gitx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestHardenedEnv(t *testing.T) {
	forced := []string{
		"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat", "PAGER=cat", "GIT_EDITOR=false",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1", "GIT_NO_LAZY_FETCH=1", "GIT_PROTOCOL_FROM_USER=0", "LC_ALL=C",
	}
	tests := []struct {
		name string
		in   []string
		keep []string
	}{
		{"empty", nil, nil},
		{
			name: "allowlist kept in order",
			in:   []string{"USER=u", "PATH=/bin", "HOME=/h", "LANG=de_DE.UTF-8", "TMPDIR=/t"},
			keep: []string{"PATH=/bin", "HOME=/h", "LANG=de_DE.UTF-8", "TMPDIR=/t", "USER=u"},
		},
		{
			name: "git variables dropped",
			in: []string{"PATH=/bin", "GIT_DIR=/x", "GIT_WORK_TREE=/y", "GIT_EXTERNAL_DIFF=e", "GIT_CONFIG_PARAMETERS='a'='b'",
				"GIT_CONFIG_COUNT=1", "GIT_SSH=s", "GIT_SSH_COMMAND=s", "GIT_ASKPASS=a", "GIT_EXEC_PATH=/e", "GIT_INDEX_FILE=/i",
				"SSH_ASKPASS=a", "LD_PRELOAD=/evil.so", "XDG_CONFIG_HOME=/x", "PATHX=1", "GIT_PAGER=evil", "PAGER=evil"},
			keep: []string{"PATH=/bin"},
		},
		{
			name: "forced LC_ALL wins",
			in:   []string{"LC_ALL=de_DE.UTF-8", "HOME=/h"},
			keep: []string{"HOME=/h"},
		},
		{
			name: "last duplicate wins",
			in:   []string{"PATH=/a", "PATH=/b"},
			keep: []string{"PATH=/b"},
		},
		{
			name: "malformed entries ignored",
			in:   []string{"PATH", "=x", "HOME="},
			keep: []string{"HOME="},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HardenedEnv(tt.in)
			want := append(append([]string(nil), tt.keep...), forced...)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
	}
}

func TestCmd(t *testing.T) {
	t.Setenv("GIT_DIR", "/evil")
	dir := newRepo(t)
	var g Git
	cmd := g.Cmd(context.Background(), dir, "status", "--", "-x")
	if !filepath.IsAbs(cmd.Path) {
		t.Errorf("path = %q, want an absolute path", cmd.Path)
	}
	args := cmd.Args[1:]
	if !reflect.DeepEqual(args[:len(globalArgs)], globalArgs) {
		t.Errorf("args start %q, want the global flags %q", args, globalArgs)
	}
	if tail := args[len(args)-3:]; !reflect.DeepEqual(tail, []string{"status", "--", "-x"}) {
		t.Errorf("args end %q, want status -- -x", tail)
	}
	if cmd.Dir != dir {
		t.Errorf("dir = %q, want %q", cmd.Dir, dir)
	}
	for _, kv := range cmd.Env {
		if strings.HasPrefix(kv, "GIT_DIR=") {
			t.Errorf("env has %q", kv)
		}
	}
	if cmd.Stdin != nil {
		t.Error("stdin is set, want /dev/null")
	}
	if cmd.WaitDelay == 0 {
		t.Error("WaitDelay unset")
	}
	for _, want := range []string{"--no-pager", "core.fsmonitor=false", "core.hooksPath=/dev/null", "core.pager=cat", "diff.external=",
		"protocol.allow=never", "credential.helper=", "color.ui=false", "diff.noprefix=false", "core.quotePath=false"} {
		found := false
		for _, a := range args {
			if a == want {
				found = true
			}
		}
		if !found {
			t.Errorf("args lack %q", want)
		}
	}
}

func TestRun(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	writeFile(t, dir, "a", "a\n")
	commitAll(t, dir, "one")
	head := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
	var g Git

	out, trunc, err := g.Run(ctx, dir, 0, "rev-parse", "HEAD")
	if err != nil || trunc || strings.TrimSpace(string(out)) != head {
		t.Fatalf("got %q/%v/%v, want %q/false/nil", out, trunc, err, head)
	}
	out, trunc, err = g.Run(ctx, dir, 10, "rev-parse", "HEAD")
	if err != nil || !trunc || string(out) != head[:10] {
		t.Fatalf("capped: got %q/%v/%v, want %q/true/nil", out, trunc, err, head[:10])
	}

	_, _, err = g.Run(ctx, dir, 0, "rev-parse", "--verify", "nope^{commit}")
	if c := errs.CodeOf(err); c != errs.NotFound {
		t.Errorf("code = %s (%v), want NOT_FOUND", c, err)
	}
	_, _, err = g.Run(ctx, dir, 0, "no-such-subcommand")
	var e *errs.Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "is not a git command") || e.Details["exit_code"] != 1 {
		t.Errorf("got %v (details %v), want stderr quoted and exit_code 1", err, e)
	}
}

func TestRunFailures(t *testing.T) {
	dir := newRepo(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		g    Git
		ctx  context.Context
		dir  string
		want errs.Code
	}{
		{"missing dir", Git{}, context.Background(), filepath.Join(dir, "nope"), errs.NotFound},
		{"cancelled", Git{}, cancelled, dir, errs.Cancelled},
		{"missing binary name", Git{Bin: "gitx-no-such-binary"}, context.Background(), dir, errs.Unavailable},
		{"missing binary path", Git{Bin: "/nonexistent/git"}, context.Background(), dir, errs.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := tt.g.Run(tt.ctx, tt.dir, 0, "status")
			if c := errs.CodeOf(err); c != tt.want {
				t.Fatalf("code = %s (%v), want %s", c, err, tt.want)
			}
		})
	}
}

func TestRunTimeout(t *testing.T) {
	dir := newRepo(t)
	tmp := t.TempDir()
	slow := filepath.Join(tmp, "slow-git")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	g := Git{Bin: slow}
	_, _, err := g.Run(ctx, dir, 0, "status")
	if c := errs.CodeOf(err); c != errs.Timeout {
		t.Fatalf("code = %s (%v), want TIMEOUT", c, err)
	}
}

func TestCapWriter(t *testing.T) {
	tests := []struct {
		name        string
		limit       int
		drain       int64
		writes      []string
		wantBuf     string
		wantTotal   int64
		wantStopped bool
	}{
		{"under limit", 10, 0, []string{"abc", "de"}, "abcde", 5, false},
		{"cut", 4, -1, []string{"abc", "defg"}, "abcd", 7, false},
		{"stop after drain", 2, 3, []string{"abcd", "ef", "gh"}, "ab", 6, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &capWriter{limit: tt.limit, drain: tt.drain}
			for _, s := range tt.writes {
				if _, err := w.Write([]byte(s)); err != nil {
					break
				}
			}
			if string(w.buf) != tt.wantBuf || w.total != tt.wantTotal || w.stopped != tt.wantStopped {
				t.Errorf("got %q/%d/%v, want %q/%d/%v", w.buf, w.total, w.stopped, tt.wantBuf, tt.wantTotal, tt.wantStopped)
			}
		})
	}
}

func TestRunStopsRunawayOutput(t *testing.T) {
	dir := newRepo(t)
	writeFile(t, dir, "big", strings.Repeat("x", 1<<20))
	commitAll(t, dir, "big")
	var g Git
	r, err := g.run(testCtx(t), dir, 1000, 1000, []string{"cat-file", "-p", "HEAD:big"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.truncated || !r.stopped || len(r.out) != 1000 || r.total < 2000 {
		t.Errorf("truncated/stopped/len/total = %v/%v/%d/%d, want true/true/1000/>=2000", r.truncated, r.stopped, len(r.out), r.total)
	}
}

func TestVersionAtLeast(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"git version 2.39.5\n", true},
		{"git version 2.24.0", true},
		{"git version 2.23.4", false},
		{"git version 1.9", false},
		{"git version 3.0.0", true},
		{"git version 2.45.1.windows.1", true},
		{"garbage", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := versionAtLeast(tt.in, 2, 24); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCodeForStderr(t *testing.T) {
	tests := []struct {
		in   string
		want errs.Code
	}{
		{"fatal: not a git repository (or any of the parent directories): .git", errs.NotAGitRepository},
		{"fatal: this operation must be run in a work tree", errs.NotAGitRepository},
		{"fatal: detected dubious ownership in repository at '/x'", errs.NotAGitRepository},
		{"fatal: bad revision 'nope'", errs.NotFound},
		{"fatal: ambiguous argument 'x': unknown revision or path not in the working tree.", errs.NotFound},
		{"error: unknown option `frob'", errs.InvalidArgument},
		{"fatal: x: '/etc' is outside repository at '/r'", errs.PathOutsideRoot},
		{"fatal: something else", errs.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := codeForStderr(tt.in); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestTrimStderr(t *testing.T) {
	long := strings.Repeat("é", maxErrorStderr)
	tests := []struct {
		name string
		in   string
		want func(string) bool
	}{
		{"empty", "  \n", func(s string) bool { return s == "(no error output)" }},
		{"trimmed", "\n fatal: x \n", func(s string) bool { return s == "fatal: x" }},
		{"bounded valid utf8", long, func(s string) bool {
			return len(s) <= maxErrorStderr+3 && strings.HasSuffix(s, "...") && !strings.Contains(s, "\uFFFD")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := trimStderr([]byte(tt.in)); !tt.want(got) {
				t.Errorf("got %q", got)
			}
		})
	}
}

func TestSubcommand(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "status"},
		{[]string{"-c", "a=b", "commit", "-m", "x"}, "commit"},
		{[]string{"--no-pager"}, "(none)"},
	}
	for _, tt := range tests {
		if got := subcommand(tt.args); got != tt.want {
			t.Errorf("subcommand(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
