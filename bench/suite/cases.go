package suite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/internal/search"
)

// The case names, in run order.
const (
	CaseSmallFileRead       = "small_file_read"
	CaseListDir             = "list_dir"
	CaseSymbolSearch        = "symbol_search"
	CaseGitStatus           = "git_status"
	CaseGitDiff             = "git_diff"
	CaseSmallBoundedPatch   = "small_bounded_patch"
	CaseShortFocusedCommand = "short_focused_command"
	CaseTypedBatch          = "7_step_typed_batch"
	CaseReadOnlyLanes       = "4_lane_read_only_analysis"
)

// opApplyPatch is the operation small_bounded_patch needs.
const opApplyPatch = "apply_patch"

// iter is what a step's arguments depend on.
type iter struct {
	repoID  string
	n       int // iteration number within the case, warmup included
	request func() string
}

// step is one operation of a case with the raw operation it wraps.
type step struct {
	op    string
	args  func(it iter) map[string]any
	floor func(ctx context.Context, f *floors) error
	// floorName describes the floor in the report.
	floorName func(f *floors) string
}

// caseDef is one bench case: one or more steps, run one after another or
// (lanes) all at once.
type caseDef struct {
	name  string
	steps []step
	// concurrent runs the steps from one goroutine each; one iteration is
	// all of them done. The floor is then the slowest step floor, not the sum.
	concurrent bool
	// dirty makes README.md dirty for the case so diffs are not empty.
	dirty bool
	// requires names an operation the surface must offer, else the case
	// is skipped.
	requires string
	// via names an operation (batch, read_lanes) that runs all the steps
	// in one call; when the surface offers it the iteration is that one
	// call, unless HARNESSD_BENCH_SEPARATE_CALLS=1 asks for the separate
	// calls (the comparison figure).
	via string
}

// separateCalls reports whether HARNESSD_BENCH_SEPARATE_CALLS asks for the
// separate-calls form of the batch and lanes cases.
func separateCalls() bool { return os.Getenv("HARNESSD_BENCH_SEPARATE_CALLS") == "1" }

// viaArgs packs the steps of c into the arguments of c.via.
func (c caseDef) viaArgs(it iter) map[string]any {
	steps := make([]map[string]any, len(c.steps))
	for i, st := range c.steps {
		a := st.args(it)
		delete(a, "repo_id")
		delete(a, "include_latency_breakdown")
		steps[i] = map[string]any{"kind": st.op, "args": a}
	}
	key := "steps"
	if c.via == "read_lanes" {
		key = "lanes"
	}
	return withBreakdown(map[string]any{"repo_id": it.repoID, key: steps})
}

func withBreakdown(m map[string]any) map[string]any {
	m["include_latency_breakdown"] = true
	return m
}

func readStep(path string) step {
	return step{
		op: "read_file",
		args: func(it iter) map[string]any {
			return withBreakdown(map[string]any{"repo_id": it.repoID, "path": path})
		},
		floor: func(_ context.Context, f *floors) error {
			_, err := os.ReadFile(f.fx.Path(path))
			return err
		},
		floorName: func(*floors) string { return "os.ReadFile" },
	}
}

// opListDir is harnessd's directory listing.
const opListDir = "list_dir"

var listStep = step{
	op: opListDir,
	args: func(it iter) map[string]any {
		return withBreakdown(map[string]any{"repo_id": it.repoID, "path": "."})
	},
	floor: func(_ context.Context, f *floors) error {
		ents, err := os.ReadDir(f.fx.Path("."))
		for _, e := range ents {
			if e.Type().IsRegular() {
				if _, err := e.Info(); err != nil {
					return err
				}
			}
		}
		return err
	},
	floorName: func(*floors) string { return "os.ReadDir + lstat of each file" },
}

var searchStep = step{
	op: "search",
	args: func(it iter) map[string]any {
		return withBreakdown(map[string]any{"repo_id": it.repoID, "query": Symbol})
	},
	floor:     func(ctx context.Context, f *floors) error { return f.run(ctx, f.searchArgv) },
	floorName: func(f *floors) string { return f.searchName },
}

var statusStep = step{
	op: "git_status",
	args: func(it iter) map[string]any {
		return withBreakdown(map[string]any{"repo_id": it.repoID})
	},
	floor: func(ctx context.Context, f *floors) error {
		return f.run(ctx, []string{"git", "status", "--porcelain=v2", "--branch", "-z"})
	},
	floorName: func(*floors) string { return "git status --porcelain=v2 --branch -z" },
}

var diffStep = step{
	op: "git_diff",
	args: func(it iter) map[string]any {
		return withBreakdown(map[string]any{"repo_id": it.repoID})
	},
	floor: func(ctx context.Context, f *floors) error {
		// harnessd runs the two at once; so does the floor.
		var wg sync.WaitGroup
		var numstatErr error
		wg.Go(func() { numstatErr = f.run(ctx, []string{"git", "diff", "--numstat"}) })
		err := f.run(ctx, []string{"git", "diff"})
		wg.Wait()
		return errors.Join(err, numstatErr)
	},
	floorName: func(*floors) string { return "git diff + git diff --numstat (concurrently)" },
}

func commandStep(argv ...string) step {
	return step{
		op: "run_command",
		args: func(it iter) map[string]any {
			return withBreakdown(map[string]any{"repo_id": it.repoID, "argv": argv})
		},
		floor:     func(ctx context.Context, f *floors) error { return f.run(ctx, argv) },
		floorName: func(*floors) string { return strings.Join(argv, " ") },
	}
}

// patchTexts returns the old and new text of iteration n: every iteration
// changes the file, and two iterations bring it back.
func patchTexts(n int) (oldText, newText string) {
	if n%2 == 0 {
		return PatchTextA, PatchTextB
	}
	return PatchTextB, PatchTextA
}

var patchStep = step{
	op: opApplyPatch,
	args: func(it iter) map[string]any {
		oldText, newText := patchTexts(it.n)
		return withBreakdown(map[string]any{
			"repo_id":    it.repoID,
			"request_id": it.request(),
			"operations": []map[string]any{{
				"op": "replace", "path": AppPath, "old_text": oldText, "new_text": newText,
			}},
			"allowed_paths": []string{"src/**"},
		})
	},
	floor:     func(_ context.Context, f *floors) error { return f.patch() },
	floorName: func(*floors) string { return "os.ReadFile + bytes.Replace + write temp + fsync + rename" },
}

// Cases returns the names of every case, in run order.
func Cases() []string {
	var names []string
	for _, c := range allCases() {
		names = append(names, c.name)
	}
	return names
}

func allCases() []caseDef {
	return []caseDef{
		{name: CaseSmallFileRead, steps: []step{readStep(ReadmePath)}},
		// A listing of the repository's top directory: list_dir;
		// server-filesystem's list_directory (fsmcp.go); Forge has no
		// listing tool, so its agent runs ls -A -p (forge.go).
		{name: CaseListDir, steps: []step{listStep}},
		{name: CaseSymbolSearch, steps: []step{searchStep}},
		{name: CaseGitStatus, steps: []step{statusStep}},
		{name: CaseGitDiff, steps: []step{diffStep}, dirty: true},
		{name: CaseSmallBoundedPatch, steps: []step{patchStep}, requires: opApplyPatch},
		{name: CaseShortFocusedCommand, steps: []step{commandStep("git", "status", "--short")}},
		// Seven sequential typed calls. When a "batch" operation exists the
		// same steps can go through it as one call.
		{name: CaseTypedBatch, dirty: true, via: "batch", steps: []step{
			readStep(ReadmePath), searchStep, readStep(AppPath), diffStep, statusStep,
			commandStep("git", "rev-parse", "HEAD"), searchStep,
		}},
		{name: CaseReadOnlyLanes, dirty: true, concurrent: true, via: "read_lanes", steps: []step{
			searchStep, readStep(AppPath), statusStep, diffStep,
		}},
	}
}

// floorName describes the floor of c.
func (c caseDef) floorName(f *floors) string {
	if len(c.steps) == 1 {
		return c.steps[0].floorName(f)
	}
	via := ""
	if c.via != "" && !separateCalls() {
		via = " (one " + c.via + " call when offered)"
	}
	if c.concurrent {
		return "max of the lane floors" + via
	}
	return "sum of the step floors" + via
}

// iterate runs one iteration of c through s.
func (c caseDef) iterate(ctx context.Context, s surface, it iter) (sample, error) {
	if c.via != "" && !separateCalls() && s.HasOp(c.via) {
		var res struct {
			OK bool `json:"ok"`
		}
		smp, err := s.Call(ctx, c.via, c.viaArgs(it), &res)
		if err != nil {
			return sample{}, fmt.Errorf("%s: %w", c.via, err)
		}
		if !res.OK {
			return sample{}, fmt.Errorf("%s: a step failed", c.via)
		}
		return smp, nil
	}
	if !c.concurrent {
		var agg sample
		start := time.Now()
		for _, st := range c.steps {
			smp, err := s.Call(ctx, st.op, st.args(it), nil)
			if err != nil {
				return sample{}, fmt.Errorf("%s: %w", st.op, err)
			}
			agg.add(smp)
		}
		agg.wall = time.Since(start)
		return agg, nil
	}
	smps := make([]sample, len(c.steps))
	errList := make([]error, len(c.steps))
	var wg sync.WaitGroup
	start := time.Now()
	for i, st := range c.steps {
		args := st.args(it)
		wg.Go(func() {
			smps[i], errList[i] = s.Call(ctx, st.op, args, nil)
			if errList[i] != nil {
				errList[i] = fmt.Errorf("%s: %w", st.op, errList[i])
			}
		})
	}
	wg.Wait()
	var agg sample
	agg.wall = time.Since(start)
	if err := errors.Join(errList...); err != nil {
		return sample{}, err
	}
	for _, smp := range smps {
		agg.add(smp)
	}
	return agg, nil
}

// floor runs c's raw operations once: the sum of the step floors, or for
// concurrent cases the slowest lane's.
func (c caseDef) floor(ctx context.Context, f *floors) (time.Duration, error) {
	var sum, slowest time.Duration
	for _, st := range c.steps {
		start := time.Now()
		if err := st.floor(ctx, f); err != nil {
			return 0, fmt.Errorf("floor of %s: %w", st.op, err)
		}
		d := time.Since(start)
		sum += d
		slowest = max(slowest, d)
	}
	if c.concurrent {
		return slowest, nil
	}
	return sum, nil
}

// floors runs the raw operations the cases wrap, without harnessd.
type floors struct {
	fx         *Fixture
	env        []string
	searchArgv []string
	searchName string
	scratch    string // copy of AppPath the patch floor rewrites
	patchN     int
}

// newFloors prepares the floors against fx, with a scratch copy of
// AppPath in scratchDir. Search uses rg when it is installed (as harnessd
// does), else git grep.
func newFloors(fx *Fixture, scratchDir string) (*floors, error) {
	f := &floors{fx: fx, env: gitEnv(), scratch: filepath.Join(scratchDir, "app.go")}
	if err := os.WriteFile(f.scratch, []byte(fx.Files[AppPath]), 0o644); err != nil {
		return nil, fmt.Errorf("patch floor scratch file: %w", err)
	}
	if rg, err := exec.LookPath("rg"); err == nil {
		// The flags harnessd's rg engine passes for a literal search.
		f.searchArgv = []string{rg, "--json", "--no-config", "--hidden", "--no-follow", "--glob=!.git",
			"--max-filesize=" + strconv.Itoa(search.DefaultMaxFileSize), "--sort=path",
			"--no-ignore-dot", "--no-ignore-parent", "--no-messages", "--no-mmap", "--encoding=none",
			"--fixed-strings", "--regexp=" + Symbol, "--", "."}
		f.searchName = "rg --json --fixed-strings (harnessd's flags)"
	} else {
		f.searchArgv = []string{"git", "grep", "--untracked", "-n", "--column", "-I", "-F", "-e", Symbol}
		f.searchName = "git grep --untracked -n --column -I -F (rg not installed)"
	}
	return f, nil
}

// searchTool names the program of the search floor.
func (f *floors) searchTool() string {
	if filepath.Base(f.searchArgv[0]) == "rg" {
		return "rg"
	}
	return "git grep"
}

// run executes argv in the fixture and reads all its output.
func (f *floors) run(ctx context.Context, argv []string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = f.fx.Root
	cmd.Env = f.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// patch is the raw bounded patch: read, replace, write a temp file, fsync,
// rename over the original.
func (f *floors) patch() error {
	oldText, newText := patchTexts(f.patchN)
	f.patchN++
	b, err := os.ReadFile(f.scratch)
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte(oldText)) {
		return fmt.Errorf("patch floor: %q not in %s", oldText, f.scratch)
	}
	b = bytes.Replace(b, []byte(oldText), []byte(newText), 1)
	tmp, err := os.CreateTemp(filepath.Dir(f.scratch), ".app.go.*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), f.scratch)
}

// requestIDs makes unique request ids for one run.
type requestIDs struct {
	prefix string
	n      atomic.Int64
}

func newRequestIDs(tag string) *requestIDs {
	return &requestIDs{prefix: "bench-" + tag + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"}
}

func (r *requestIDs) next() string { return r.prefix + strconv.FormatInt(r.n.Add(1), 10) }
