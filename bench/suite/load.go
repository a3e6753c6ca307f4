package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// LoadReport is the result of a --load run. Times are milliseconds.
type LoadReport struct {
	Surface     string  `json:"surface"`
	Concurrency int     `json:"concurrency"`
	Repos       int     `json:"repos"`
	DurationS   float64 `json:"duration_s"` // requested
	ElapsedS    float64 `json:"elapsed_s"`  // until the last agent stopped
	Ops         int64   `json:"ops"`        // finished operations, failed ones included
	// ThroughputOpsS is Ops / ElapsedS.
	ThroughputOpsS float64            `json:"throughput_ops_s"`
	LatencyMs      LoadLatency        `json:"latency_ms"` // of successful operations
	PerOp          map[string]OpStats `json:"per_op"`
	ErrorsByCode   map[string]int64   `json:"errors_by_code"`
	PeakRSSBytes   int64              `json:"peak_rss_bytes"`
	// RSSSource says whose VmHWM PeakRSSBytes is: "bench process" (inproc)
	// or "daemon pid N".
	RSSSource  string     `json:"rss_source"`
	Goroutines Goroutines `json:"goroutines"`
	// Patches is set when patches were left out of the mix, with the reason.
	Patches string `json:"patches,omitempty"`
}

// LoadLatency are latency percentiles.
type LoadLatency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// OpStats are the figures of one operation under load.
type OpStats struct {
	Count  int64   `json:"count"`
	Errors int64   `json:"errors"`
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
}

// Goroutines are the goroutine counts of the process serving the load
// (this one for inproc, the daemon otherwise) before the agents started
// and after they stopped; Returned reports After <= Before.
type Goroutines struct {
	Before   int  `json:"before"`
	After    int  `json:"after"`
	Returned bool `json:"returned_to_baseline"`
}

// The load mix: weights per operation (patches only when available).
var loadMix = []struct {
	op     string
	weight int
}{
	{"read_file", 40},
	{"search", 20},
	{"git_status", 25},
	{opApplyPatch, 15},
}

const (
	loadCallTimeout = 30 * time.Second
	settleTimeout   = 5 * time.Second
	connectParallel = 8
)

func agentFile(i int) string { return fmt.Sprintf("src/agents/agent-%03d.txt", i) }

func agentText(i int, state string) string {
	return fmt.Sprintf("agent %d private notes\nstate: %s\n", i, state)
}

// loadTarget is what the agents talk to.
type loadTarget struct {
	sessions []surface // one per agent (inproc: the same one)
	// baseline is the serving process's goroutine count before any
	// session connected.
	baseline   int
	goroutines func(context.Context) (int, error)
	// rebaseline, when set, recounts the baseline once the repositories
	// were registered and read (inproc).
	rebaseline    func(context.Context) (int, error)
	rss           func() (int64, string)
	closeSessions func() error // ends the sessions (idempotent)
	close         func() error // ends the sessions and the server
}

// runLoad drives cfg.concurrency agents over cfg.repos fixtures through
// one surface for cfg.duration.
func runLoad(ctx context.Context, cfg config, rep *Report, stderr io.Writer) (err error) {
	name := cfg.surfaces[0]
	work, err := os.MkdirTemp("", "harnessd-bench-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	fixtures := make([]*Fixture, cfg.repos)
	for r := range fixtures {
		extra := map[string]string{}
		for i := r; i < cfg.concurrency; i += cfg.repos {
			extra[agentFile(i)] = agentText(i, "A")
		}
		if fixtures[r], err = NewFixture(ctx, work, extra); err != nil {
			return err
		}
	}
	progressLine(stderr, "load: opening %s for %d agents ...", name, cfg.concurrency)
	roots := make([]string, len(fixtures))
	for r, fx := range fixtures {
		roots[r] = fx.Root
	}
	tgt, err := openLoadTarget(ctx, name, work, cfg, roots)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tgt.close()) }()

	repoIDs := make([]string, cfg.repos)
	for r, fx := range fixtures {
		if repoIDs[r], err = register(ctx, tgt.sessions[0], fx.Root); err != nil {
			return err
		}
	}
	lr := &LoadReport{Surface: name, Concurrency: cfg.concurrency, Repos: cfg.repos, DurationS: cfg.duration.Seconds(),
		PerOp: map[string]OpStats{}, ErrorsByCode: map[string]int64{}}
	patches := tgt.sessions[0].HasOp(opApplyPatch)
	if !patches {
		lr.Patches = "skipped (apply_patch not available)"
	}
	// A checkout's live view (its watcher) starts on first use and stays
	// until the checkout is idle: not a leak. Read every repository once,
	// then count the baseline again.
	for _, id := range repoIDs {
		if _, err := tgt.sessions[0].Call(ctx, "git_status", map[string]any{"repo_id": id}, nil); err != nil {
			return fmt.Errorf("load: read %s: %w", id, err)
		}
		if _, err := tgt.sessions[0].Call(ctx, "search", map[string]any{"repo_id": id, "query": Symbol}, nil); err != nil {
			return fmt.Errorf("load: search %s: %w", id, err)
		}
	}
	if tgt.rebaseline != nil {
		if tgt.baseline, err = tgt.rebaseline(ctx); err != nil {
			return err
		}
	}
	lr.Goroutines.Before = tgt.baseline

	progressLine(stderr, "load: %d agents on %d repos through %s for %s ...", cfg.concurrency, cfg.repos, name, cfg.duration)
	ids := newRequestIDs("load")
	agents := make([]*agent, cfg.concurrency)
	for i := range agents {
		r := i % cfg.repos
		agents[i] = &agent{id: i, s: tgt.sessions[i], repoID: repoIDs[r], fx: fixtures[r], patches: patches, ids: ids,
			rng: rand.New(rand.NewPCG(uint64(i)+1, 0x6861726e657373)), lat: map[string][]float64{}, errs: map[string]int64{}, fails: map[string]int64{}}
	}
	start := time.Now()
	stopAt := start.Add(cfg.duration)
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Go(func() { a.run(ctx, stopAt) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	progressLine(stderr, "%s\r", strings.Repeat(" ", 100))

	lr.ElapsedS = round3(elapsed.Seconds())
	lr.PeakRSSBytes, lr.RSSSource = tgt.rss()
	aggregate(lr, agents)
	if elapsed > 0 {
		lr.ThroughputOpsS = round3(float64(lr.Ops) / elapsed.Seconds())
	}
	// Close the daemon sessions first: the baseline was taken without them.
	closeErr := tgt.closeSessions()
	after, gerr := settledGoroutines(ctx, tgt.goroutines, lr.Goroutines.Before)
	lr.Goroutines.After, lr.Goroutines.Returned = after, gerr == nil && after <= lr.Goroutines.Before
	rep.Load = lr
	if err := errors.Join(closeErr, gerr); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("load run interrupted: %w", ctx.Err())
	}
	if !lr.Goroutines.Returned {
		return fmt.Errorf("goroutines did not return to the baseline: %d before, %d after", lr.Goroutines.Before, lr.Goroutines.After)
	}
	return nil
}

// settledGoroutines polls count until it stops changing (target < 0) or
// falls to target, for up to settleTimeout, and returns the last reading.
func settledGoroutines(ctx context.Context, count func(context.Context) (int, error), target int) (int, error) {
	deadline := time.Now().Add(settleTimeout)
	prev, err := count(ctx)
	if err != nil {
		return 0, err
	}
	stable := 0
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if target >= 0 && prev <= target {
			return prev, nil
		}
		select {
		case <-ctx.Done():
			return prev, ctx.Err()
		case <-tick.C:
		}
		n, err := count(ctx)
		if err != nil {
			return 0, err
		}
		if target < 0 {
			if n == prev {
				if stable++; stable >= 4 {
					return n, nil
				}
			} else {
				stable = 0
			}
		}
		prev = n
	}
	return prev, nil
}

// agent is one simulated agent: it picks operations from loadMix until
// the stop time.
type agent struct {
	id      int
	s       surface
	repoID  string
	fx      *Fixture
	patches bool
	ids     *requestIDs
	rng     *rand.Rand
	stateB  bool // the private file currently says "state: B"

	ops   int64
	lat   map[string][]float64 // successful latencies per op, ms
	errs  map[string]int64     // failures by code
	fails map[string]int64     // failures per op
}

func (a *agent) pick() string {
	total := 0
	for _, m := range loadMix {
		if m.op != opApplyPatch || a.patches {
			total += m.weight
		}
	}
	n := a.rng.IntN(total)
	for _, m := range loadMix {
		if m.op == opApplyPatch && !a.patches {
			continue
		}
		if n < m.weight {
			return m.op
		}
		n -= m.weight
	}
	return loadMix[0].op
}

func (a *agent) args(op string) map[string]any {
	switch op {
	case "read_file":
		p := ReadmePath
		if a.rng.IntN(2) == 0 {
			p = agentFile(a.id)
		}
		return map[string]any{"repo_id": a.repoID, "path": p}
	case "search":
		return map[string]any{"repo_id": a.repoID, "query": Symbol}
	case opApplyPatch:
		oldText, newText := "state: A", "state: B"
		if a.stateB {
			oldText, newText = newText, oldText
		}
		return map[string]any{
			"repo_id":    a.repoID,
			"request_id": a.ids.next(),
			"operations": []map[string]any{{
				"op": "replace", "path": agentFile(a.id), "old_text": oldText, "new_text": newText,
			}},
			"allowed_paths": []string{"src/**"},
		}
	}
	return map[string]any{"repo_id": a.repoID}
}

func (a *agent) run(ctx context.Context, stopAt time.Time) {
	for time.Now().Before(stopAt) && ctx.Err() == nil {
		op := a.pick()
		cctx, cancel := context.WithTimeout(ctx, loadCallTimeout)
		smp, err := a.s.Call(cctx, op, a.args(op), nil)
		cancel()
		a.ops++
		if err != nil {
			if ctx.Err() != nil {
				a.ops-- // interrupted, not a finding
				return
			}
			a.errs[string(errs.CodeOf(err))]++
			a.fails[op]++
			if op == opApplyPatch {
				a.resync()
			}
			continue
		}
		a.lat[op] = append(a.lat[op], ms(smp.wall))
		if op == opApplyPatch {
			a.stateB = !a.stateB
		}
	}
}

// resync reads the private file after a failed patch so the next one
// replaces what is there.
func (a *agent) resync() {
	b, err := os.ReadFile(a.fx.Path(agentFile(a.id)))
	if err == nil {
		a.stateB = strings.Contains(string(b), "state: B")
	}
}

// aggregate merges the agents' figures into lr.
func aggregate(lr *LoadReport, agents []*agent) {
	var all []float64
	perOp := map[string][]float64{}
	for _, a := range agents {
		lr.Ops += a.ops
		for op, l := range a.lat {
			perOp[op] = append(perOp[op], l...)
			all = append(all, l...)
		}
		for code, n := range a.errs {
			lr.ErrorsByCode[code] += n
		}
		for op, n := range a.fails {
			st := lr.PerOp[op]
			st.Errors += n
			st.Count += n
			lr.PerOp[op] = st
		}
	}
	for op, l := range perOp {
		st := lr.PerOp[op]
		st.Count += int64(len(l))
		st.P50, st.P99 = round3(Percentile(l, 50)), round3(Percentile(l, 99))
		lr.PerOp[op] = st
	}
	if len(all) > 0 {
		sort.Float64s(all)
		lr.LatencyMs = LoadLatency{P50: round3(percentileSorted(all, 50)), P99: round3(percentileSorted(all, 99)), Max: round3(all[len(all)-1])}
	}
}

// writeLoad prints a load report for people.
func writeLoad(w io.Writer, rep *Report) error {
	lr := rep.Load
	m := rep.Machine
	fmt.Fprintf(w, "harnessd load: %d agents on %d repos through %s for %.0fs\n", lr.Concurrency, lr.Repos, lr.Surface, lr.DurationS)
	fmt.Fprintf(w, "machine: %s/%s, %d CPUs, %s, %.1f GiB; %s; commit %s\n\n",
		m.OS, m.Arch, m.CPUs, m.CPUModel, float64(m.MemTotal)/(1<<30), rep.GoVersion, rep.Commit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "throughput\t%.1f ops/s (%d ops in %.1fs)\n", lr.ThroughputOpsS, lr.Ops, lr.ElapsedS)
	fmt.Fprintf(tw, "latency\tp50 %.3f ms, p99 %.3f ms, max %.3f ms\n", lr.LatencyMs.P50, lr.LatencyMs.P99, lr.LatencyMs.Max)
	ops := make([]string, 0, len(lr.PerOp))
	for op := range lr.PerOp {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		st := lr.PerOp[op]
		fmt.Fprintf(tw, "  %s\t%d ops, %d errors, p50 %.3f ms, p99 %.3f ms\n", op, st.Count, st.Errors, st.P50, st.P99)
	}
	if lr.Patches != "" {
		fmt.Fprintf(tw, "  %s\t%s\n", opApplyPatch, lr.Patches)
	}
	fmt.Fprintf(tw, "errors\t%s\n", formatCodes(lr.ErrorsByCode))
	fmt.Fprintf(tw, "peak RSS\t%.1f MiB (%s, VmHWM)\n", float64(lr.PeakRSSBytes)/(1<<20), lr.RSSSource)
	ret := "returned to the baseline"
	if !lr.Goroutines.Returned {
		ret = "DID NOT return to the baseline"
	}
	fmt.Fprintf(tw, "goroutines\t%d before, %d after (%s)\n", lr.Goroutines.Before, lr.Goroutines.After, ret)
	return tw.Flush()
}

func formatCodes(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	codes := make([]string, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%s %d", c, m[c])
	}
	return strings.Join(parts, ", ")
}

// openLoadTarget opens one session per agent on the named surface.
func openLoadTarget(ctx context.Context, name, work string, cfg config, roots []string) (*loadTarget, error) {
	if name == SurfaceInproc {
		s, err := openInproc(ctx, work)
		if err != nil {
			return nil, err
		}
		// The Fast Path's pooled confined threads are not a leak.
		count := func(context.Context) (int, error) { return runtime.NumGoroutine() - s.h.SandboxThreads(), nil }
		base, err := settledGoroutines(ctx, count, -1)
		if err != nil {
			return nil, errors.Join(err, s.Close())
		}
		sessions := make([]surface, cfg.concurrency)
		for i := range sessions {
			sessions[i] = s
		}
		return &loadTarget{
			sessions:   sessions,
			baseline:   base,
			goroutines: count,
			rebaseline: func(ctx context.Context) (int, error) { return settledGoroutines(ctx, count, -1) },
			rss: func() (int64, string) {
				n, _ := peakRSS(0)
				return n, "bench process"
			},
			close:         s.Close,
			closeSessions: func() error { return nil },
		}, nil
	}
	ds := &daemons{bin: cfg.harnessd, work: work, stderr: io.Discard}
	d, err := ds.get(ctx)
	if err != nil {
		return nil, err
	}
	tgt := &loadTarget{
		goroutines: d.Goroutines,
		rss: func() (int64, string) {
			n, _ := peakRSS(d.Pid())
			return n, fmt.Sprintf("daemon pid %d", d.Pid())
		},
	}
	tr := httpTransport()
	var once sync.Once
	var closeErr error
	tgt.closeSessions = func() error {
		once.Do(func() {
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, s := range tgt.sessions {
				if s == nil {
					continue
				}
				wg.Go(func() {
					if err := s.Close(); err != nil {
						mu.Lock()
						closeErr = errors.Join(closeErr, err)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			tr.CloseIdleConnections()
		})
		return closeErr
	}
	tgt.close = func() error { return errors.Join(tgt.closeSessions(), ds.close()) }

	// The baseline is the daemon before any agent's session connects, with
	// every repository registered and read once through a session of its
	// own: a checkout's watcher starts on first use and stays until the
	// checkout is idle, which is no leak.
	if err := warmDaemon(ctx, name, d, tr, roots); err != nil {
		return nil, errors.Join(err, tgt.close())
	}
	if tgt.baseline, err = settledGoroutines(ctx, d.Goroutines, -1); err != nil {
		return nil, errors.Join(err, tgt.close())
	}
	tgt.sessions = make([]surface, cfg.concurrency)
	sem := make(chan struct{}, connectParallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var connErr error
	for i := range tgt.sessions {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s, err := connectDaemon(ctx, name, d, tr)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				connErr = errors.Join(connErr, err)
				return
			}
			tgt.sessions[i] = s
		})
	}
	wg.Wait()
	if connErr != nil {
		return nil, errors.Join(connErr, tgt.close())
	}
	return tgt, nil
}

// warmDaemon registers roots with the daemon and reads each once through
// a session of surface name, then closes the session.
func warmDaemon(ctx context.Context, name string, d *daemonProc, tr *http.Transport, roots []string) error {
	s, err := connectDaemon(ctx, name, d, tr)
	if err != nil {
		return err
	}
	for _, root := range roots {
		id, rerr := register(ctx, s, root)
		if rerr == nil {
			_, rerr = s.Call(ctx, "git_status", map[string]any{"repo_id": id}, nil)
		}
		if rerr == nil {
			_, rerr = s.Call(ctx, "search", map[string]any{"repo_id": id, "query": Symbol}, nil)
		}
		if rerr != nil {
			return errors.Join(fmt.Errorf("load: warm %s: %w", root, rerr), s.Close())
		}
	}
	return s.Close()
}

// connectDaemon opens one session of the daemon surface name (a nil
// surface, never a typed nil, with an error).
func connectDaemon(ctx context.Context, name string, d *daemonProc, tr *http.Transport) (surface, error) {
	var s surface
	var err error
	switch name {
	case SurfaceMCPStdio:
		var m *mcpSurface
		if m, err = d.stdio(ctx); err == nil {
			s = m
		}
	case SurfaceMCPStdioRaw:
		var r *rawSurface
		if r, err = d.stdioRaw(ctx); err == nil {
			s = r
		}
	default:
		var m *mcpSurface
		if m, err = d.http(ctx, tr); err == nil {
			s = m
		}
	}
	return s, err
}
