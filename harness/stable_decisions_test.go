package harness_test

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/testutil"
)

// historyPart returns the history points of a route_explain score.
func historyPart(s mediate.Score) int {
	for _, p := range s.Parts {
		if p.Name == "history" {
			return p.Points
		}
	}
	return 0
}

// The corpus of issue 28, end to end: four searches without a match (with
// other work between them, as in a session), a grep that exits 2 and two
// refused secret reads are benign work; afterwards go vet, node --version
// and python3 --version as jobs do not ask, and route_explain shows why
// (the score's parts, no history).
func TestBenignWorkKeepsDecisionsStable(t *testing.T) {
	h, root, id := fixture(t)
	testutil.WriteFile(t, root, "test/sample_key.pem", "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n")
	ctx := session("corpus")
	grep := harness.RunCommandArgs{RepoID: id, Argv: []string{"grep", "-rn", "NoSuchThingAnywhere", "src"}}
	for i := 0; i < 4; i++ {
		r, err := h.RunCommand(ctx, grep)
		if err != nil {
			t.Fatalf("grep %d: %v, want an answer (exit 1), not a refusal", i+1, err)
		}
		if r.ExitCode != 1 {
			t.Fatalf("grep %d: exit %d, want 1 (no match)", i+1, r.ExitCode)
		}
		if _, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: "README.md"}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: []string{"grep", "-rn", "x", "no-such-dir"}}); err != nil || r.ExitCode != 2 {
		t.Fatalf("grep of a missing dir: %+v, %v; want exit 2", r, err)
	}
	for _, p := range []string{".env", "test/sample_key.pem"} {
		if _, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: p}); errs.CodeOf(err) != errs.SecretPathDenied {
			t.Fatalf("read_file %s: %v, want SECRET_PATH_DENIED", p, err)
		}
	}
	for _, argv := range [][]string{{"go", "vet", "./..."}, {"node", "--version"}, {"python3", "--version"}} {
		ex, err := h.RouteExplain(ctx, harness.RouteExplainArgs{Tool: "job_start", Argv: argv})
		if err != nil {
			t.Fatal(err)
		}
		if ex.Risk.Asks || historyPart(ex.Risk) != 0 || ex.Risk.Risk >= ex.Risk.AskAt || len(ex.Risk.Parts) == 0 || ex.Risk.Parts[0].Name != "base" {
			t.Errorf("route_explain job_start %q: %+v, want a score below %d with its parts and no history", argv, ex.Risk, ex.Risk.AskAt)
		}
		if mediate.VersionQuery(argv) && ex.Risk.Exempt != mediate.ExemptVersionQuery {
			t.Errorf("route_explain job_start %q: exempt %q, want %q", argv, ex.Risk.Exempt, mediate.ExemptVersionQuery)
		}
		j, err := h.JobStart(ctx, harness.JobStartArgs{RepoID: id, Argv: argv, RequestID: reqID(t)})
		if err != nil {
			t.Fatalf("job_start %q after benign work: %v, want it started without a person", argv, err)
		}
		waitJob(t, h, j.JobID) // whether the program is installed does not matter here
	}
}

// A command refused again and again raises its own risk, for its caller
// only: route_explain shows the history part, another session sees none.
func TestRefusedCommandRaisesItsOwnRisk(t *testing.T) {
	h, _, id := fixture(t)
	ctx := session("prober")
	dump := []string{"python3", "tools/dump.py", ".env"}
	for i := 0; i < 3; i++ {
		if _, err := h.JobStart(ctx, harness.JobStartArgs{RepoID: id, Argv: dump, RequestID: reqID(t)}); errs.CodeOf(err) != errs.SecretPathDenied {
			t.Fatalf("job_start %q: %v, want SECRET_PATH_DENIED", dump, err)
		}
	}
	ex, err := h.RouteExplain(ctx, harness.RouteExplainArgs{Tool: "job_start", Argv: dump})
	if err != nil {
		t.Fatal(err)
	}
	if historyPart(ex.Risk) != mediate.HistoryCap || ex.Risk.Risk < ex.Risk.AskAt || !ex.Risk.Asks || !strings.Contains(ex.Risk.Text, "this command refused 3.0 times") {
		t.Errorf("route_explain after 3 refusals: %+v, want history %d and a score that asks", ex.Risk, mediate.HistoryCap)
	}
	other, err := h.RouteExplain(session("someone-else"), harness.RouteExplainArgs{Tool: "job_start", Argv: dump})
	if err != nil {
		t.Fatal(err)
	}
	if historyPart(other.Risk) != 0 || other.Risk.Risk != ex.Risk.Risk-mediate.HistoryCap {
		t.Errorf("another session: %+v, want no history", other.Risk)
	}
	// Unrelated work of the prober is not charged.
	vet, err := h.RouteExplain(ctx, harness.RouteExplainArgs{Tool: "job_start", Argv: []string{"go", "vet", "./..."}})
	if err != nil || historyPart(vet.Risk) != 0 {
		t.Errorf("go vet of the prober: %+v, %v; want no history", vet, err)
	}
}

// A real loop is still caught: the same failing command back to back
// answers LOOP_DETECTED on the third try; other work in between makes it
// a new attempt, and hammering again is caught again.
func TestRealLoopStillCaught(t *testing.T) {
	h, _, id := fixture(t)
	ctx := session("hammer")
	cat := harness.RunCommandArgs{RepoID: id, Argv: []string{"cat", "missing-file"}}
	try := func(wantLoop bool) {
		t.Helper()
		r, err := h.RunCommand(ctx, cat)
		if got := errs.CodeOf(err) == errs.LoopDetected; got != wantLoop {
			t.Fatalf("cat missing-file: %+v, %v; want loop %v", r, err, wantLoop)
		}
		if !wantLoop && (err != nil || r.ExitCode == 0) {
			t.Fatalf("cat missing-file: %+v, %v; want it to run and fail", r, err)
		}
	}
	try(false)
	try(false)
	try(true)
	try(true) // the blocked retry is the same call again
	if _, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: "README.md"}); err != nil {
		t.Fatal(err)
	}
	try(false)
	try(false)
	try(true)
	// The loop refusals are history of that command (shown, not asking:
	// cat is read-only).
	ex, err := h.RouteExplain(ctx, harness.RouteExplainArgs{Tool: "run_command", Argv: cat.Argv})
	if err != nil {
		t.Fatal(err)
	}
	if historyPart(ex.Risk) == 0 || ex.Risk.Exempt != mediate.ExemptReadOnly || ex.Risk.Asks {
		t.Errorf("route_explain after loops: %+v, want history shown and read-only exempt", ex.Risk)
	}
}
