package suite

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// CaseCheckIdentity is the scale case of a check identity's content
// revision: what run_check computes before it can reuse evidence.
const CaseCheckIdentity = "check_identity"

// The scale cases measured right after an edit: before each call (not
// timed) one dirty file is rewritten, so no answer cached for an unchanged
// tree applies.
const (
	CaseGitStatusAfterEdit    = "git_status_after_edit"
	CaseSymbolSearchAfterEdit = "symbol_search_after_edit"
)

// CaseGitStatusFirst is the first touch: each call is the first
// git_status of a new in-process harness (opened and the repository
// registered untimed, closed after), its live index cold.
const CaseGitStatusFirst = "git_status_first"

// DefaultSeed seeds the generated repositories.
const DefaultSeed = 1

// ScaleCases returns the cases of the generated-repository mode (--files),
// in run order.
func ScaleCases() []string {
	return []string{CaseGitStatus, CaseGitStatusAfterEdit, CaseSymbolSearch, CaseSymbolSearchAfterEdit, CaseGitDiff, CaseCheckIdentity, CaseGitStatusFirst}
}

// scaleIterations returns the default warmup and measured iterations for
// a repository of n files: fewer as the tree grows.
func scaleIterations(n int) (warmup, iterations int) {
	switch {
	case n <= 1000:
		return 20, 200
	case n <= 20000:
		return 5, 50
	default:
		return 3, 15
	}
}

// ScaleResult is one case measured on one generated repository, in
// process. Times are milliseconds (medians of the measured iterations);
// Ratio is RawMs / HarnessdMs (above 1: harnessd is faster than the raw
// operation). A failed case carries Error instead of the figures.
type ScaleResult struct {
	Files      int      `json:"files"`
	Case       string   `json:"case"`
	Iterations int      `json:"iterations"`
	HarnessdMs *float64 `json:"harnessd_ms,omitempty"`
	RawMs      *float64 `json:"raw_ms,omitempty"`
	Ratio      *float64 `json:"ratio,omitempty"`
	// IdentityMs (check_identity only) is the median snapshot segment of
	// run_check: computing the identity, inside HarnessdMs.
	IdentityMs *float64 `json:"identity_ms,omitempty"`
	// FirstMs (git_status only) is the first call's time: the checkout's
	// first touch, with a cold live index (answered by git while the
	// view builds in the background).
	FirstMs *float64 `json:"first_ms,omitempty"`
	// RSSMB is VmRSS of this process in MiB after the case's warmup.
	RSSMB *float64 `json:"rss_mb,omitempty"`
	// Harnessd says what was timed on harnessd's side, Raw what the raw
	// operation runs.
	Harnessd string `json:"harnessd"`
	Raw      string `json:"raw"`
	Error    string `json:"error,omitempty"`
}

// ScaleRepo describes one generated repository.
type ScaleRepo struct {
	Files       int     `json:"files"`
	Dirs        int     `json:"dirs"`
	MaxDepth    int     `json:"max_depth"`
	Bytes       int64   `json:"bytes"`
	SymbolFiles int     `json:"symbol_files"`
	Dirty       int     `json:"dirty"`
	Untracked   int     `json:"untracked"`
	Ignored     int     `json:"ignored"`
	GenerateS   float64 `json:"generate_s"`
	Warmup      int     `json:"warmup"`
	Iterations  int     `json:"iterations"`
}

// scaleCase is one case of the scale mode: a harnessd call and its raw
// operation, both on the generated repository.
type scaleCase struct {
	name     string
	harnessd string
	raw      string
	// call runs harnessd's side once, the i-th time (warmup included); the
	// first call checks that the result is the real answer.
	call  func(ctx context.Context, i int) (sample, error)
	floor func(ctx context.Context) error
	// minWarmup is the least warmup the case needs (run_check's first call
	// runs the check; later ones reuse it).
	minWarmup int
	// segment reports the case's snapshot segment as identity_ms.
	segment bool
	// edit, when set, runs before the i-th call (untimed).
	edit func(i int) error
	// first, when set, runs after the first call (untimed): the first
	// call is then reported as FirstMs.
	first func(ctx context.Context) error
}

// scaleCheckArgv is the check check_identity runs once and then reuses.
var scaleCheckArgv = []string{"true"}

// identityStatusArgs is the one git status checkid.ContentRevision runs
// (its statusArgs) when no live view of the checkout answers: what the
// content revision costs from scratch.
var identityStatusArgs = []string{"git", "status", "--porcelain=v2", "--branch", "--no-ahead-behind", "--no-renames", "-z", "--untracked-files=all"}

// firstTouch is the git_status_first case on the checkout root: each call
// opens a harness (untimed), registers root, times its first git_status,
// and closes it (untimed).
func firstTouch(root string, open func(context.Context) (*inproc, error), fl *floors, verify func(out map[string]any) error) scaleCase {
	return scaleCase{
		name:     CaseGitStatusFirst,
		harnessd: "the first git_status of a new in-process harness (live index cold; opening, registering and closing untimed)",
		raw:      statusStep.floorName(fl),
		call: func(ctx context.Context, i int) (sample, error) {
			s, err := open(ctx)
			if err != nil {
				return sample{}, err
			}
			defer s.Close()
			id, err := register(ctx, s, root)
			if err != nil {
				return sample{}, err
			}
			var out map[string]any
			smp, err := s.Call(ctx, statusStep.op, statusStep.args(iter{repoID: id}), &out)
			if err == nil {
				err = verify(out)
			}
			return smp, err
		},
		floor: func(ctx context.Context) error { return statusStep.floor(ctx, fl) },
	}
}

// scaleCases builds the cases for g, reached through s as repoID.
func scaleCases(s surface, repoID string, g *GenRepo, fl *floors, work string) []scaleCase {
	it := iter{repoID: repoID}
	viaOp := func(st step, verify func(out map[string]any) error) scaleCase {
		return scaleCase{
			name:     st.op,
			harnessd: st.op + " through CallOp (in process)",
			raw:      st.floorName(fl),
			call: func(ctx context.Context, i int) (sample, error) {
				var out map[string]any
				var dst any
				if i == 0 {
					dst = &out
				}
				smp, err := s.Call(ctx, st.op, st.args(it), dst)
				if err == nil && i == 0 {
					err = verify(out)
				}
				return smp, err
			},
			floor: func(ctx context.Context) error { return st.floor(ctx, fl) },
		}
	}
	status := viaOp(statusStep, func(out map[string]any) error {
		if u, n := lenOf(out["unstaged"]), lenOf(out["untracked"]); u != GenDirty || n != GenUntracked {
			return fmt.Errorf("git_status shows %d unstaged and %d untracked paths, want %d and %d", u, n, GenDirty, GenUntracked)
		}
		return nil
	})
	status.name = CaseGitStatus
	if in, ok := s.(*inproc); ok {
		// The first status is the first touch; then the live index is
		// let finish its background build before the warmup goes on.
		status.first = func(ctx context.Context) error { return in.h.WarmLiveIndex(ctx, repoID) }
	}
	search := viaOp(searchStep, func(out map[string]any) error {
		if lenOf(out["matches"]) == 0 {
			return fmt.Errorf("search found no %s, want matches in %d files", Symbol, g.SymbolFiles)
		}
		return nil
	})
	search.name = CaseSymbolSearch
	diff := viaOp(diffStep, func(out map[string]any) error {
		if n := lenOf(out["files"]); n != GenDirty {
			return fmt.Errorf("git_diff shows %d files, want %d", n, GenDirty)
		}
		return nil
	})
	diff.name = CaseGitDiff
	hashed := append(append([]string(nil), g.Dirty...), g.Untracked...)
	ident := scaleCase{
		name:      CaseCheckIdentity,
		harnessd:  "run_check " + strings.Join(scaleCheckArgv, " ") + " through CallOp, reusing the evidence of its first run (identity_ms: its snapshot segment, the identity)",
		raw:       strings.Join(identityStatusArgs, " ") + " + sha256 of the changed files",
		minWarmup: 1,
		segment:   true,
		call: func(ctx context.Context, i int) (sample, error) {
			var out struct {
				Reused      bool   `json:"reused"`
				Passed      bool   `json:"passed"`
				Stderr      string `json:"stderr"`
				OriginalRun struct {
					JobID string `json:"job_id"`
				} `json:"original_run"`
			}
			args := withBreakdown(map[string]any{"repo_id": repoID, "argv": scaleCheckArgv})
			smp, err := s.Call(ctx, "run_check", args, &out)
			switch {
			case err != nil:
			case !out.Passed:
				err = fmt.Errorf("run_check %s did not pass: %.300s%s", strings.Join(scaleCheckArgv, " "), out.Stderr, jobStderr(ctx, s, out.OriginalRun.JobID))
			case i > 0 && !out.Reused:
				err = fmt.Errorf("run_check did not reuse the evidence of its first run: the identity changed on an unchanged tree")
			}
			return smp, err
		},
		floor: func(ctx context.Context) error {
			if err := fl.run(ctx, identityStatusArgs); err != nil {
				return err
			}
			for _, rel := range hashed {
				b, err := os.ReadFile(filepath.Join(g.Root, filepath.FromSlash(rel)))
				if err != nil {
					return err
				}
				_ = sha256.Sum256(b)
			}
			return nil
		},
	}
	edited := filepath.Join(g.Root, filepath.FromSlash(g.Dirty[0]))
	base, err := os.ReadFile(edited)
	afterEdit := func(c scaleCase, name string) scaleCase {
		c.name = name
		c.harnessd += ", each call right after a rewrite of " + g.Dirty[0]
		c.raw += ", after the same rewrite"
		c.edit = func(i int) error {
			if err != nil {
				return err
			}
			line := fmt.Sprintf("\n// edit %d\n", i)
			if i%2 == 1 {
				line = fmt.Sprintf("\n// edit %d calls %s\n", i, Symbol)
			}
			return os.WriteFile(edited, append(base[:len(base):len(base)], line...), 0o644)
		}
		return c
	}
	// Every search after an edit must see it: the edited file holds the
	// symbol after odd rewrites only.
	searchEdited := afterEdit(search, CaseSymbolSearchAfterEdit)
	searchEdited.call = func(ctx context.Context, i int) (sample, error) {
		var out struct {
			Matches []struct {
				Path string `json:"path"`
			} `json:"matches"`
		}
		smp, err := s.Call(ctx, searchStep.op, searchStep.args(it), &out)
		if err != nil {
			return smp, err
		}
		found := false
		for _, m := range out.Matches {
			found = found || m.Path == g.Dirty[0]
		}
		if want := i%2 == 1; found != want {
			return smp, fmt.Errorf("search right after rewrite %d lists %s = %v, want %v: a stale answer", i, g.Dirty[0], found, want)
		}
		return smp, nil
	}
	statusEdited := afterEdit(status, CaseGitStatusAfterEdit)
	statusEdited.first = nil
	open := func(ctx context.Context) (*inproc, error) { return openInproc(ctx, work) }
	first := firstTouch(g.Root, open, fl, func(out map[string]any) error {
		if u, n := lenOf(out["unstaged"]), lenOf(out["untracked"]); u != GenDirty || n != GenUntracked {
			return fmt.Errorf("git_status shows %d unstaged and %d untracked paths, want %d and %d", u, n, GenDirty, GenUntracked)
		}
		return nil
	})
	return []scaleCase{status, statusEdited, search, searchEdited, diff, ident, first}
}

// jobStderr returns "; stderr: ..." with the tail of a failed check job's
// stderr, or "" when there is none.
func jobStderr(ctx context.Context, s surface, jobID string) string {
	if jobID == "" {
		return ""
	}
	var logs struct {
		Data string `json:"data"`
	}
	if _, err := s.Call(ctx, "job_logs", map[string]any{"job_id": jobID, "stream": "stderr", "tail": 400}, &logs); err != nil || logs.Data == "" {
		return ""
	}
	return "; job stderr: " + oneLine(logs.Data, 400)
}

func lenOf(v any) int {
	if xs, ok := v.([]any); ok {
		return len(xs)
	}
	return 0
}

// runScale generates a repository per --files size and measures the
// scale cases on it in process.
func runScale(ctx context.Context, cfg config, rep *Report, stderr io.Writer) error {
	work, err := os.MkdirTemp("", "harnessd-bench-")
	if err != nil {
		return err
	}
	if cfg.keep {
		fmt.Fprintf(stderr, "scale: --keep: the repositories stay under %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	var errList []error
	for _, n := range cfg.files {
		if ctx.Err() != nil {
			errList = append(errList, ctx.Err())
			break
		}
		errList = append(errList, runScaleSize(ctx, cfg, n, work, rep, stderr))
	}
	return errors.Join(errList...)
}

// runScaleSize generates one repository of n files and measures every
// selected case on it through a new in-process harness.
func runScaleSize(ctx context.Context, cfg config, n int, work string, rep *Report, stderr io.Writer) error {
	runtime.GC()
	debug.FreeOSMemory()
	g, err := GenerateRepo(ctx, work, n, cfg.seed, stderr)
	if err != nil {
		return fmt.Errorf("%d files: %w", n, err)
	}
	if !cfg.keep {
		defer g.Remove()
	}
	// What generating the tree allocated is garbage now: hand it back, so
	// the RSS figures are harnessd's and the bench's, not the generator's.
	runtime.GC()
	debug.FreeOSMemory()
	warmup, iterations := scaleIterations(n)
	if cfg.warmupSet {
		warmup = min(warmup, cfg.warmup)
	}
	if cfg.iterationsSet {
		iterations = min(iterations, cfg.iterations)
	}
	fmt.Fprintf(stderr, "scale: %d files ready in %.1fs (%d dirs, depth %d, %.1f MB); %d iterations after %d warmup\n",
		n, g.Took.Seconds(), g.Dirs, g.MaxDepth, float64(g.Bytes)/1e6, iterations, warmup)
	rep.ScaleRepos = append(rep.ScaleRepos, ScaleRepo{
		Files: g.Files, Dirs: g.Dirs, MaxDepth: g.MaxDepth, Bytes: g.Bytes, SymbolFiles: g.SymbolFiles,
		Dirty: len(g.Dirty), Untracked: len(g.Untracked), Ignored: len(g.Ignored),
		GenerateS: round3(g.Took.Seconds()), Warmup: warmup, Iterations: iterations,
	})
	s, err := openInproc(ctx, work)
	if err != nil {
		return fmt.Errorf("%d files: %w", n, err)
	}
	defer s.Close()
	repoID, err := register(ctx, s, g.Root)
	if err != nil {
		return fmt.Errorf("%d files: %w", n, err)
	}
	fl, err := newFloors(&Fixture{Root: g.Root, Files: map[string]string{}}, work)
	if err != nil {
		return err
	}
	rep.Settings.SearchFloor = fl.searchTool()
	var errList []error
	for _, c := range scaleCases(s, repoID, g, fl, work) {
		if !slices.Contains(cfg.cases, c.name) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(stderr, "scale: %d files: %s ...\n", n, c.name)
		r := measureScale(ctx, c, n, warmup, iterations)
		if r.Error != "" {
			errList = append(errList, fmt.Errorf("%d files %s: %s", n, c.name, r.Error))
		}
		rep.Scale = append(rep.Scale, r)
	}
	if cfg.memProfile != "" || n >= 10000 {
		settledRSS(ctx, n, stderr)
	}
	if cfg.memProfile != "" {
		errList = append(errList, writeMemProfile(fmt.Sprintf("%s-%d.pprof", cfg.memProfile, n), n, stderr))
	}
	return errors.Join(errList...)
}

// rssMiB returns VmRSS, RssAnon and RssFile of this process in MiB.
func rssMiB() (vm, anon, file float64) {
	kb := func(key string) float64 { v, _ := procKB("/proc/self/status", key); return float64(v) / 1024 }
	return kb("VmRSS"), kb("RssAnon"), kb("RssFile")
}

// settledRSS prints the settled RSS after a size's cases, with the harness
// still open and idle: the median of three samples a second apart of
// VmRSS, RssAnon (what the process itself keeps: heaps, the off-heap
// index) and RssFile (the binary and the files mapped), and the Go heap.
func settledRSS(ctx context.Context, n int, stderr io.Writer) {
	var vms, anons, files []float64
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for len(vms) < 3 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		vm, anon, file := rssMiB()
		vms, anons, files = append(vms, vm), append(anons, anon), append(files, file)
	}
	med := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(stderr, "scale: %d files: settled RSS (median of 3, 1 s apart): VmRSS %.1f MiB, RssAnon %.1f, RssFile %.1f; Go heap in use %.1f MiB, idle not released %.1f, memory limit %s\n",
		n, med(vms), med(anons), med(files), mib(ms.HeapInuse), mib(ms.HeapIdle-ms.HeapReleased), memLimit())
}

// memLimit describes the Go runtime's soft memory limit.
func memLimit() string {
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		return fmt.Sprintf("%.1f MiB", mib(uint64(l)))
	}
	return "none"
}

// writeMemProfile writes the heap profile in use after a GC to path, with
// the harness still open, and the runtime's memory figures to stderr.
func writeMemProfile(path string, n int, stderr io.Writer) error {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	vm, anon, file := rssMiB()
	fmt.Fprintf(stderr, "scale: %d files: RSS %.1f MiB (anon %.1f, file %.1f), heap in use %.1f MiB (live %.1f), heap idle not released %.1f MiB, stacks %.1f MiB, runtime other %.1f MiB; heap profile %s\n",
		n, vm, anon, file, mib(ms.HeapInuse), mib(ms.HeapAlloc), mib(ms.HeapIdle-ms.HeapReleased), mib(ms.StackSys),
		mib(ms.MSpanSys+ms.MCacheSys+ms.BuckHashSys+ms.GCSys+ms.OtherSys), path)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--memprofile: %w", err)
	}
	return f.Close()
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// measureScale runs c warmup+iterations times, each harnessd call followed
// by one run of the raw operation, and reports the medians of the measured
// ones with VmRSS after the warmup. The first call checks its result.
func measureScale(ctx context.Context, c scaleCase, n, warmup, iterations int) ScaleResult {
	r := ScaleResult{Files: n, Case: c.name, Harnessd: c.harnessd, Raw: c.raw}
	var segs []float64
	var rss float64
	m := paired{edit: c.edit, call: c.call, first: c.first, floor: c.floor,
		measuring: func() {
			kb, _ := procKB("/proc/self/status", "VmRSS")
			rss = round3(float64(kb) / 1024)
		},
		each: func(smp sample) {
			if c.segment {
				segs = append(segs, smp.seg[2])
			}
		}}
	hs, raws, first, err := m.run(ctx, max(warmup, c.minWarmup), iterations)
	r.FirstMs = first
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.summarize(hs, raws, segs, rss)
	return r
}

// unmeasured is a table's remark for a case without measured iterations.
func unmeasured(errText string) string {
	if errText != "" {
		return "error: " + oneLine(errText, 160)
	}
	return "no measured iterations"
}

// paired is the measured loop of a scale or real case: before the i-th
// call an optional untimed edit, then harnessd's call, an optional untimed
// hook after the first call (which is then reported on its own), and the
// raw floor timed the same way.
type paired struct {
	edit  func(i int) error
	call  func(ctx context.Context, i int) (sample, error)
	first func(ctx context.Context) error
	floor func(ctx context.Context) error
	// measuring runs once, before the first measured iteration; each sees
	// every measured call.
	measuring func()
	each      func(sample)
}

// run returns the measured harnessd and raw times (ms) and the first
// call's time when first is set; an error names its iteration.
func (p paired) run(ctx context.Context, warmup, iterations int) (hs, raws []float64, firstMs *float64, err error) {
	hs = make([]float64, 0, iterations)
	raws = make([]float64, 0, iterations)
	for i := 0; i < warmup+iterations; i++ {
		if i == warmup && p.measuring != nil {
			p.measuring()
		}
		if p.edit != nil {
			if err := p.edit(i); err != nil {
				return nil, nil, firstMs, fmt.Errorf("iteration %d: edit: %v", i, err)
			}
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		smp, err := p.call(cctx, i)
		cancel()
		if err != nil {
			return nil, nil, firstMs, fmt.Errorf("iteration %d: %v", i, err)
		}
		if i == 0 && p.first != nil {
			first := round3(ms(smp.wall))
			firstMs = &first
			if err := p.first(ctx); err != nil {
				return nil, nil, firstMs, fmt.Errorf("after the first call: %v", err)
			}
		}
		start := time.Now()
		if err := p.floor(ctx); err != nil {
			return nil, nil, firstMs, fmt.Errorf("iteration %d: raw: %v", i, err)
		}
		if i >= warmup {
			hs = append(hs, ms(smp.wall))
			raws = append(raws, ms(time.Since(start)))
			if p.each != nil {
				p.each(smp)
			}
		}
	}
	return hs, raws, firstMs, nil
}

// summarize fills r's figures from the measured times (ms); identityMs
// (nil for most cases) are the snapshot segments of run_check.
func (r *ScaleResult) summarize(harnessdMs, rawMs, identityMs []float64, rssMB float64) {
	r.Iterations = len(harnessdMs)
	if r.Iterations == 0 {
		return
	}
	h, raw := round3(Median(harnessdMs)), round3(Median(rawMs))
	r.HarnessdMs, r.RawMs, r.RSSMB = &h, &raw, &rssMB
	if len(identityMs) > 0 {
		id := round3(Median(identityMs))
		r.IdentityMs = &id
	}
	if h > 0 {
		ratio := round3(raw / h)
		r.Ratio = &ratio
	}
}

// writeScale prints one table per repository size.
func writeScale(w io.Writer, rep *Report) error {
	m := rep.Machine
	fmt.Fprintf(w, "harnessd bench, generated repositories, in process: warm medians in ms; RATIO = raw / harnessd (above 1: harnessd is faster)\n")
	fmt.Fprintf(w, "machine: %s/%s, %d CPUs, %s, %.1f GiB; %s; commit %s; seed %d\n",
		m.OS, m.Arch, m.CPUs, m.CPUModel, float64(m.MemTotal)/(1<<30), rep.GoVersion, rep.Commit, rep.Settings.Seed)
	for _, g := range rep.ScaleRepos {
		fmt.Fprintf(w, "\n%d files: %d dirs, depth %d, %.1f MB, %s in %d files, %d dirty + %d untracked, %d ignored; generated in %.1fs; %d iterations after %d warmup\n",
			g.Files, g.Dirs, g.MaxDepth, float64(g.Bytes)/1e6, Symbol, g.SymbolFiles, g.Dirty, g.Untracked, g.Ignored, g.GenerateS, g.Iterations, g.Warmup)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "OP\tHARNESSD\tRAW\tRATIO\tRSS MB\tNOTE")
		for _, r := range rep.Scale {
			if r.Files != g.Files {
				continue
			}
			if r.HarnessdMs == nil {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\n", r.Case, unmeasured(r.Error))
				continue
			}
			ratio := "-"
			if r.Ratio != nil {
				ratio = fmt.Sprintf("%.2fx", *r.Ratio)
			}
			note := ""
			if r.IdentityMs != nil {
				note = "identity " + f3(*r.IdentityMs) + " ms of it"
			}
			if r.FirstMs != nil {
				note = fmt.Sprintf("first call (cold) %s ms = %.2fx raw", f3(*r.FirstMs), *r.FirstMs / *r.RawMs)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%s\n", r.Case, f3(*r.HarnessdMs), f3(*r.RawMs), ratio, *r.RSSMB, note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nRSS MB: VmRSS of this process (MiB) after the case's warmup. What each side runs:")
	seen := map[string]bool{}
	for _, r := range rep.Scale {
		if !seen[r.Case] {
			seen[r.Case] = true
			fmt.Fprintf(w, "  %-25s harnessd: %s\n  %-25s raw:      %s\n", r.Case, r.Harnessd, "", r.Raw)
		}
	}
	return nil
}
