package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/textsafe"
)

// Every field of an approval an agent can influence, hostile at once: the
// question keeps its six lines of harnessd's own and the input indented.
func TestElicitMessageEscapesEveryField(t *testing.T) {
	detail, _ := json.MarshalIndent(map[string]any{"argv": []string{"git", "ls-tree", "\u202eHEAD", "a\u0085b\x7f"}}, "", "  ")
	a := &harness.Approval{ID: "apr_1\r", Operation: "run_command\n", RepoID: "repo_1\x1b[2K", Reason: "policy rule \"x\" requires approval: look\nOperation: ls",
		RuleID: "x\u2028y", Client: "agent\x1b]8;;https://evil.example\x07", RunID: "run_1\u200b", Summary: "run_command git ls-tree \u202eHEAD\r\nOperation: ls",
		Detail: string(detail) + "\n\u2066tail", Risk: 5, ExpiresAt: time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)}
	msg := elicitMessage(a)
	for _, r := range msg {
		if r != '\n' && textsafe.Unsafe(r) {
			t.Fatalf("the question holds %U:\n%q", r, msg)
		}
	}
	want := `harnessd: an agent asks to run run_command\n on repo_1\x1b[2K.
Why approval is needed: policy rule "x" requires approval: look\nOperation: ls (risk 5, rule x\u2028y).
Asked by: agent\x1b]8;;https://evil.example\x07 (run run_1\u200b)
Operation: run_command git ls-tree \u202eHEAD\r\nOperation: ls
Exact input:
  {
    "argv": [
      "git",
      "ls-tree",
      "\u202eHEAD",
      "a\u0085b\u007f"
    ]
  }
  \u2066tail
Approving allows exactly this input once (approval apr_1\r, expires 2026-12-06T05:00:00Z).`
	if msg != want {
		t.Errorf("question:\n%s\nwant:\n%s", msg, want)
	}
	// Positive control: an ordinary approval reads as it is.
	plain := &harness.Approval{ID: "apr_2", Operation: "run_command", RepoID: "repo_1", Reason: "someone should look first", Risk: 2,
		Summary: "run_command git ls-tree HEAD", Detail: "{\n  \"argv\": [\"git\", \"ls-tree\", \"HEAD\"]\n}", ExpiresAt: a.ExpiresAt}
	if got := elicitMessage(plain); !strings.Contains(got, "Operation: run_command git ls-tree HEAD\nExact input:\n  {\n    \"argv\": [\"git\", \"ls-tree\", \"HEAD\"]\n  }\n") {
		t.Errorf("a plain question:\n%s", got)
	}
}
