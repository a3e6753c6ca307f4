package compat

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// corpusPath is testdata/corpus.json made absolute before any test runs,
// so no test depends on the process's working directory afterwards.
var corpusPath = "testdata/corpus.json"

func TestMain(m *testing.M) {
	flag.Parse()
	if abs, err := filepath.Abs(corpusPath); err == nil {
		corpusPath = abs
	}
	dir, err := os.MkdirTemp("", "harnessd-compat-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// row is one project of the table, with what its subtest reports.
type row struct {
	p       project
	skipped string
	results []result
	took    time.Duration
	errs    []string // failures of the subtest
	logs    []string
}

func (r *row) errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *row) logf(format string, args ...any) { r.logs = append(r.logs, fmt.Sprintf(format, args...)) }

// TestCorpus runs the benign corpus (package doc). HARNESSD_COMPAT_ONLY
// (comma-separated names) runs some projects; HARNESSD_COMPAT_PARALLEL
// (default 2) bounds how many run at once; HARNESSD_COMPAT_WRITE=1 writes
// docs/compat.md from this run.
func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the benign corpus runs real projects' test suites (minutes): skipped under -short")
	}
	c, err := loadCorpus(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	only := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("HARNESSD_COMPAT_ONLY"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			only[n] = true
		}
	}
	parallel := 2
	if v, err := strconv.Atoi(os.Getenv("HARNESSD_COMPAT_PARALLEL")); err == nil && v > 0 {
		parallel = v
	}
	work := t.TempDir()
	t.Cleanup(func() {
		// Tests of the corpus leave unreadable dirs (doublestar): make
		// everything removable for TempDir's cleanup.
		_ = exec.Command("chmod", "-R", "u+rwx", work).Run()
	})
	start := time.Now()
	// Fetching and installing (network, npm) runs ahead of the projects,
	// slowest first, while harnessd builds and earlier projects run.
	preps := prepareAll(t, c.Projects, only, work)
	if _, err := buildHarnessd(); err != nil {
		t.Fatal(err)
	}
	allowRoot := hasAllowRoot()
	// A pool of workers takes the projects in the manifest's order (Go
	// first: the npm installs finish meanwhile); each project's subtest
	// then reports what its run found.
	rows := make([]*row, len(c.Projects))
	todo := make(chan int)
	deadline, hasDeadline := t.Deadline()
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range todo {
				// Never let go test's -timeout kill the binary mid-project
				// (it would lose every report): a project that cannot
				// finish in time fails by name instead.
				if left := time.Until(deadline); hasDeadline && left < 2*time.Minute {
					rows[i].errorf("%s: not run: %s left before go test's -timeout; the corpus took %s so far on this machine", rows[i].p.Name, left.Round(time.Second), time.Since(start).Round(time.Second))
					continue
				}
				runProject(rows[i], preps[i], filepath.Join(work, rows[i].p.Name), allowRoot)
			}
		}()
	}
	for i, p := range c.Projects {
		if preps[i] != nil {
			rows[i] = &row{p: p}
			todo <- i
		}
	}
	close(todo)
	wg.Wait()
	for _, r := range rows {
		if r == nil {
			continue
		}
		t.Run(r.p.Name, func(t *testing.T) {
			for _, l := range r.logs {
				t.Log(l)
			}
			if r.skipped != "" {
				t.Skip(r.skipped)
			}
			for _, e := range r.errs {
				t.Error(e)
			}
		})
	}
	identical, total, redactions := 0, 0, 0
	for _, r := range rows {
		if r == nil {
			continue
		}
		for _, res := range r.results {
			total++
			if res.identical {
				identical++
			}
			redactions += res.redactions
		}
	}
	took := time.Since(start).Round(time.Second)
	t.Logf("benign corpus: %d / %d identical, %d spurious redactions, in %s", identical, total, redactions, took)
	if os.Getenv("HARNESSD_COMPAT_WRITE") == "1" {
		if len(only) > 0 {
			t.Fatal("HARNESSD_COMPAT_WRITE=1 with HARNESSD_COMPAT_ONLY: the table is written from a run of the whole corpus only")
		}
		if err := os.WriteFile("../../docs/compat.md", []byte(renderTable(c, rows, took, parallel)), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote docs/compat.md")
	}
}

// prepared is one project's pristine copy, once fetched.
type prepared struct {
	done chan struct{}
	src  string
	err  error
	took time.Duration
}

// prepareAll starts fetching every selected project, npm packages (whose
// installs take longest) first, four at a time.
func prepareAll(t *testing.T, ps []project, only map[string]bool, work string) []*prepared {
	preps := make([]*prepared, len(ps))
	var order []int
	for _, kind := range []string{"npm", "go"} {
		for i, p := range ps {
			if p.Kind == kind && (len(only) == 0 || only[p.Name]) {
				preps[i] = &prepared{done: make(chan struct{})}
				order = append(order, i)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	sem := make(chan struct{}, 4)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, i := range order {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				preps[i].err = ctx.Err()
				close(preps[i].done)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				start := time.Now()
				preps[i].src, preps[i].err = prepare(ctx, ps[i], filepath.Join(work, ps[i].Name))
				preps[i].took = time.Since(start)
				close(preps[i].done)
			}()
		}
	}()
	return preps
}

// runProject takes one prepared project, runs every action both ways and
// checks the results against the manifest's exceptions.
func runProject(r *row, prep *prepared, dir string, allowRoot bool) {
	p := r.p
	start := time.Now()
	defer func() { r.took = time.Since(start) }()
	ctx, cancel := withTimeout(10 * time.Minute)
	defer cancel()
	<-prep.done
	src, err := prep.src, prep.err
	if err != nil {
		if errors.Is(err, errUnreachable) && os.Getenv("CI") == "" {
			r.skipped = fmt.Sprintf("not fetched (CI=true makes this a failure): %v", err)
			return
		}
		r.errorf("prepare %s: %v", p.Name, err)
		return
	}
	r.logf("%s: prepared in %s, waited %s for it", p.Name, prep.took.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	direct, err := copyTree(ctx, src, filepath.Join(dir, "direct", p.Name))
	if err != nil {
		r.errorf("%v", err)
		return
	}
	through, err := copyTree(ctx, src, filepath.Join(dir, "mcp", p.Name))
	if err != nil {
		r.errorf("%v", err)
		return
	}
	files, err := trackedFiles(ctx, direct)
	if err != nil {
		r.errorf("%v", err)
		return
	}
	// A short data dir: its unix sockets must fit in sun_path.
	dataDir, err := os.MkdirTemp("", "hcd")
	if err != nil {
		r.errorf("%v", err)
		return
	}
	defer os.RemoveAll(dataDir)
	// A person grants the corpus's directory as an allowed area
	// (DESIGN §13): the one option every row needs.
	args := p.DaemonArgs
	if allowRoot {
		args = append([]string{"--allow-root", filepath.Dir(through)}, args...)
		if err := writePolicy(dataDir, p, through); err != nil {
			r.errorf("%v", err)
			return
		}
	}
	h, err := startHarnessd(dataDir, daemonEnv(), args...)
	if err != nil {
		r.errorf("%v", err)
		return
	}
	defer h.stop()
	e := &env{p: p, h: h, direct: direct, through: through, files: files}
	reg := h.call(time.Minute, "repository_register", map[string]any{"path": through})
	for _, a := range actions {
		if !a.applies(p) {
			continue
		}
		if _, err := exec.LookPath(a.needs); a.needs != "" && err != nil {
			if os.Getenv("CI") != "" {
				r.errorf("%s × %s: %s is not installed (.ci/run installs it)", p.Name, a.id, a.needs)
			} else {
				r.logf("%s × %s: not run: %s is not installed (CI=true makes this a failure)", p.Name, a.id, a.needs)
			}
			continue
		}
		var res result
		if reg.isErr {
			res = result{reason: "repository_register: " + reg.errText()}
			if strings.Contains(reg.errText(), "allow-root") || reg.code == "APPROVAL_REQUIRED" {
				res.reason = "needs --allow-root (a person's grant); " + res.reason
			}
		} else {
			e.repoID = reg.str("repo_id")
			t0 := time.Now()
			res = a.run(e)
			if !res.identical && a.retry && res.direct != "" {
				// A test suite's own flaky test (timing under load) must
				// not decide: run both sides once more.
				again := a.run(e)
				if again.identical {
					again.detail = strings.TrimPrefix(again.detail+"; flaky: a first run differed: "+res.reason, "; ")
					res = again
				} else {
					res.reason += " (the same on a second run)"
				}
			}
			res.took = time.Since(t0)
		}
		res.action = a.id
		r.results = append(r.results, res)
		if !res.identical && os.Getenv("HARNESSD_COMPAT_DEBUG") == "1" && res.direct != "" {
			r.logf("%s × %s directly:\n%s\nthrough harnessd:\n%s", p.Name, a.id, res.direct, res.through)
		}
		listed, ok := p.Exceptions[a.id]
		_, varies := p.Varies[a.id]
		switch {
		case varies:
		case !res.identical && !ok:
			r.errorf("%s × %s differs and is not a listed exception: %s\n\tif that is the state today, list it in testdata/corpus.json: %q: %q", p.Name, a.id, res.reason, a.id, res.reason)
		case res.identical && ok:
			r.errorf("%s × %s is identical now: remove the exception %q (%s) from testdata/corpus.json", p.Name, a.id, a.id, listed)
		}
	}
	var took []string
	for _, res := range r.results {
		x := ""
		if res.action == "suite" || strings.HasPrefix(res.action, "check") || strings.HasPrefix(res.action, "live-") || strings.HasPrefix(res.action, "edit-") {
			x = " (" + res.detail + ")"
		}
		took = append(took, fmt.Sprintf("%s %.1fs%s", res.action, res.took.Seconds(), x))
	}
	r.logf("%s: %s in all; %s", p.Name, time.Since(start).Round(100*time.Millisecond), strings.Join(took, ", "))
	for _, m := range []map[string]string{p.Exceptions, p.Varies} {
		for a := range m {
			found := false
			for _, res := range r.results {
				found = found || res.action == a
			}
			if !found {
				r.errorf("%s: exception for %q, an action this kind of project does not run", p.Name, a)
			}
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
