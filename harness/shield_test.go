package harness_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// TestRunCommandShieldKeepsTheAgentsSelection: through run_command, the
// agent's own file selection (grep --include, rg -g, a git grep from a
// subdirectory) gives what it gives directly, minus the secret paths.
func TestRunCommandShieldKeepsTheAgentsSelection(t *testing.T) {
	h := open(t)
	ctx := context.Background()
	root := testutil.Repo(t, map[string]string{
		"a.js": "needle a\n", "b.py": "needle b\n", "sub/c.js": "needle c\n", ".env": "needle=secret\n", "sub/.env.js": "needle env\n",
	})
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		argv []string
		cwd  string
		want []string
		need string
	}{
		{argv: []string{"grep", "-rn", "--include=*.js", "needle", "."}, want: []string{"./a.js:1:needle a", "./sub/c.js:1:needle c"}, need: "grep"},
		{argv: []string{"grep", "-rln", "needle", "."}, want: []string{"./a.js", "./b.py", "./sub/c.js"}, need: "grep"},
		{argv: []string{"rg", "-n", "-g", "*.js", "needle"}, want: []string{"a.js:1:needle a", "sub/c.js:1:needle c"}, need: "rg"},
		{argv: []string{"git", "grep", "-n", "needle"}, cwd: "sub", want: []string{"c.js:1:needle c"}, need: "git"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			if _, err := exec.LookPath(tt.need); err != nil {
				t.Skip(tt.need + " is not installed")
			}
			res, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: r.ID, Argv: tt.argv, Cwd: tt.cwd})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSpace(res.Stdout.Text), "\n")
			if res.ExitCode != 0 || strings.Join(slices.Sorted(slices.Values(got)), "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("exit %d, stdout %q (stderr %q), want exit 0 and %q", res.ExitCode, got, res.Stderr.Text, tt.want)
			}
		})
	}
}
