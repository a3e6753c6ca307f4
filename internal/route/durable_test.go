package route

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/classify"
)

// Destructive work in the checkout and explicit remote writes are durable
// work behind a person on job_start; every other tool is pointed there (a
// git push to git_push), run_check included; what has no stated effect
// stays rejected. Read-only and workspace_write commands route as before.
func TestDecideDurableBehindAPerson(t *testing.T) {
	tests := []struct {
		req     Request
		mode    Mode
		suggest string
		risk    int
		kind    classify.EffectKind // "" = no effect
		reason  string
	}{
		{cmd(Job, "job_start", "rm", "-rf", "pkg"), Durable, SuggestJobStart, 95, classify.WorkspaceDelete, "removes pkg"},
		{cmd(Job, "job_start", "git", "reset", "--hard"), Durable, SuggestJobStart, 95, classify.WorkspaceDelete, "uncommitted changes"},
		{cmd(Job, "job_start", "find", "build", "-name", "*.o", "-delete"), Durable, SuggestJobStart, 95, classify.WorkspaceDelete, "files under build"},
		{cmd(Job, "job_start", "npm", "publish"), Durable, SuggestJobStart, 75, classify.RemoteWrite, "network for that job only"},
		{cmd(Job, "job_start", "gh", "pr", "merge", "3"), Durable, SuggestJobStart, 75, classify.RemoteWrite, "pr merge 3"},
		{cmd(Job, "job_start", "gh", "release", "create", "v1"), Durable, SuggestJobStart, 75, classify.RemoteWrite, "release create v1"},
		{cmd(Job, "job_start", "git", "push", "origin", "main"), Durable, SuggestGitPush, 75, classify.GitPush, "pushes main to origin"},
		{cmd(Job, "job_start", "git", "push", "--force", "origin", "main"), Durable, SuggestGitPush, 95, classify.GitPush, "(force)"},
		{cmd(Command, "run_command", "rm", "-rf", "pkg"), Durable, SuggestJobStart, 95, classify.WorkspaceDelete, "behind a person's approval"},
		{cmd(Command, "run_command", "npm", "publish"), Durable, SuggestJobStart, 75, classify.RemoteWrite, ""},
		{cmd(Command, "run_command", "git", "push"), Durable, SuggestGitPush, 75, classify.GitPush, ""},
		{cmd(Check, "run_check", "rm", "-rf", "pkg"), Durable, SuggestJobStart, 95, classify.WorkspaceDelete, ""},
		{cmd(Check, "run_check", "cargo", "publish"), Durable, SuggestJobStart, 75, classify.RemoteWrite, ""},
		// Rejected: no stated effect.
		{cmd(Job, "job_start", "rm", "-rf", "/"), Reject, "", 95, "", "absolute path"},
		{cmd(Job, "job_start", "rm", "-rf", "../x"), Reject, "", 95, "", "leaves its directory"},
		{cmd(Job, "job_start", "rm", "-rf", "/home/me"), Reject, "", 95, "", "absolute path"},
		{cmd(Job, "job_start", "mkfs.ext4", "/dev/sda"), Reject, "", 95, "", "formats"},
		{cmd(Job, "job_start", "git", "-c", "alias.p=push", "p"), Reject, "", 95, "", "alias"},
		{cmd(Job, "job_start", "git", "push", "--mirror"), Reject, "", 95, "", "git_push"},
		{cmd(Job, "job_start", "git", "config", "remote.origin.mirror", "true"), Reject, "", 75, "", "implicit remote write"},
		{Request{Tool: "job_start", Kind: Job, Argv: []string{"sh", "-c", "git push origin main"}, Confined: true}, Reject, "", 75, "", "remote command rejected"},
		{Request{Tool: "job_start", Kind: Job, Argv: []string{"bash", "-c", "rm -rf pkg"}, Confined: true}, Reject, "", 95, "", "destructive command rejected"},
		{cmd(Job, "job_start", "curl", "-d", "x", "http://h"), Reject, "", 75, "", "curl upload"},
		{cmd(Batch, "batch"), Reject, "", 50, "", "no steps"},
		// Benign: as before.
		{cmd(Command, "run_command", "ls", "-la"), Fast, "", 10, "", ""},
		{cmd(Job, "job_start", "make"), Durable, SuggestJobStart, 50, "", "job_start runs a durable job"},
		{cmd(Command, "run_command", "rm", "-f", "out.txt"), Durable, SuggestJobStart, 50, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.req.Tool+" "+strings.Join(tt.req.Argv, " "), func(t *testing.T) {
			d := Decide(tt.req)
			if d.Mode != tt.mode || d.SuggestedOperation != tt.suggest || d.Risk != tt.risk {
				t.Fatalf("Decide = %s suggest %q risk %d (%q), want %s suggest %q risk %d", d.Mode, d.SuggestedOperation, d.Risk, d.Reasons, tt.mode, tt.suggest, tt.risk)
			}
			switch {
			case tt.kind == "" && d.Effect != nil:
				t.Errorf("effect = %+v, want none", d.Effect)
			case tt.kind != "" && (d.Effect == nil || d.Effect.Kind != tt.kind):
				t.Errorf("effect = %+v, want kind %s", d.Effect, tt.kind)
			}
			if tt.kind != "" && (!d.Mutation || !d.RequiresRecovery) {
				t.Errorf("mutation %v, recovery %v: want both", d.Mutation, d.RequiresRecovery)
			}
			if tt.reason != "" && !strings.Contains(strings.Join(d.Reasons, "; "), tt.reason) {
				t.Errorf("reasons %q, want one containing %q", d.Reasons, tt.reason)
			}
		})
	}
}
