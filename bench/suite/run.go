package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// callTimeout bounds one iteration of a case.
const callTimeout = time.Minute

// progress prints "\r[3/24] mcp-stdio git_status ..." lines on stderr,
// only when stderr is a terminal that wants it (see drawProgress): never
// "\r" into a file or pipe.
type progress struct {
	w     io.Writer
	total int
	done  int
	width int
	off   bool
}

// drawProgress reports whether w is a terminal to draw progress on: not
// with NO_COLOR set or TERM=dumb, never into a file or pipe.
func drawProgress(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS) // a terminal, not merely a character device like /dev/null
	return err == nil
}

// progressLine draws a one-line status on a progress terminal (nothing elsewhere).
func progressLine(w io.Writer, format string, args ...any) {
	if drawProgress(w) {
		fmt.Fprintf(w, "\r"+format, args...)
	}
}

func (p *progress) show(surface, name string) {
	if p.off {
		return
	}
	p.done++
	line := fmt.Sprintf("[%d/%d] %s %s ...", p.done, p.total, surface, name)
	pad := max(0, p.width-len(line))
	p.width = max(p.width, len(line))
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
}

func (p *progress) clear() {
	if !p.off && p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}

// daemons starts at most one harnessd daemon for the daemon surfaces and
// stops it in close.
type daemons struct {
	bin     string // --harnessd, or built on first use
	work    string
	stderr  io.Writer
	once    sync.Once
	d       *daemonProc
	err     error
	skipWhy string        // set when no binary can be had: the surfaces are skipped
	forge   *forgeInstall // the Forge of forge-mcp-stdio-raw (forge.go), when asked for
	fs      *fsInstall    // the server-filesystem of fs-mcp-stdio-raw (fsmcp.go), when asked for
}

func (ds *daemons) get(ctx context.Context) (*daemonProc, error) {
	ds.once.Do(func() {
		if ds.bin == "" {
			if _, err := moduleRoot(); err != nil {
				ds.skipWhy = errNoDaemon.Error() + ": " + err.Error()
				ds.err = fmt.Errorf("%w: %v", errNoDaemon, err)
				return
			}
			progressLine(ds.stderr, "building harnessd ...")
			ds.bin, ds.err = buildHarnessd(ctx, ds.work)
			progressLine(ds.stderr, "                    \r")
			if ds.err != nil {
				return
			}
		}
		dataDir, err := os.MkdirTemp(ds.work, "harnessd-bench-daemon-")
		if err != nil {
			ds.err = err
			return
		}
		// The bench's fixtures live in its work dir: an allowed area, so
		// the agents' surfaces register them as an agent would, unasked.
		ds.d, ds.err = startDaemon(ctx, ds.bin, dataDir, "--allow-root", ds.work)
	})
	return ds.d, ds.err
}

func (ds *daemons) close() error {
	if ds.d == nil {
		return nil
	}
	return ds.d.Stop()
}

// openSurface opens the named surface.
func openSurface(ctx context.Context, name, work string, ds *daemons) (surface, error) {
	switch name {
	case SurfaceInproc:
		return openInproc(ctx, work)
	case SurfaceMCPStdio:
		d, err := ds.get(ctx)
		if err != nil {
			return nil, err
		}
		return d.stdio(ctx)
	case SurfaceMCPStdioRaw:
		d, err := ds.get(ctx)
		if err != nil {
			return nil, err
		}
		return d.stdioRaw(ctx)
	case SurfaceForgeMCPStdioRaw:
		f, err := openForge(ctx, ds.forge, work)
		if err != nil {
			return nil, err // never a typed nil
		}
		return f, nil
	case SurfaceFSMCPStdioRaw:
		f, err := openFS(ds.fs)
		if err != nil {
			return nil, err // never a typed nil
		}
		return f, nil
	case SurfaceMCPHTTP:
		d, err := ds.get(ctx)
		if err != nil {
			return nil, err
		}
		tr := httpTransport()
		s, err := d.http(ctx, tr)
		if err != nil {
			tr.CloseIdleConnections()
			return nil, err
		}
		s.after = tr.CloseIdleConnections
		return s, nil
	}
	return nil, fmt.Errorf("unknown surface %q", name)
}

// runSuite runs the selected cases through the selected surfaces.
func runSuite(ctx context.Context, cfg config, rep *Report, stderr io.Writer) error {
	work, err := os.MkdirTemp("", "harnessd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	fx, err := NewFixture(ctx, work, nil)
	if err != nil {
		return err
	}
	fl, err := newFloors(fx, work)
	if err != nil {
		return err
	}
	rep.Settings.SearchFloor = fl.searchTool()
	var cases []caseDef
	for _, c := range allCases() {
		if slices.Contains(cfg.cases, c.name) {
			cases = append(cases, c)
		}
	}
	ds := &daemons{bin: cfg.harnessd, work: work, stderr: stderr}
	if slices.Contains(cfg.surfaces, SurfaceForgeMCPStdioRaw) {
		if ds.forge = locateForge(cfg.forge); ds.forge.skip == "" {
			rep.Settings.Forge = &ds.forge.info
		}
	}
	if slices.Contains(cfg.surfaces, SurfaceFSMCPStdioRaw) {
		if ds.fs = locateFS(ctx, cfg.fsServer, stderr); ds.fs.skip == "" {
			rep.Settings.FS = &ds.fs.info
		}
	}
	prog := &progress{w: stderr, total: len(cfg.surfaces) * len(cases), off: !drawProgress(stderr)}
	defer prog.clear()
	var errList []error
	for _, name := range cfg.surfaces {
		if ctx.Err() != nil {
			break
		}
		res, err := runSurface(ctx, name, work, ds, fx, fl, cases, cfg, prog)
		rep.Results = append(rep.Results, res...)
		errList = append(errList, err)
	}
	errList = append(errList, ds.close(), fx.Restore())
	rep.SideBySide = sideBySide(rep.Results)
	return errors.Join(errList...)
}

// runSurface runs every case through one surface. A surface that cannot
// be opened gives each case an error (or skip) result.
func runSurface(ctx context.Context, name, work string, ds *daemons, fx *Fixture, fl *floors, cases []caseDef, cfg config, prog *progress) ([]Result, error) {
	var out []Result
	s, err := openSurface(ctx, name, work, ds)
	var repoID string
	if err == nil {
		repoID, err = register(ctx, s, fx.Root)
	}
	if err != nil {
		skipWhy := ds.skipWhy
		if name == SurfaceInproc || name == SurfaceForgeMCPStdioRaw || name == SurfaceFSMCPStdioRaw {
			skipWhy = "" // not the daemon's
		}
		var skip skipSurface
		if errors.As(err, &skip) {
			skipWhy = skip.why
		}
		for _, c := range cases {
			prog.show(name, c.name)
			r := Result{Case: c.name, Surface: name, Floor: c.floorName(fl)}
			if skipWhy != "" {
				r.Skipped = skipWhy
			} else {
				r.Error = fmt.Sprintf("surface %s: %v", name, err)
			}
			out = append(out, r)
		}
		if s != nil {
			_ = s.Close()
		}
		if skipWhy != "" {
			return out, nil
		}
		return out, fmt.Errorf("surface %s: %w", name, err)
	}
	ids := newRequestIDs(name)
	var errList []error
	for _, c := range cases {
		if ctx.Err() != nil {
			break
		}
		prog.show(name, c.name)
		r := runCase(ctx, s, repoID, c, fx, fl, ids, cfg.warmup, cfg.iterations)
		if r.Error != "" {
			errList = append(errList, fmt.Errorf("%s %s: %s", name, c.name, r.Error))
		}
		out = append(out, r)
	}
	if err := s.Close(); err != nil {
		errList = append(errList, fmt.Errorf("close %s: %w", name, err))
	}
	return out, errors.Join(errList...)
}

// runCase measures c through s: warmup+iterations iterations, each
// followed by one run of its floor.
func runCase(ctx context.Context, s surface, repoID string, c caseDef, fx *Fixture, fl *floors, ids *requestIDs, warmup, iterations int) Result {
	r := Result{Case: c.name, Surface: s.Name(), Floor: c.floorName(fl)}
	// A peer's missing equivalent first: its reason names the peer.
	if why := noEquivalent(s, c); why != "" {
		r.Skipped = why
		return r
	}
	if c.requires != "" && !s.HasOp(c.requires) {
		r.Skipped = c.requires + " not available"
		return r
	}
	r.Calls = c.calls(s)
	fail := func(format string, args ...any) Result {
		r.Error = fmt.Sprintf(format, args...)
		return r
	}
	if err := fx.Restore(); err != nil {
		return fail("restore the fixture: %v", err)
	}
	defer fx.Restore()
	if c.dirty {
		if err := fx.Dirty(); err != nil {
			return fail("dirty the fixture: %v", err)
		}
	}
	smps := make([]sample, 0, iterations)
	floorsMs := make([]float64, 0, iterations)
	for n := 0; n < warmup+iterations; n++ {
		if err := ctx.Err(); err != nil {
			return fail("interrupted: %v", err)
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		smp, err := c.iterate(cctx, s, iter{repoID: repoID, n: n, request: ids.next})
		cancel()
		if err != nil {
			return fail("iteration %d: %v", n, err)
		}
		fd, err := c.floor(ctx, fl)
		if err != nil {
			return fail("iteration %d: %v", n, err)
		}
		if n >= warmup {
			smps = append(smps, smp)
			floorsMs = append(floorsMs, ms(fd))
		}
	}
	r.summarize(smps, floorsMs)
	return r
}
