package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// schema loads and resolves bench/schema.json.
func schema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile("../schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve schema.json: %v", err)
	}
	return rs
}

// validate checks doc against the schema and returns it decoded.
func validate(t *testing.T, rs *jsonschema.Resolved, doc []byte) Report {
	t.Helper()
	var inst any
	if err := json.Unmarshal(doc, &inst); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, doc)
	}
	if err := rs.Validate(inst); err != nil {
		t.Fatalf("output does not match schema.json: %v\n%s", err, doc)
	}
	var rep Report
	if err := json.Unmarshal(doc, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code = MainContext(ctx, args, &o, &e)
	return o.String(), e.String(), code
}

func TestSuiteJSONMatchesSchema(t *testing.T) {
	out, errOut, code := run(t, "--iterations", "3", "--warmup", "1", "--surfaces", "inproc", "--json")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, ExitOK, errOut)
	}
	rep := validate(t, schema(t), []byte(out))
	if got, want := len(rep.Results), len(Cases()); got != want {
		t.Fatalf("got %d results, want %d", got, want)
	}
	for i, r := range rep.Results {
		if r.Case != Cases()[i] || r.Surface != SurfaceInproc {
			t.Errorf("result %d is %s/%s, want %s/inproc", i, r.Case, r.Surface, Cases()[i])
		}
		if r.Error != "" {
			t.Errorf("%s: error %q", r.Case, r.Error)
		}
		if r.Skipped != "" {
			if r.Case != CaseSmallBoundedPatch || r.Skipped != "apply_patch not available" {
				t.Errorf("%s skipped: %q", r.Case, r.Skipped)
			}
			continue
		}
		if r.Iterations != 3 {
			t.Errorf("%s: iterations = %d, want 3", r.Case, r.Iterations)
		}
		if r.TotalMs.Median <= 0 || r.FloorMs.Median <= 0 || r.ServerMs.Median <= 0 {
			t.Errorf("%s: total %v, floor %v, server %v; want all > 0", r.Case, r.TotalMs.Median, r.FloorMs.Median, r.ServerMs.Median)
		}
	}
	if rep.Machine.CPUs < 1 || rep.GoVersion == "" || rep.Commit == "" {
		t.Errorf("machine %+v, go %q, commit %q", rep.Machine, rep.GoVersion, rep.Commit)
	}
	// stderr is a buffer, not a terminal: no progress, no "\r" (see
	// TestProgressRespectsNoColor for the terminal).
	if strings.Contains(errOut, "\r") || strings.Contains(errOut, "[8/8]") {
		t.Errorf("progress drawn off a terminal:\n%q", errOut)
	}
}

func TestTableOutput(t *testing.T) {
	out, errOut, code := run(t, "--iterations", "2", "--warmup", "0", "--surfaces", "inproc", "--cases", "small_file_read,git_status")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, ExitOK, errOut)
	}
	for _, want := range []string{"CASE", "OVERHEAD", "small_file_read", "git_status", "os.ReadFile", "git status --porcelain=v2 --branch -z"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "symbol_search") {
		t.Errorf("table has a case that was filtered out:\n%s", out)
	}
}

func TestLoadInproc(t *testing.T) {
	out, errOut, code := run(t, "--load", "--concurrency", "6", "--duration", "1s", "--repos", "2", "--json")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s\n%s", code, ExitOK, errOut, out)
	}
	rep := validate(t, schema(t), []byte(out))
	lr := rep.Load
	if lr == nil || lr.Surface != SurfaceInproc || lr.Concurrency != 6 || lr.Repos != 2 {
		t.Fatalf("load = %+v, want inproc, 6 agents, 2 repos", lr)
	}
	if lr.Ops == 0 || lr.ThroughputOpsS <= 0 {
		t.Errorf("ops = %d, throughput = %v; want > 0", lr.Ops, lr.ThroughputOpsS)
	}
	if len(lr.ErrorsByCode) != 0 {
		t.Errorf("errors = %v, want none", lr.ErrorsByCode)
	}
	if !lr.Goroutines.Returned || lr.Goroutines.After > lr.Goroutines.Before {
		t.Errorf("goroutines = %+v, want back at the baseline", lr.Goroutines)
	}
	if lr.PeakRSSBytes <= 0 {
		t.Errorf("peak RSS = %d, want > 0", lr.PeakRSSBytes)
	}
	if _, ok := lr.PerOp["read_file"]; !ok {
		t.Errorf("per_op = %v, want read_file in it", lr.PerOp)
	}
}

// The daemon surfaces build harnessd and start it; skipped with -short.
func TestDaemonSurfaces(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts harnessd")
	}
	out, errOut, code := run(t, "--iterations", "2", "--warmup", "1", "--surfaces", "mcp-stdio,mcp-http,mcp-stdio-raw",
		"--cases", "small_file_read,small_bounded_patch,4_lane_read_only_analysis", "--json")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s\n%s", code, ExitOK, errOut, out)
	}
	rep := validate(t, schema(t), []byte(out))
	if len(rep.Results) != 9 {
		t.Fatalf("got %d results, want 9", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Error != "" || (r.Skipped != "" && r.Case != CaseSmallBoundedPatch) {
			t.Errorf("%s/%s: error %q, skipped %q", r.Case, r.Surface, r.Error, r.Skipped)
		}
		if r.Case == CaseSmallFileRead && r.ServerMs.Median >= r.TotalMs.Median {
			t.Errorf("%s/%s: server %v >= total %v; the transport cannot be free", r.Case, r.Surface, r.ServerMs.Median, r.TotalMs.Median)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown surface", []string{"--surfaces", "grpc"}, `unknown surface "grpc"`},
		{"unknown case", []string{"--cases", "nope"}, `unknown case "nope"`},
		{"zero iterations", []string{"--iterations", "0"}, "--iterations 0 is outside"},
		{"negative warmup", []string{"--warmup", "-1"}, "--warmup -1 is outside"},
		{"positional", []string{"extra"}, "unexpected arguments"},
		{"unknown flag", []string{"--bogus"}, "unknown flag"},
		{"load on two surfaces", []string{"--load", "--surfaces", "inproc,mcp-http"}, "one surface"},
		{"load concurrency", []string{"--load", "--concurrency", "0"}, "--concurrency 0 is outside"},
		{"load repos", []string{"--load", "--repos", "0"}, "--repos 0 is outside"},
		{"load duration", []string{"--load", "--duration", "0s"}, "--duration 0s is outside"},
		{"missing binary", []string{"--harnessd", "/nonexistent/harnessd"}, "is not a file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.args...)
			if code != ExitUsage {
				t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, ExitUsage, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Fatalf("stderr = %q, want it to contain %q", errOut, tt.want)
			}
			if out != "" {
				t.Fatalf("stdout = %q, want nothing", out)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	_, errOut, code := run(t, "--help")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d", code, ExitOK)
	}
	if !strings.Contains(errOut, "--iterations") || !strings.Contains(errOut, "--load") {
		t.Fatalf("help = %q, want the flags", errOut)
	}
}

func TestPercentileAndMedian(t *testing.T) {
	tests := []struct {
		name      string
		xs        []float64
		median    float64
		p90, p100 float64
	}{
		{"empty", nil, 0, 0, 0},
		{"one", []float64{7}, 7, 7, 7},
		{"odd", []float64{3, 1, 2}, 2, 3, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5, 4, 4},
		{"ten", []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 5.5, 9, 10},
		{"eleven", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100}, 6, 10, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := append([]float64(nil), tt.xs...)
			if got := Median(tt.xs); got != tt.median {
				t.Errorf("median = %v, want %v", got, tt.median)
			}
			if got := Percentile(tt.xs, 90); got != tt.p90 {
				t.Errorf("p90 = %v, want %v", got, tt.p90)
			}
			if got := Percentile(tt.xs, 100); got != tt.p100 {
				t.Errorf("p100 = %v, want %v", got, tt.p100)
			}
			for i := range orig {
				if tt.xs[i] != orig[i] {
					t.Fatalf("input modified: got %v, want %v", tt.xs, orig)
				}
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	smp := func(wallMs, serverMs float64) sample {
		s := sample{wall: time.Duration(wallMs * float64(time.Millisecond)), server: serverMs}
		s.seg[3] = serverMs
		return s
	}
	tests := []struct {
		name               string
		smps               []sample
		floors             []float64
		total, floor, over float64
		ratio              *float64
	}{
		{"overhead and ratio", []sample{smp(2, 1), smp(4, 3), smp(3, 2)}, []float64{1, 1, 1}, 3, 1, 2, ptr(3.0)},
		{"zero floor has no ratio", []sample{smp(1, 1)}, []float64{0}, 1, 0, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Result
			r.summarize(tt.smps, tt.floors)
			if r.TotalMs.Median != tt.total || r.FloorMs.Median != tt.floor || *r.OverheadMs != tt.over {
				t.Fatalf("total %v floor %v overhead %v, want %v %v %v", r.TotalMs.Median, r.FloorMs.Median, *r.OverheadMs, tt.total, tt.floor, tt.over)
			}
			if (r.Ratio == nil) != (tt.ratio == nil) || (r.Ratio != nil && *r.Ratio != *tt.ratio) {
				t.Fatalf("ratio = %v, want %v", deref(r.Ratio), deref(tt.ratio))
			}
			if r.SegmentsMs.ExecutionMs != Median(serverOf(tt.smps)) {
				t.Fatalf("execution = %v, want %v", r.SegmentsMs.ExecutionMs, Median(serverOf(tt.smps)))
			}
		})
	}
}

func ptr(f float64) *float64 { return &f }

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func serverOf(smps []sample) []float64 {
	var out []float64
	for _, s := range smps {
		out = append(out, s.server)
	}
	return out
}

func TestPatchTextsAlternate(t *testing.T) {
	tests := []struct {
		n             int
		oldText, newT string
	}{
		{0, PatchTextA, PatchTextB},
		{1, PatchTextB, PatchTextA},
		{2, PatchTextA, PatchTextB},
		{201, PatchTextB, PatchTextA},
	}
	for _, tt := range tests {
		o, n := patchTexts(tt.n)
		if o != tt.oldText || n != tt.newT {
			t.Errorf("patchTexts(%d) = %q, %q; want %q, %q", tt.n, o, n, tt.oldText, tt.newT)
		}
	}
	if !strings.Contains(appText, PatchTextA) || strings.Contains(appText, PatchTextB) {
		t.Fatalf("the fixture must hold %q and not %q", PatchTextA, PatchTextB)
	}
}

// noPatch is a surface without apply_patch that fails every call.
type noPatch struct{}

func (noPatch) Name() string         { return "fake" }
func (noPatch) HasOp(op string) bool { return op != opApplyPatch }
func (noPatch) Close() error         { return nil }
func (noPatch) Call(context.Context, string, map[string]any, any) (sample, error) {
	return sample{}, os.ErrInvalid
}

func TestCaseSkippedWithoutApplyPatch(t *testing.T) {
	ctx := context.Background()
	fx, err := NewFixture(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := newFloors(fx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range allCases() {
		if c.name != CaseSmallBoundedPatch {
			continue
		}
		r := runCase(ctx, noPatch{}, "repo_x", c, fx, fl, newRequestIDs("t"), 1, 1)
		if r.Skipped != "apply_patch not available" || r.Error != "" || r.TotalMs != nil {
			t.Fatalf("result = %+v, want skipped (apply_patch not available)", r)
		}
		var buf bytes.Buffer
		if err := writeTable(&buf, &Report{Results: []Result{r}}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "skipped (apply_patch not available)") {
			t.Fatalf("table = %q, want the skip reason", buf.String())
		}
		return
	}
	t.Fatal("no small_bounded_patch case")
}

func TestCaseErrorIsReported(t *testing.T) {
	ctx := context.Background()
	fx, err := NewFixture(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := newFloors(fx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := runCase(ctx, noPatch{}, "repo_x", allCases()[0], fx, fl, newRequestIDs("t"), 1, 1)
	if r.Error == "" || !strings.Contains(r.Error, "read_file") {
		t.Fatalf("error = %q, want the failed read_file", r.Error)
	}
}

func TestSchemaRejectsInconsistentResults(t *testing.T) {
	rs := schema(t)
	base := `{"schema_version":1,"machine":{"os":"linux","arch":"amd64","cpus":2,"cpu_model":"x","mem_total":1},
	"go_version":"go1.26","commit":"unknown","started_at":"2026-01-01T00:00:00Z","settings":{"surfaces":["inproc"]},`
	tests := []struct {
		name string
		tail string
		ok   bool
	}{
		{"skipped", `"results":[{"case":"git_status","surface":"inproc","iterations":0,"floor":"f","skipped":"why"}]}`, true},
		{"skipped with figures", `"results":[{"case":"git_status","surface":"inproc","iterations":0,"floor":"f","skipped":"why","total_ms":{"median":1,"p90":1}}]}`, false},
		{"unknown case", `"results":[{"case":"nope","surface":"inproc","iterations":0,"floor":"f","error":"x"}]}`, false},
		{"neither results nor load", `"results":[]}`, false},
		{"wrong version", `"results":[{"case":"git_status","surface":"inproc","iterations":0,"floor":"f","error":"x"}],"schema_version":2}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inst any
			if err := json.Unmarshal([]byte(base+tt.tail), &inst); err != nil {
				t.Fatal(err)
			}
			err := rs.Validate(inst)
			if (err == nil) != tt.ok {
				t.Fatalf("validate: got err %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
