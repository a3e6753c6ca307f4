package suite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/harnessd/harnessd/harness"
)

// The real mode (--real DIR): the live index on a repository that exists,
// in process, against git and rg run directly on the same tree. DIR
// "goroot" makes one: $(go env GOROOT)/src copied as is (with its
// .gitattributes) into a new git repository in a temp dir. Unless
// --real-worktree=false, the cases run again on a linked worktree of it.

// The real-mode cases, in run order.
const (
	RealStatus        = "status"
	RealSearchRare    = "search_rare"
	RealSearchCommon  = "search_common"
	RealDiff          = "diff"
	RealDiffAfterEdit = "diff_after_edit"
	// RealFirstStatus is the first touch: each call the first git_status
	// of a new harness (opening and registering untimed).
	RealFirstStatus = "first_status"
)

// RealCases returns the cases of the real mode, in run order.
func RealCases() []string {
	return []string{RealStatus, RealSearchRare, RealSearchCommon, RealDiff, RealDiffAfterEdit, RealFirstStatus}
}

// RealGoroot is the --real value that builds the Go toolchain's source
// repository.
const RealGoroot = "goroot"

// Defaults of the real mode: the searched symbols (rare and common in the
// Go toolchain's source), and the iterations.
const (
	DefaultRareQuery   = "cmpstring"
	DefaultCommonQuery = "errors.New"
	realWarmup         = 5
	realIterations     = 21
	realDirty          = 5 // tracked files edited
)

// RealResult is one case on one real checkout, in process. Times are
// milliseconds, medians of the measured iterations; Ratio is RawMs /
// HarnessdMs (above 1: harnessd is faster). Sources counts the source
// harnessd's measured answers named ("index", "cache", "exec"), Reason is
// the index_reason of one that was not in process.
type RealResult struct {
	Checkout   string         `json:"checkout"`
	Case       string         `json:"case"`
	Iterations int            `json:"iterations"`
	HarnessdMs *float64       `json:"harnessd_ms,omitempty"`
	RawMs      *float64       `json:"raw_ms,omitempty"`
	Ratio      *float64       `json:"ratio,omitempty"`
	FirstMs    *float64       `json:"first_ms,omitempty"`
	Sources    map[string]int `json:"sources,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Harnessd   string         `json:"harnessd"`
	Raw        string         `json:"raw"`
	Error      string         `json:"error,omitempty"`
}

// RealRepo describes one real checkout.
type RealRepo struct {
	Checkout   string  `json:"checkout"`
	Root       string  `json:"root"`
	Worktree   bool    `json:"worktree"`
	Files      int     `json:"files"`
	Bytes      int64   `json:"bytes"`
	Attributes int     `json:"attributes"`
	Dirty      int     `json:"dirty"`
	Untracked  int     `json:"untracked"`
	SetupS     float64 `json:"setup_s"`
	Warmup     int     `json:"warmup"`
	Iterations int     `json:"iterations"`
}

// realCheckout is one checkout measured, with the edits the run made.
type realCheckout struct {
	name     string
	root     string
	worktree bool
	dirty    []string          // tracked files edited (relative)
	orig     map[string][]byte // their content before
	modes    map[string]os.FileMode
	times    map[string]time.Time
	extra    []string // untracked files made (relative)
}

// runReal measures the real cases on --real's checkout (and its linked
// worktree).
func runReal(ctx context.Context, cfg config, rep *Report, stderr io.Writer) error {
	work, err := os.MkdirTemp("", "harnessd-bench-real-")
	if err != nil {
		return err
	}
	if cfg.keep {
		fmt.Fprintf(stderr, "real: --keep: the scratch dir stays at %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	start := time.Now()
	root := cfg.real
	if root == RealGoroot {
		if root, err = makeGorootRepo(ctx, work, stderr); err != nil {
			return fmt.Errorf("real: %w", err)
		}
	}
	if root, err = filepath.Abs(root); err != nil {
		return err
	}
	top, err := realGit(ctx, root, "rev-parse", "--show-toplevel")
	if err != nil || filepath.Clean(top) != filepath.Clean(root) {
		return fmt.Errorf("real: %s is not the top of a git work tree", root)
	}
	setup := time.Since(start)
	checkouts := []*realCheckout{{name: filepath.Base(root), root: root}}
	if cfg.realWorktree {
		wt := filepath.Join(work, "worktree")
		if _, err := realGit(ctx, root, "worktree", "add", "-q", "--detach", wt, "HEAD"); err != nil {
			return fmt.Errorf("real: linked worktree: %w", err)
		}
		// The checkout just wrote every file in the second it wrote the
		// index: each entry is racily clean, and every git status would
		// read every file until one refreshes the index. Date the files
		// back (they are the bench's) and let git refresh it once.
		if err := backdate(wt); err != nil {
			return fmt.Errorf("real: linked worktree: %w", err)
		}
		if _, err := realGit(ctx, wt, "update-index", "-q", "--refresh"); err != nil {
			return fmt.Errorf("real: linked worktree: %w", err)
		}
		defer func() { _, _ = realGit(context.WithoutCancel(ctx), root, "worktree", "remove", "--force", wt) }()
		checkouts = append(checkouts, &realCheckout{name: filepath.Base(root) + " (linked worktree)", root: wt, worktree: true})
	}
	warmup, iterations := realWarmup, realIterations
	if cfg.warmupSet {
		warmup = cfg.warmup
	}
	if cfg.iterationsSet {
		iterations = cfg.iterations
	}
	var errList []error
	for _, c := range checkouts {
		if ctx.Err() != nil {
			break
		}
		errList = append(errList, runRealCheckout(ctx, cfg, c, work, warmup, iterations, setup, rep, stderr))
	}
	return errors.Join(errList...)
}

// makeGorootRepo copies $(go env GOROOT)/src into dir/go-src and commits it
// as is: a git repository nobody wrote for this bench.
func makeGorootRepo(ctx context.Context, dir string, stderr io.Writer) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "src")
	dst := filepath.Join(dir, "go-src")
	fmt.Fprintf(stderr, "real: copying %s into %s\n", src, dst)
	if err := copyTree(src, dst); err != nil {
		return "", err
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "-m", "go source"},
	} {
		if _, err := realGit(ctx, dst, args...); err != nil {
			return "", err
		}
	}
	return dst, nil
}

// copyTree copies the regular files, symbolic links and directories of src
// into dst (which must not exist), keeping the executable bits and the
// modification times (as cp -p does: the index git then writes is newer
// than every file, so no entry is racily clean).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(to, b, fi.Mode().Perm()|0o200); err != nil {
				return err
			}
			return os.Chtimes(to, fi.ModTime(), fi.ModTime())
		}
		return nil
	})
}

// backdate sets the modification time of every file of the work tree dir
// (not .git) an hour back.
func backdate(dir string) error {
	old := time.Now().Add(-time.Hour)
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.Name() == ".git":
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.Type().IsRegular():
			return os.Chtimes(p, old, old)
		}
		return nil
	})
}

// realGit runs git in dir with the bench's environment (no user or system
// config, a fixed identity) and returns its trimmed stdout.
func realGit(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// dirty edits realDirty tracked text files spread over the tree (a line
// appended) and makes two untracked files; restore undoes it.
func (c *realCheckout) dirtyTree(ctx context.Context) (files int, bytes int64, attrs int, err error) {
	out, err := realGit(ctx, c.root, "ls-files", "-z")
	if err != nil {
		return 0, 0, 0, err
	}
	var tracked []string
	for _, p := range strings.Split(out, "\x00") {
		if p == "" {
			continue
		}
		tracked = append(tracked, p)
		if filepath.Base(p) == ".gitattributes" {
			attrs++
		}
		if fi, err := os.Lstat(filepath.Join(c.root, p)); err == nil {
			bytes += fi.Size()
		}
	}
	slices.Sort(tracked)
	c.orig, c.modes, c.times = map[string][]byte{}, map[string]os.FileMode{}, map[string]time.Time{}
	for k := 0; k < realDirty; k++ {
		// The first editable file from each fifth of the sorted list.
		j := k * len(tracked) / realDirty
		for j < len(tracked) && (slices.Contains(c.dirty, tracked[j]) || !editable(filepath.Join(c.root, tracked[j]))) {
			j++
		}
		if j == len(tracked) {
			continue
		}
		p := tracked[j]
		abs := filepath.Join(c.root, p)
		fi, _ := os.Lstat(abs)
		b, _ := os.ReadFile(abs)
		c.orig[p], c.modes[p], c.times[p] = b, fi.Mode().Perm(), fi.ModTime()
		if err := os.WriteFile(abs, append(slices.Clip(b), "\nharnessd bench: an edit\n"...), fi.Mode().Perm()); err != nil {
			return 0, 0, 0, err
		}
		c.dirty = append(c.dirty, p)
	}
	if len(c.dirty) == 0 {
		return 0, 0, 0, errors.New("no tracked text file of 1 to 256 KiB to edit")
	}
	for i, p := range []string{"harnessd-bench-untracked-1.txt", filepath.ToSlash(filepath.Join(filepath.Dir(c.dirty[0]), "harnessd-bench-untracked-2.txt"))} {
		if err := os.WriteFile(filepath.Join(c.root, p), fmt.Appendf(nil, "untracked %d\n", i), 0o644); err != nil {
			return 0, 0, 0, err
		}
		c.extra = append(c.extra, p)
	}
	return len(tracked), bytes, attrs, nil
}

// editable: a regular text file (no NUL in its first 8 KiB) of 1 KiB to
// 256 KiB.
func editable(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < 1<<10 || fi.Size() > 256<<10 {
		return false
	}
	b, err := os.ReadFile(p)
	return err == nil && !bytes.Contains(b[:min(len(b), 8<<10)], []byte{0})
}

// restore puts the edited files back as they were and removes the
// untracked ones.
func (c *realCheckout) restore() error {
	var errList []error
	for p, b := range c.orig {
		abs := filepath.Join(c.root, p)
		errList = append(errList, os.WriteFile(abs, b, c.modes[p]), os.Chtimes(abs, c.times[p], c.times[p]))
	}
	for _, p := range c.extra {
		errList = append(errList, os.Remove(filepath.Join(c.root, p)))
	}
	return errors.Join(errList...)
}

// runRealCheckout measures every selected real case on one checkout
// through a new in-process harness.
func runRealCheckout(ctx context.Context, cfg config, c *realCheckout, work string, warmup, iterations int, setup time.Duration, rep *Report, stderr io.Writer) error {
	runtime.GC()
	debug.FreeOSMemory()
	files, size, attrs, err := c.dirtyTree(ctx)
	defer func() { _ = c.restore() }()
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	rep.RealRepos = append(rep.RealRepos, RealRepo{Checkout: c.name, Root: c.root, Worktree: c.worktree, Files: files, Bytes: size,
		Attributes: attrs, Dirty: len(c.dirty), Untracked: len(c.extra), SetupS: round3(setup.Seconds()), Warmup: warmup, Iterations: iterations})
	fmt.Fprintf(stderr, "real: %s: %d files (%.1f MB), %d .gitattributes; %d iterations after %d warmup\n", c.name, files, float64(size)/1e6, attrs, iterations, warmup)
	data, err := os.MkdirTemp(work, "data-")
	if err != nil {
		return err
	}
	s, err := openRealHarness(ctx, data, c.root)
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	defer s.Close()
	repoID, err := register(ctx, s, c.root)
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	fl, err := newFloors(&Fixture{Root: c.root, Files: map[string]string{}}, data)
	if err != nil {
		return err
	}
	rep.Settings.SearchFloor = fl.searchTool()
	var errList []error
	for _, rc := range realCases(s, repoID, c, fl, cfg, data) {
		if !slices.Contains(cfg.cases, rc.name) || ctx.Err() != nil {
			continue
		}
		fmt.Fprintf(stderr, "real: %s: %s ...\n", c.name, rc.name)
		r := measureReal(ctx, s, repoID, c.name, rc, warmup, iterations)
		if r.Error != "" {
			errList = append(errList, fmt.Errorf("%s %s: %s", c.name, rc.name, r.Error))
		}
		rep.Real = append(rep.Real, r)
	}
	return errors.Join(errList...)
}

// openRealHarness opens an in-process harness with its data in a new dir
// under work, allowed to register root (its parent is an allowed root).
func openRealHarness(ctx context.Context, work, root string) (*inproc, error) {
	data, err := os.MkdirTemp(work, "harness-")
	if err != nil {
		return nil, err
	}
	h, err := harness.Open(ctx, harness.Config{DataDir: data, LoopThreshold: -1, AllowRoots: []string{filepath.Dir(root)}})
	if err != nil {
		os.RemoveAll(data)
		return nil, fmt.Errorf("open harness: %w", err)
	}
	return &inproc{h: h, dataDir: data}, nil
}

// realCase is one case of the real mode.
type realCase struct {
	name     string
	harnessd string
	raw      string
	// call runs harnessd's side once and returns the answer's source and
	// index_reason; the first call (i == 0) checks the answer is real.
	call  func(ctx context.Context, i int) (sample, string, string, error)
	floor func(ctx context.Context) error
	// edit, when set, runs before the i-th call (untimed).
	edit func(i int) error
}

func realCases(s *inproc, repoID string, c *realCheckout, fl *floors, cfg config, work string) []realCase {
	rgFor := func(q string) []string {
		argv := slices.Clone(fl.searchArgv)
		for i, a := range argv {
			switch {
			case strings.HasPrefix(a, "--regexp="):
				argv[i] = "--regexp=" + q
			case a == "-e" && i+1 < len(argv):
				argv[i+1] = q
			}
		}
		return argv
	}
	type answer struct {
		Source      string `json:"source"`
		IndexReason string `json:"index_reason"`
		Matches     []any  `json:"matches"`
		Files       []any  `json:"files"`
		Unstaged    []any  `json:"unstaged"`
		Untracked   []any  `json:"untracked"`
	}
	viaOp := func(op string, args map[string]any, verify func(a answer) error) func(ctx context.Context, i int) (sample, string, string, error) {
		return func(ctx context.Context, i int) (sample, string, string, error) {
			var a answer
			smp, err := s.Call(ctx, op, withBreakdown(args), &a)
			if err == nil && i == 0 {
				err = verify(a)
			}
			return smp, a.Source, a.IndexReason, err
		}
	}
	search := func(name, q string) realCase {
		argv := rgFor(q)
		return realCase{
			name: name, harnessd: "search " + q + " through CallOp (in process)", raw: fl.searchName + " " + q,
			call: viaOp("search", map[string]any{"repo_id": repoID, "query": q}, func(a answer) error {
				if len(a.Matches) == 0 {
					return fmt.Errorf("search %q found nothing", q)
				}
				return nil
			}),
			floor: func(ctx context.Context) error { return fl.run(ctx, argv) },
		}
	}
	diffCheck := func(a answer) error {
		if len(a.Files) != len(c.dirty) {
			return fmt.Errorf("git_diff shows %d files, want %d", len(a.Files), len(c.dirty))
		}
		return nil
	}
	diffFloor := func(ctx context.Context) error { return diffStep.floor(ctx, fl) }
	edited := filepath.Join(c.root, c.dirty[0])
	statusCheck := func(unstaged, untracked int) error {
		if unstaged != len(c.dirty) || untracked != len(c.extra) {
			return fmt.Errorf("git_status shows %d unstaged and %d untracked, want %d and %d", unstaged, untracked, len(c.dirty), len(c.extra))
		}
		return nil
	}
	open := func(ctx context.Context) (*inproc, error) { return openRealHarness(ctx, work, c.root) }
	first := firstTouch(c.root, open, fl, func(out map[string]any) error { return statusCheck(lenOf(out["unstaged"]), lenOf(out["untracked"])) })
	return []realCase{
		{name: RealStatus, harnessd: "git_status through CallOp (in process)", raw: "git status --porcelain=v2 --branch -z",
			call:  viaOp("git_status", map[string]any{"repo_id": repoID}, func(a answer) error { return statusCheck(len(a.Unstaged), len(a.Untracked)) }),
			floor: func(ctx context.Context) error { return statusStep.floor(ctx, fl) }},
		search(RealSearchRare, cfg.rareQuery),
		search(RealSearchCommon, cfg.commonQuery),
		{name: RealDiff, harnessd: "git_diff through CallOp (in process)", raw: "git diff + git diff --numstat (concurrently)",
			call: viaOp("git_diff", map[string]any{"repo_id": repoID}, diffCheck), floor: diffFloor},
		{name: RealDiffAfterEdit, harnessd: "git_diff through CallOp (in process), each call right after a rewrite of " + c.dirty[0],
			raw:  "git diff + git diff --numstat (concurrently), after the same rewrite",
			call: viaOp("git_diff", map[string]any{"repo_id": repoID}, diffCheck), floor: diffFloor,
			edit: func(i int) error {
				b := append(slices.Clip(c.orig[c.dirty[0]]), fmt.Sprintf("\nharnessd bench: edit %d\n", i)...)
				return os.WriteFile(edited, b, c.modes[c.dirty[0]])
			}},
		{name: RealFirstStatus, harnessd: first.harnessd, raw: first.raw, floor: first.floor,
			call: func(ctx context.Context, i int) (sample, string, string, error) {
				smp, err := first.call(ctx, i)
				return smp, "exec", "", err
			}},
	}
}

// measureReal runs rc warmup+iterations times, each harnessd call followed
// by one run of the raw operation; the status case's first call is the
// checkout's first touch (FirstMs), after which the live index is let
// finish its background build.
func measureReal(ctx context.Context, s *inproc, repoID, checkout string, rc realCase, warmup, iterations int) RealResult {
	r := RealResult{Checkout: checkout, Case: rc.name, Harnessd: rc.harnessd, Raw: rc.raw, Sources: map[string]int{}}
	var source, reason string // of the last call
	m := paired{edit: rc.edit, floor: rc.floor,
		call: func(ctx context.Context, i int) (smp sample, err error) {
			smp, source, reason, err = rc.call(ctx, i)
			return smp, err
		},
		each: func(sample) {
			r.Sources[source]++
			if source != "index" && source != "cache" && reason != "" {
				r.Reason = reason
			}
		}}
	if rc.name == RealStatus {
		m.first = func(ctx context.Context) error {
			if err := s.h.WarmLiveIndex(ctx, repoID); err != nil {
				return fmt.Errorf("warm the live index: %v", err)
			}
			return nil
		}
	}
	hs, raws, first, err := m.run(ctx, warmup, iterations)
	r.FirstMs = first
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Iterations = len(hs)
	if r.Iterations > 0 {
		h, raw := round3(Median(hs)), round3(Median(raws))
		r.HarnessdMs, r.RawMs = &h, &raw
		if h > 0 {
			ratio := round3(raw / h)
			r.Ratio = &ratio
		}
	}
	return r
}

// writeReal prints one table per checkout.
func writeReal(w io.Writer, rep *Report) error {
	m := rep.Machine
	fmt.Fprintf(w, "harnessd bench, real checkouts, in process: medians in ms; RATIO = raw / harnessd (above 1: harnessd is faster)\n")
	fmt.Fprintf(w, "machine: %s/%s, %d CPUs, %s, %.1f GiB; %s; commit %s\n",
		m.OS, m.Arch, m.CPUs, m.CPUModel, float64(m.MemTotal)/(1<<30), rep.GoVersion, rep.Commit)
	for _, c := range rep.RealRepos {
		fmt.Fprintf(w, "\n%s: %d files, %.1f MB, %d .gitattributes, %d dirty + %d untracked; %d iterations after %d warmup\n",
			c.Checkout, c.Files, float64(c.Bytes)/1e6, c.Attributes, c.Dirty, c.Untracked, c.Iterations, c.Warmup)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CASE\tHARNESSD\tRAW\tRATIO\tSOURCE\tNOTE")
		for _, r := range rep.Real {
			if r.Checkout != c.Checkout {
				continue
			}
			if r.HarnessdMs == nil {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\n", r.Case, unmeasured(r.Error))
				continue
			}
			ratio := "-"
			if r.Ratio != nil {
				ratio = fmt.Sprintf("%.1fx", *r.Ratio)
			}
			var src []string
			for _, k := range slices.Sorted(maps.Keys(r.Sources)) {
				src = append(src, fmt.Sprintf("%s %d", k, r.Sources[k]))
			}
			note := ""
			if r.FirstMs != nil {
				note = fmt.Sprintf("first call (cold) %s ms = %.2fx raw", f3(*r.FirstMs), *r.FirstMs / *r.RawMs)
			}
			if r.Reason != "" {
				note = strings.TrimSpace(note + " " + oneLine(r.Reason, 100))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Case, f3(*r.HarnessdMs), f3(*r.RawMs), ratio, strings.Join(src, ", "), note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nSOURCE: where harnessd's measured answers came from (index: in process; cache: an earlier answer the watcher proves current; exec: git or rg ran). What each side runs:")
	seen := map[string]bool{}
	for _, r := range rep.Real {
		if !seen[r.Case] {
			seen[r.Case] = true
			fmt.Fprintf(w, "  %-16s harnessd: %s\n  %-16s raw:      %s\n", r.Case, r.Harnessd, "", r.Raw)
		}
	}
	return nil
}
