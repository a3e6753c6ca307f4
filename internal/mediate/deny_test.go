package mediate

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/route"
)

// The gate decides with the root's own list: a secret by the root's
// absolute path is blocked, a person's exception is not, and the refusal
// names the exception that would take the path off the list.
func TestDecideWithTheRootsList(t *testing.T) {
	aws, err := (*pathsafe.Denylist)(nil).ForRoot("/srv/x/.aws", nil)
	if err != nil {
		t.Fatal(err)
	}
	excepted, err := (*pathsafe.Denylist)(nil).ForRoot("/srv/r", []string{"test/*.pem"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		deny    *pathsafe.Denylist
		path    string
		want    Outcome
		wantFix string
	}{
		{"credentials by the absolute path", aws, "credentials", Block, "secret_exceptions {repo: /srv/x/.aws, paths: [credentials]}"},
		{"plain file under .aws", aws, "notes.txt", Allow, ""},
		{"excepted fixture", excepted, "test/key.pem", Allow, ""},
		{"beside the exception", excepted, "test/.env", Block, "paths: [test/.env]"},
		{"outside the exception", excepted, "other/key.pem", Block, "paths: [other/key.pem]"},
		{"cleaned in the fix", excepted, "./other//key.pem", Block, "paths: [other/key.pem]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(Input{Tool: "read_file", Kind: route.Readonly, Paths: []string{tt.path}, Deny: tt.deny})
			if d.Outcome != tt.want {
				t.Fatalf("Decide = %s (%s), want %s", d.Outcome, d.Reason, tt.want)
			}
			if tt.want == Block && (d.Code != errs.SecretPathDenied || d.RuleID != RuleSecretPath || !strings.Contains(d.Reason, tt.wantFix)) {
				t.Errorf("block = %s %s %q, want SECRET_PATH_DENIED secret-path naming %q", d.Code, d.RuleID, d.Reason, tt.wantFix)
			}
		})
	}
}
