package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestPlanRepoShape(t *testing.T) {
	for _, n := range []int{MinGenFiles, 100, 3000} {
		p := planRepo(n, 7)
		if len(p.files) != n {
			t.Fatalf("n=%d: planned %d files", n, len(p.files))
		}
		if q := planRepo(n, 7); !reflect.DeepEqual(p, q) {
			t.Fatalf("n=%d: two plans of the same seed differ", n)
		}
		if q := planRepo(n, 8); reflect.DeepEqual(p.files, q.files) {
			t.Fatalf("n=%d: seeds 7 and 8 give the same files", n)
		}
		seen := map[string]bool{}
		entries := map[string]map[string]bool{} // dir -> direct children
		kinds := map[genKind]int{}
		var large, huge int
		for _, f := range p.files {
			if seen[f.path] {
				t.Fatalf("n=%d: %s planned twice", n, f.path)
			}
			seen[f.path] = true
			kinds[f.kind]++
			if d := strings.Count(f.path, "/") + 1; d < 1 || d > genMaxDepth+1 {
				t.Errorf("n=%d: %s has depth %d, want 1..%d", n, f.path, d, genMaxDepth+1)
			}
			for child := f.path; child != "."; child = path.Dir(child) {
				parent := path.Dir(child)
				if entries[parent] == nil {
					entries[parent] = map[string]bool{}
				}
				entries[parent][child] = true
			}
			switch {
			case f.size >= 1<<20:
				huge++
			case f.size >= 20<<10 && f.kind != kindBinary:
				large++
			}
		}
		for d, es := range entries {
			if len(es) > 32 { // 30 planned, plus .gitignore and the binary at the root
				t.Errorf("n=%d: %q has %d entries, want at most 30", n, d, len(es))
			}
		}
		for _, k := range []genKind{kindGo, kindTS, kindPy, kindBinary, kindGitignore} {
			if kinds[k] == 0 {
				t.Errorf("n=%d: no file of kind %d", n, k)
			}
		}
		if huge != 2 || large < 1 || kinds[kindBinary] != 1 {
			t.Errorf("n=%d: %d files of ~1 MB (want 2), %d of 20-100 KB (want >= 1), %d binary (want 1)", n, huge, large, kinds[kindBinary])
		}
		if p.symbols != min(36, n/4) || len(p.dirty) != GenDirty || len(p.untrack) != GenUntracked {
			t.Errorf("n=%d: %d symbol files, %d dirty, %d untracked", n, p.symbols, len(p.dirty), len(p.untrack))
		}
		for _, i := range p.dirty {
			if p.files[i].symbol || p.files[i].size > 4096 || p.files[i].kind == kindBinary {
				t.Errorf("n=%d: dirty file %+v is not a small text file without the symbol", n, p.files[i])
			}
		}
	}
	if p := planRepo(20000, 1); p.maxDepth < 5 {
		t.Errorf("20,000 files reach depth %d only, want >= 5", p.maxDepth)
	}
}

func TestGenContent(t *testing.T) {
	p := planRepo(400, 3)
	for _, f := range p.files {
		b := genContent(f, 3)
		if !bytes.Equal(b, genContent(f, 3)) {
			t.Fatalf("%s: content differs between two calls", f.path)
		}
		if f.kind != kindGitignore && len(b) < f.size {
			t.Errorf("%s: %d bytes, want >= %d", f.path, len(b), f.size)
		}
		if got := bytes.Contains(b, []byte(Symbol)); got != f.symbol {
			t.Errorf("%s: holds the symbol = %v, want %v", f.path, got, f.symbol)
		}
		switch f.kind {
		case kindJSON:
			if !json.Valid(b) {
				t.Errorf("%s is not valid JSON", f.path)
			}
		case kindGo:
			if !bytes.Contains(b, []byte("\npackage ")) {
				t.Errorf("%s has no package clause", f.path)
			}
		case kindBinary:
			if !bytes.Contains(b, []byte{0}) {
				t.Errorf("%s has no NUL byte: git would not call it binary", f.path)
			}
		}
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

func TestGenerateRepo(t *testing.T) {
	ctx := context.Background()
	const n = 60
	var progress bytes.Buffer
	g, err := GenerateRepo(ctx, t.TempDir(), n, 11, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if g.Files != n || len(strings.Split(strings.TrimSuffix(gitOut(t, g.Root, "ls-files", "-z"), "\x00"), "\x00")) != n {
		t.Fatalf("tracked files: %d planned, ls-files %q", g.Files, gitOut(t, g.Root, "ls-files"))
	}
	var modified, untracked, other []string
	for _, rec := range strings.Split(strings.TrimSuffix(gitOut(t, g.Root, "status", "--porcelain=v2", "-z", "--untracked-files=all"), "\x00"), "\x00") {
		switch {
		case strings.HasPrefix(rec, "1 .M "):
			modified = append(modified, rec[strings.LastIndexByte(rec, ' ')+1:])
		case strings.HasPrefix(rec, "? "):
			untracked = append(untracked, rec[2:])
		default:
			other = append(other, rec)
		}
	}
	if !reflect.DeepEqual(sorted(modified), sorted(g.Dirty)) || !reflect.DeepEqual(sorted(untracked), sorted(g.Untracked)) || len(other) != 0 {
		t.Fatalf("git status: modified %q untracked %q other %q; want modified %q untracked %q",
			modified, untracked, other, g.Dirty, g.Untracked)
	}
	// Ignored files are on disk and ignored.
	ign := gitOut(t, g.Root, "ls-files", "--others", "--ignored", "--exclude-standard")
	for _, p := range g.Ignored {
		if !strings.Contains(ign, p+"\n") {
			t.Errorf("%s is not an ignored file on disk:\n%s", p, ign)
		}
	}
	if got := strings.Count(gitOut(t, g.Root, "grep", "-l", "--cached", Symbol), "\n"); got != g.SymbolFiles || got != n/4 {
		t.Errorf("%d committed files hold %s, want %d", got, Symbol, g.SymbolFiles)
	}
	if !strings.Contains(progress.String(), "scale: generating 60 files") {
		t.Errorf("progress = %q", progress.String())
	}
	// Deterministic: the same seed gives the same commit tree.
	h, err := GenerateRepo(ctx, t.TempDir(), n, 11, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := gitOut(t, g.Root, "rev-parse", "HEAD^{tree}"), gitOut(t, h.Root, "rev-parse", "HEAD^{tree}"); a != b {
		t.Errorf("two repositories of seed 11 have trees %s and %s", a, b)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
}

func sorted(xs []string) []string {
	out := append([]string{}, xs...)
	slices.Sort(out)
	return out
}

func TestScaleReportShape(t *testing.T) {
	rs := schema(t)
	var r ScaleResult
	r.summarize([]float64{2, 4, 3}, []float64{6, 6, 9}, []float64{1, 0.5, 2}, 81.5)
	if *r.HarnessdMs != 3 || *r.RawMs != 6 || *r.Ratio != 2 || *r.RSSMB != 81.5 || *r.IdentityMs != 1 || r.Iterations != 3 {
		t.Fatalf("summarize = %+v", r)
	}
	r.Files, r.Case, r.Harnessd, r.Raw = 100, CaseGitStatus, "git_status through CallOp", "git status"
	failed := ScaleResult{Files: 100, Case: CaseCheckIdentity, Harnessd: "x", Raw: "y", Error: "iteration 0: boom"}
	rep := &Report{SchemaVersion: SchemaVersion, Machine: machineInfo(), GoVersion: "go1.26", Commit: "unknown",
		Settings:   Settings{Surfaces: []string{SurfaceInproc}, Cases: ScaleCases(), Files: []int{100}, Seed: 1},
		Scale:      []ScaleResult{r, failed},
		ScaleRepos: []ScaleRepo{{Files: 100, Dirs: 8, MaxDepth: 2, Bytes: 1 << 20, SymbolFiles: 25, Dirty: 5, Untracked: 2, Ignored: 8, Warmup: 20, Iterations: 200}}}
	var buf bytes.Buffer
	if err := writeJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	validate(t, rs, buf.Bytes())
	buf.Reset()
	if err := writeScale(&buf, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"100 files: 8 dirs", "OP", "RSS MB", "git_status", "3.000", "6.000", "2.00x", "81.5", "identity 1.000 ms", "error: iteration 0: boom"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	// A measured result must not also carry an error, nor a scale run results.
	bad := *rep
	bad.Scale = []ScaleResult{r}
	bad.Scale[0].Error = "both"
	buf.Reset()
	_ = writeJSON(&buf, &bad)
	var inst any
	_ = json.Unmarshal(buf.Bytes(), &inst)
	if rs.Validate(inst) == nil {
		t.Error("the schema accepts a scale result with figures and an error")
	}
	bad = *rep
	bad.Results = []Result{{Case: CaseGitStatus, Surface: SurfaceInproc, Floor: "f", Error: "x"}}
	buf.Reset()
	_ = writeJSON(&buf, &bad)
	_ = json.Unmarshal(buf.Bytes(), &inst)
	if rs.Validate(inst) == nil {
		t.Error("the schema accepts a report with both results and scale")
	}
}

// The whole mode on a small repository, in process.
func TestScaleRun(t *testing.T) {
	out, errOut, code := run(t, "--files", "40", "--iterations", "2", "--warmup", "1", "--json")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s\n%s", code, ExitOK, errOut, out)
	}
	rep := validate(t, schema(t), []byte(out))
	if len(rep.Scale) != len(ScaleCases()) || len(rep.ScaleRepos) != 1 || len(rep.Results) != 0 {
		t.Fatalf("scale = %+v, repos = %+v", rep.Scale, rep.ScaleRepos)
	}
	for i, r := range rep.Scale {
		if r.Case != ScaleCases()[i] || r.Files != 40 || r.Error != "" || r.Iterations != 2 {
			t.Errorf("result %d = %+v", i, r)
			continue
		}
		if *r.HarnessdMs <= 0 || *r.RawMs <= 0 || *r.RSSMB <= 0 {
			t.Errorf("%s: harnessd %v raw %v rss %v, want all > 0", r.Case, *r.HarnessdMs, *r.RawMs, *r.RSSMB)
		}
	}
	if g := rep.ScaleRepos[0]; g.Files != 40 || g.Dirty != GenDirty || g.Untracked != GenUntracked || g.Iterations != 2 || g.Warmup != 1 {
		t.Errorf("repo = %+v", g)
	}
	if !strings.Contains(errOut, "scale: 40 files: check_identity") {
		t.Errorf("no progress lines on stderr:\n%s", errOut)
	}
}

func TestScaleUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--files", "5"}, "--files 5 is outside"},
		{[]string{"--files", "100", "--surfaces", "mcp-http"}, "in process only"},
		{[]string{"--files", "100", "--load"}, "separate modes"},
		{[]string{"--files", "100", "--cases", "small_file_read"}, `unknown case "small_file_read"`},
		{[]string{"--cases", CaseCheckIdentity}, `unknown case "check_identity"`},
		{[]string{"--files", "x"}, "invalid argument"},
	}
	for _, tt := range tests {
		out, errOut, code := run(t, tt.args...)
		if code != ExitUsage || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want %d and %q", tt.args, code, errOut, out, ExitUsage, tt.want)
		}
	}
}
