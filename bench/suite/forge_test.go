package suite

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeForge is a forge surface that offers tools but has no server: for
// the pure parts (HasOp, noEquivalent, calls).
func fakeForge(tools ...string) *forgeSurface {
	m := map[string]bool{}
	for _, t := range tools {
		m[t] = true
	}
	return &forgeSurface{raw: &rawSurface{tools: m}}
}

var forgeAll = []string{"repository_register", "read_repository_file", "search_repository", "repository_git_diff",
	"repository_command_execute", "repository_safe_patch_apply", "repository_workbench"}

func TestForgeCallMapsEveryCase(t *testing.T) {
	it := iter{repoID: "r1", n: 0, request: func() string { return "req-1" }}
	want := map[string]string{
		"read_file": "read_repository_file", "search": "search_repository", "git_status": "repository_workbench",
		"git_diff": "repository_git_diff", "run_command": "repository_command_execute", opApplyPatch: "repository_safe_patch_apply",
		opListDir: "repository_command_execute",
	}
	for _, c := range allCases() {
		for _, st := range c.steps {
			tool, args, err := forgeCall(st.op, st.args(it))
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, st.op, err)
			}
			if tool != want[st.op] {
				t.Errorf("%s %s -> %s, want %s", c.name, st.op, tool, want[st.op])
			}
			if args["repo_id"] != "r1" {
				t.Errorf("%s %s: repo_id = %v", c.name, st.op, args["repo_id"])
			}
		}
		if c.via == "" {
			continue
		}
		tool, args, err := forgeCall(c.via, c.viaArgs(it))
		if err != nil {
			t.Fatalf("%s via %s: %v", c.name, c.via, err)
		}
		if tool != "repository_workbench" {
			t.Errorf("%s via %s -> %s", c.name, c.via, tool)
		}
		payload := args["payload"].(map[string]any)
		key, op := "steps", "batch_execute"
		if c.via == "read_lanes" {
			key, op = "read_lanes", "lanes_execute"
		}
		if args["operation"] != op || len(payload[key].([]any)) != len(c.steps) || payload["include_latency_breakdown"] != true {
			t.Errorf("%s via %s: %v", c.name, c.via, args)
		}
	}
}

func TestForgeCallArguments(t *testing.T) {
	tool, a, err := forgeCall(opApplyPatch, map[string]any{
		"repo_id": "r", "request_id": "q", "include_latency_breakdown": true,
		"operations":    []map[string]any{{"op": "replace", "path": AppPath, "old_text": "a", "new_text": "b"}},
		"allowed_paths": []string{"src/**"},
	})
	if err != nil || tool != "repository_safe_patch_apply" {
		t.Fatalf("apply_patch -> %s, %v", tool, err)
	}
	got, _ := json.Marshal(a)
	const want = `{"allowed_paths":["src/**"],"operations":[{"path":"src/app.go","replacements":[{"new_text":"b","old_text":"a"}],"type":"replace"}],"repo_id":"r","request_id":"q"}`
	if string(got) != want {
		t.Errorf("apply_patch args:\n got %s\nwant %s", got, want)
	}

	_, a, _ = forgeCall("run_command", map[string]any{"repo_id": "r", "argv": []string{"git", "status", "--short"}})
	if got, _ := json.Marshal(a); string(got) != `{"command":["git","status","--short"],"repo_id":"r"}` {
		t.Errorf("run_command args: %s", got)
	}

	// Forge has no listing tool: list_dir is the ls its agent runs.
	tool, a, _ = forgeCall(opListDir, map[string]any{"repo_id": "r", "path": "src"})
	if got, _ := json.Marshal(a); tool != "repository_command_execute" || string(got) != `{"command":["ls","-A","-p","src"],"repo_id":"r"}` {
		t.Errorf("list_dir -> %s %s", tool, got)
	}

	tool, a, _ = forgeCall("git_status", map[string]any{"repo_id": "r", "include_latency_breakdown": true})
	if got, _ := json.Marshal(a); tool != "repository_workbench" ||
		string(got) != `{"operation":"batch_execute","payload":{"steps":[{"input":{},"kind":"git_status"}]},"repo_id":"r"}` {
		t.Errorf("git_status -> %s %s", tool, got)
	}

	_, a, _ = forgeCall("batch", map[string]any{"repo_id": "r", "steps": []map[string]any{
		{"kind": "run_command", "args": map[string]any{"argv": []string{"git", "rev-parse", "HEAD"}}},
		{"kind": "read_file", "args": map[string]any{"path": ReadmePath}},
	}})
	if got, _ := json.Marshal(a); string(got) != `{"operation":"batch_execute","payload":{"steps":[{"input":{"command":["git","rev-parse","HEAD"]},"kind":"run_short_command"},{"input":{"path":"README.md"},"kind":"read_file"}]},"repo_id":"r"}` {
		t.Errorf("batch args: %s", got)
	}
}

func TestForgeCallNoEquivalent(t *testing.T) {
	for _, tt := range []struct {
		op   string
		args map[string]any
		want string
	}{
		{"job_start", map[string]any{"repo_id": "r"}, `"job_start"`},
		{"read_file", map[string]any{"repo_id": "r", "path": "a", "offset_line": 3}, "read_file argument offset_line"},
		{opApplyPatch, map[string]any{"repo_id": "r", "operations": []any{map[string]any{"op": "delete", "path": "a"}}}, "only replace is mapped"},
		{opApplyPatch, map[string]any{"repo_id": "r", "operations": []any{map[string]any{"op": "replace", "path": "a", "old_text": "x", "new_text": "y", "all": true}}}, "argument all"},
		{"batch", map[string]any{"repo_id": "r", "steps": []any{map[string]any{"kind": "commit", "args": map[string]any{}}}}, `batch step 0: no equivalent in forge: "commit"`},
	} {
		_, _, err := forgeCall(tt.op, tt.args)
		if !errors.Is(err, errNoEquivalent) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %v: err = %v, want errNoEquivalent naming %q", tt.op, tt.args, err, tt.want)
		}
	}
	if _, _, err := forgeCall("batch", map[string]any{"repo_id": "r"}); err == nil {
		t.Error("a batch without steps mapped")
	}
}

func TestForgeNoEquivalentAndCalls(t *testing.T) {
	f := fakeForge(forgeAll...)
	byName := map[string]caseDef{}
	for _, c := range allCases() {
		byName[c.name] = c
		if why := noEquivalent(f, c); why != "" {
			t.Errorf("%s: skipped (%s), want an equivalent", c.name, why)
		}
	}
	if n := byName[CaseTypedBatch].calls(f); n != 1 {
		t.Errorf("batch calls = %d, want 1 (repository_workbench batch_execute)", n)
	}
	if n := byName[CaseSmallFileRead].calls(f); n != 1 {
		t.Errorf("read calls = %d, want 1", n)
	}
	// Without the workbench the git_status case has no honest equivalent,
	// and the batch runs its seven steps one by one (which then need it too).
	f = fakeForge("repository_register", "read_repository_file")
	if why := noEquivalent(f, byName[CaseGitStatus]); !strings.HasPrefix(why, "no equivalent in forge") || !strings.Contains(why, "repository_workbench") {
		t.Errorf("git_status without the workbench: %q", why)
	}
	if n := byName[CaseTypedBatch].calls(f); n != 7 {
		t.Errorf("batch calls without the workbench = %d, want 7", n)
	}
	if why := noEquivalent(fakeInproc{}, byName[CaseGitStatus]); why != "" {
		t.Errorf("noEquivalent on a harnessd surface = %q, want empty", why)
	}
	t.Setenv("HARNESSD_BENCH_SEPARATE_CALLS", "1")
	if n := byName[CaseReadOnlyLanes].calls(fakeForge(forgeAll...)); n != 4 {
		t.Errorf("lanes calls with separate calls = %d, want 4", n)
	}
}

// fakeInproc is any surface that is not Forge's.
type fakeInproc struct{ surface }

func TestForgeBody(t *testing.T) {
	b, err := forgeBody(json.RawMessage(`{"content":[{"type":"text","text":"{\"ok\":true}"}],"structuredContent":{"ok":true}}`))
	if err != nil || string(b) != `{"ok":true}` {
		t.Errorf("text body = %s, %v", b, err)
	}
	b, err = forgeBody(json.RawMessage(`{"content":[],"structuredContent":{"a":1}}`))
	if err != nil || string(b) != `{"a":1}` {
		t.Errorf("structured body = %s, %v", b, err)
	}
	_, err = forgeBody(json.RawMessage(`{"isError":true,"content":[{"type":"text","text":"{\"error\":{\"code\":\"path does not exist\",\"message\":\"path does not exist: nope.md\"}}"}]}`))
	if err == nil || !strings.Contains(err.Error(), "path does not exist: nope.md") {
		t.Errorf("error body: %v", err)
	}
	if _, err = forgeBody(json.RawMessage(`{"content":[]}`)); err == nil {
		t.Error("an empty result passed")
	}
}

func TestCheckForge(t *testing.T) {
	files := map[string]string{ReadmePath: "# widgets\n", AppPath: "const " + PatchTextB + "\n"}
	read := func(rel string) ([]byte, error) {
		s, ok := files[rel]
		if !ok {
			return nil, os.ErrNotExist
		}
		return []byte(s), nil
	}
	sum := sha256.Sum256([]byte(files[ReadmePath]))
	sha := hex.EncodeToString(sum[:])
	readOK := `{"path":"README.md","sha256":"` + sha + `","content":"1: # widgets\n"}`
	statusOK := `{"status":{"head":"7176a8f","porcelain":"## main\n M README.md\n"}}`
	diffOK := `{"diff":{"nameOnly":["README.md"],"patch":"diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"}}`
	patchArgs := map[string]any{"operations": []any{map[string]any{"op": "replace", "path": AppPath, "old_text": PatchTextA, "new_text": PatchTextB}}}
	step := func(kind, result string) string {
		return `{"kind":"` + kind + `","ok":true,"result":` + result + `}`
	}
	batchArgs := map[string]any{"steps": []any{
		map[string]any{"kind": "read_file", "args": map[string]any{"path": ReadmePath}},
		map[string]any{"kind": "git_status", "args": map[string]any{}},
	}}
	for _, tt := range []struct {
		name string
		op   string
		args map[string]any
		body string
		want string // "" = passes
	}{
		{"register", "repository_register", nil, `{"repository":{"repoId":"repo_1"}}`, ""},
		{"register without id", "repository_register", nil, `{"repository":{}}`, "no repository.repoId"},
		{"read", "read_file", map[string]any{"path": ReadmePath}, readOK, ""},
		{"read of other bytes", "read_file", map[string]any{"path": ReadmePath}, `{"sha256":"00","content":"x"}`, "is not the file"},
		{"search", "search", map[string]any{"query": Symbol}, `{"results":[{"path":"src/app.go","text":"func (ix *Index) ` + Symbol + `("}]}`, ""},
		{"search without match", "search", map[string]any{"query": Symbol}, `{"results":[]}`, "no match"},
		{"status", "git_status", nil, `{"ok":true,"steps":[` + step("git_status", statusOK) + `]}`, ""},
		{"status not sampled", "git_status", nil, `{"ok":true,"steps":[` + step("git_status", `{"status":{}}`) + `]}`, "no head"},
		{"status step failed", "git_status", nil, `{"ok":true,"steps":[{"kind":"git_status","ok":false,"summary":"boom"}]}`, "failed: boom"},
		{"diff", "git_diff", nil, diffOK, ""},
		{"empty diff", "git_diff", nil, `{"diff":{"nameOnly":[],"patch":""}}`, "not in the answer"},
		{"command", "run_command", map[string]any{"argv": []any{"true"}}, `{"ok":true,"exitCode":0}`, ""},
		{"command exit 1", "run_command", map[string]any{"argv": []any{"false"}}, `{"ok":false,"exitCode":1}`, "not run to exit 0"},
		{"command without exit code", "run_command", nil, `{"ok":true}`, "not run to exit 0"},
		{"patch", opApplyPatch, patchArgs, `{"status":"applied"}`, ""},
		{"patch not applied", opApplyPatch, patchArgs, `{"status":"conflict"}`, "want applied"},
		{"patch applied elsewhere", opApplyPatch, map[string]any{"operations": []any{map[string]any{"op": "replace", "path": AppPath, "old_text": PatchTextB, "new_text": PatchTextA}}}, `{"status":"applied"}`, "does not have the new text"},
		{"batch", "batch", batchArgs, `{"ok":true,"steps":[` + step("read_file", readOK) + `,` + step("git_status", statusOK) + `]}`, ""},
		{"batch not ok", "batch", batchArgs, `{"ok":false,"steps":[]}`, "not ok"},
		{"batch short", "batch", batchArgs, `{"ok":true,"steps":[` + step("read_file", readOK) + `]}`, "1 steps answered, 2 asked"},
		{"lanes", "read_lanes", map[string]any{"lanes": []any{map[string]any{"kind": "git_diff", "args": map[string]any{}}}}, `{"ok":true,"readLanes":[{"ok":true,"result":` + diffOK + `}]}`, ""},
		{"lanes wrong result", "read_lanes", map[string]any{"lanes": []any{map[string]any{"kind": "git_diff", "args": map[string]any{}}}}, `{"ok":true,"readLanes":[{"ok":true,"result":` + statusOK + `}]}`, "git_diff"},
	} {
		err := checkForge(tt.op, tt.args, []byte(tt.body), read)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestForgeLatency(t *testing.T) {
	server, seg := forgeLatency([]byte(`{"responseMeta":{"serverDurationMs":2.5},"latency":{"routingMs":0.1,"executionMs":2,"receiptMs":0.3}}`))
	if server != 2.5 || seg[0] != 0.1 || seg[3] != 2 || seg[4] != 0.3 {
		t.Errorf("server %v, segments %v", server, seg)
	}
}

func TestForgeEnv(t *testing.T) {
	env := forgeEnv([]string{"HOME=/root", "PATH=/usr/bin", "XDG_STATE_HOME=/x", "FORGE_CONTROLLER_HOME=/y", "LANG=C"}, "/w/home", "/opt/bun/bin")
	for _, want := range []string{"HOME=/w/home", "PATH=/opt/bun/bin:/usr/bin", "LANG=C", "FORGE_CONTROLLER_HOME=/w/home/controller", "XDG_STATE_HOME=/w/home/.local/state"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %v", want, env)
		}
	}
	for _, bad := range []string{"HOME=/root", "XDG_STATE_HOME=/x", "FORGE_CONTROLLER_HOME=/y"} {
		if slices.Contains(env, bad) {
			t.Errorf("env keeps %s", bad)
		}
	}
	if env := forgeEnv([]string{"PATH=/usr/bin"}, "/h", ""); !slices.Contains(env, "PATH=/usr/bin") {
		t.Errorf("without bun: %v", env)
	}
}

func TestSideBySide(t *testing.T) {
	res := func(c, s string, calls int, median float64) Result {
		return Result{Case: c, Surface: s, Calls: calls, TotalMs: &Dist{Median: median}}
	}
	got := sideBySide([]Result{
		res(CaseSmallFileRead, SurfaceInproc, 1, 0.04),
		res(CaseTypedBatch, SurfaceInproc, 1, 1.0),
		res(CaseGitStatus, SurfaceInproc, 1, 0.1),
		res(CaseSmallFileRead, SurfaceMCPStdioRaw, 1, 0.24),
		res(CaseTypedBatch, SurfaceMCPStdioRaw, 7, 1.7),
		{Case: CaseGitStatus, Surface: SurfaceMCPStdioRaw, Error: "boom"},
		res(CaseSmallFileRead, SurfaceForgeMCPStdioRaw, 1, 1.2),
		res(CaseTypedBatch, SurfaceForgeMCPStdioRaw, 1, 120),
	})
	if len(got) != 2 {
		t.Fatalf("got %d rows, want 2 (git_status failed through mcp-stdio-raw): %+v", len(got), got)
	}
	r := got[0]
	if r.Case != CaseSmallFileRead || *r.InprocMs != 0.04 || *r.HarnessdMs != 0.24 || *r.ForgeMs != 1.2 || *r.ForgeOverHarnessd != 5 || *r.TransportPerCallMs != 0.2 {
		t.Errorf("read row = %+v", r)
	}
	r = got[1]
	if r.Calls != 7 || r.ForgeCalls != 1 || *r.TransportPerCallMs != 0.1 || *r.ForgeOverHarnessd != round3(120/1.7) {
		t.Errorf("batch row = %+v (per call: (1.7-1.0)/7)", r)
	}
	if got := sideBySide([]Result{res(CaseSmallFileRead, SurfaceInproc, 1, 0.04), res(CaseSmallFileRead, SurfaceForgeMCPStdioRaw, 1, 1)}); got != nil {
		t.Errorf("rows without mcp-stdio-raw: %+v", got)
	}
}

func TestForgeSkippedWhenAbsent(t *testing.T) {
	t.Setenv("FORGE_MJS", "/nonexistent/forge.mjs")
	out, errOut, code := run(t, "--iterations", "1", "--warmup", "0", "--surfaces", "inproc,forge-mcp-stdio-raw", "--cases", "small_file_read", "--json")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, ExitOK, errOut)
	}
	rep := validate(t, schema(t), []byte(out))
	if len(rep.Results) != 2 || rep.Results[1].Surface != SurfaceForgeMCPStdioRaw || rep.Results[1].Skipped != forgeNotFound {
		t.Fatalf("results = %+v, want forge skipped with %q", rep.Results, forgeNotFound)
	}
	if rep.Settings.Forge != nil {
		t.Errorf("settings.forge = %+v without a Forge", rep.Settings.Forge)
	}
}

func TestForgeUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--surfaces", "forge-mcp-stdio-raw", "--forge", "/nonexistent/forge.mjs"}, "--forge \"/nonexistent/forge.mjs\" is not a file"},
		{[]string{"--load", "--surfaces", "forge-mcp-stdio-raw"}, "--load does not drive forge-mcp-stdio-raw"},
	} {
		_, errOut, code := run(t, tt.args...)
		if code != ExitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, errOut, ExitUsage, tt.want)
		}
	}
}

// TestForgeSurface drives a real Forge when one is installed (the peers
// script's, $FORGE_MJS or $PEER_DIR); skipped otherwise and with -short.
func TestForgeSurface(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Forge")
	}
	if fi := locateForge(""); fi.skip != "" {
		t.Skip(fi.skip)
	}
	out, errOut, code := run(t, "--iterations", "2", "--warmup", "1", "--surfaces", "inproc,forge-mcp-stdio-raw", "--json")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s\n%s", code, ExitOK, errOut, out)
	}
	rep := validate(t, schema(t), []byte(out))
	if rep.Settings.Forge == nil || rep.Settings.Forge.Version == "" {
		t.Errorf("settings.forge = %+v", rep.Settings.Forge)
	}
	n := 0
	for _, r := range rep.Results {
		if r.Surface != SurfaceForgeMCPStdioRaw {
			continue
		}
		n++
		if r.Error != "" || r.Skipped != "" || r.TotalMs == nil {
			t.Errorf("%s: error %q, skipped %q", r.Case, r.Error, r.Skipped)
			continue
		}
		if r.Calls != 1 || r.ServerMs.Median <= 0 || r.ServerMs.Median > r.TotalMs.Median {
			t.Errorf("%s: calls %d, server %v, total %v; want 1 call and 0 < server <= total", r.Case, r.Calls, r.ServerMs.Median, r.TotalMs.Median)
		}
	}
	if n != len(Cases()) {
		t.Errorf("%d forge results, want %d", n, len(Cases()))
	}
}

func TestSideBySideMatchesSchema(t *testing.T) {
	var results []Result
	for i, s := range []string{SurfaceInproc, SurfaceMCPStdioRaw, SurfaceForgeMCPStdioRaw} {
		r := Result{Case: CaseSmallFileRead, Surface: s, Calls: 1, Floor: "os.ReadFile"}
		r.summarize([]sample{{wall: time.Duration(i+1) * 100 * time.Microsecond, server: 0.02}}, []float64{0.006})
		results = append(results, r)
	}
	rep := Report{SchemaVersion: SchemaVersion, Machine: machineInfo(), GoVersion: "go1", Commit: "c", StartedAt: time.Now().UTC(),
		Settings: Settings{Surfaces: []string{SurfaceInproc, SurfaceMCPStdioRaw, SurfaceForgeMCPStdioRaw},
			Forge: &ForgeInfo{Path: "/p/forge.mjs", Version: "1.8.0", Runtime: "bun", Toolset: forgeToolset}},
		Results: results, SideBySide: sideBySide(results)}
	var buf bytes.Buffer
	if err := writeJSON(&buf, &rep); err != nil {
		t.Fatal(err)
	}
	got := validate(t, schema(t), buf.Bytes())
	if len(got.SideBySide) != 1 || *got.SideBySide[0].ForgeOverHarnessd != 1.5 || *got.SideBySide[0].TransportPerCallMs != 0.1 {
		t.Errorf("side_by_side = %+v", got.SideBySide)
	}
	var tbl bytes.Buffer
	if err := writeTable(&tbl, &rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FORGE/HARNESSD", "TRANSPORT/CALL", "1.5x", "forge: /p/forge.mjs 1.8.0 under bun, toolset full"} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tbl.String())
		}
	}
}
