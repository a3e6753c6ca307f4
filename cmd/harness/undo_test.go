package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// history prints the receipts; revert finds the receipt's repository and
// sends revert with it and the cascade flag.
func TestHistoryAndRevert(t *testing.T) {
	list := `{"receipts":[{"receipt_id":"rcpt_2","request_id":"q2","operation":"apply_patch","repo_id":"repo_1","run_id":"run_a","at":"2026-01-02T03:04:05Z","fencing_token":7,"paths":["src/a.go"],"revertable":false,"not_revertable":"later writes touched the same files","later_receipts":["rcpt_3"]},
{"receipt_id":"rcpt_1","request_id":"q1","operation":"apply_patch","repo_id":"repo_1","at":"2026-01-02T03:04:00Z","fencing_token":5,"paths":["b.txt"],"revertable":true}]}`
	f := newAPIFake(t, map[string]string{
		"POST /v1/receipt_list": list,
		"POST /v1/revert":       `{"receipt_id":"rcpt_9","operation":"revert","fencing_token":8,"reverts":["rcpt_3","rcpt_2"],"changes":[{"path":"src/a.go","op":"write"}]}`,
	})
	code, out, errOut := cliRun(t, f.dataDir, "history", "--run", "run_a")
	if code != exitOK {
		t.Fatalf("history: exit %d %s", code, errOut)
	}
	for _, want := range []string{"rcpt_2", "run_a", "no: later writes", "src/a.go", "rcpt_1", "yes"} {
		if !strings.Contains(out, want) {
			t.Errorf("history output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = cliRun(t, f.dataDir, "revert", "rcpt_2", "--cascade", "--request-id", "r-1")
	if code != exitOK {
		t.Fatalf("revert: exit %d %s", code, errOut)
	}
	if !strings.Contains(out, "reverted rcpt_3, rcpt_2") {
		t.Errorf("revert output:\n%s", out)
	}
	var sent struct {
		RepoID    string `json:"repo_id"`
		ReceiptID string `json:"receipt_id"`
		RequestID string `json:"request_id"`
		Cascade   bool   `json:"cascade"`
	}
	calls := f.recorded()
	last := calls[len(calls)-1]
	if last.route != "POST /v1/revert" || json.Unmarshal([]byte(last.body), &sent) != nil ||
		sent.RepoID != "repo_1" || sent.ReceiptID != "rcpt_2" || sent.RequestID != "r-1" || !sent.Cascade {
		t.Fatalf("revert sent %+v (%s)", sent, last.body)
	}
	if code, _, _ := cliRun(t, f.dataDir, "revert", "rcpt_unknown"); code == exitOK {
		t.Fatal("revert of an unknown receipt succeeded")
	}
}
