package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

// The run page shows the run's scorecard, and /ui/clients each client's
// runs summed (run_scorecard).
func TestRunPageAndClientsShowScorecards(t *testing.T) {
	f := setup(t)
	ctx := harness.WithCaller(context.Background(), harness.Caller{Session: "s-score", Client: harness.Client{Name: "agent-x", Version: "2"}})
	run, err := f.h.RunStart(ctx, harness.RunStartArgs{Goal: "score me"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.GitStatus(ctx, harness.GitStatusArgs{RepoID: f.repoID}); err != nil {
		t.Fatal(err)
	}
	b := f.browser(t)
	b.login(testToken)
	for _, tt := range []struct{ path, want string }{
		{"/ui/runs/" + run.RunID, "0/0 commits tested, 0/0 stages verified"},
		{"/ui/clients", "All runs of agent-x: 0 succeeded, 0 failed, 1 active (0 stuck)"},
	} {
		resp, body := b.get(tt.path)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, tt.want) {
			t.Errorf("GET %s: %d, want 200 with %q in:\n%.3000s", tt.path, resp.StatusCode, tt.want, body)
		}
	}
}
