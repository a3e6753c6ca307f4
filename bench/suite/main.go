package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
)

// Exit codes of Main.
const (
	ExitOK      = 0 // every case ran (or was skipped for a stated reason)
	ExitFailed  = 1 // a case, a surface or the load run failed
	ExitUsage   = 2 // bad flags
	maxIters    = 1_000_000
	maxConc     = 4096
	maxRepos    = 256
	maxDuration = 24 * time.Hour
)

// config is the parsed command line.
type config struct {
	surfaces    []string
	cases       []string
	warmup      int
	iterations  int
	json        bool
	harnessd    string
	forge       string // --forge: Forge's bin/forge.mjs
	fsServer    string // --fs-server: server-filesystem's dist/index.js
	load        bool
	concurrency int
	duration    time.Duration
	repos       int
	// The generated-repository mode (--files).
	files         []int
	seed          uint64
	keep          bool
	memProfile    string // --memprofile: a heap profile per size
	warmupSet     bool
	iterationsSet bool
	// The real-checkout mode (--real).
	real         string
	realWorktree bool
	rareQuery    string
	commonQuery  string
}

const usageHead = `Usage: go run ./bench [flags]     (also: harness bench [flags])

Measures everyday agent operations through harnessd's surfaces and holds
each against the raw operation it wraps. With --load, drives many
simulated agents through one surface instead. With --files, generates
repositories of those sizes and measures git_status, symbol_search,
git_diff and check_identity on each (status and search also right after
an edit), in process, against git and rg run on the same tree. With
--real DIR, measures status, a rare and a common search, diff and diff
after an edit on the repository DIR as it is ("goroot": a copy of the Go
toolchain's source committed as is) and on a linked worktree of it, in
process, against git and rg run on the same tree.

Flags:
`

// parseFlags parses args. It returns pflag.ErrHelp for -h.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
	}
	fs.StringSliceVar(&c.surfaces, "surfaces", AllSurfaces, "surfaces to measure: "+strings.Join(AllSurfaces, ",")+", opt-in "+strings.Join(OptInSurfaces, ",")+" (--load: one surface, default inproc)")
	fs.StringSliceVar(&c.cases, "cases", Cases(), "cases to run")
	fs.IntVar(&c.warmup, "warmup", 20, "unmeasured iterations per case and surface")
	fs.IntVar(&c.iterations, "iterations", 200, "measured iterations per case and surface")
	fs.BoolVar(&c.json, "json", false, "print the schema_version 1 JSON report instead of a table")
	fs.StringVar(&c.harnessd, "harnessd", "", "harnessd binary for the daemon surfaces (default: go build ./cmd/harnessd)")
	fs.StringVar(&c.forge, "forge", "", "Forge's bin/forge.mjs for forge-mcp-stdio-raw (default $FORGE_MJS, else the install of ../shared/peers/forge-thin-harness-bench.sh under $PEER_DIR or /tmp/peer)")
	fs.StringVar(&c.fsServer, "fs-server", "", "@modelcontextprotocol/server-filesystem's dist/index.js for fs-mcp-stdio-raw (default $FS_MCP_JS, else the bench's install under $PEER_DIR or /tmp/peer, made with npm install by name when missing)")
	fs.BoolVar(&c.load, "load", false, "load mode: many agents, one surface, for --duration")
	fs.IntVar(&c.concurrency, "concurrency", 64, "load: simulated agents")
	fs.DurationVar(&c.duration, "duration", 30*time.Second, "load: how long to run")
	fs.IntVar(&c.repos, "repos", 4, "load: fixture repositories the agents share")
	fs.IntSliceVar(&c.files, "files", nil, "scale: generate repositories of these many files (e.g. 100,10000,100000) and measure each in process")
	fs.Uint64Var(&c.seed, "seed", DefaultSeed, "scale: seed of the generated repositories")
	fs.StringVar(&c.memProfile, "memprofile", "", "scale: after each size's cases, write a heap profile (in use after a GC) to FILE-<files>.pprof and the Go runtime's memory figures to stderr")
	fs.BoolVar(&c.keep, "keep", false, "scale, real: keep the generated repositories or scratch dir (their path is printed on stderr)")
	fs.StringVar(&c.real, "real", "", "real: measure the live index on the git repository DIR (goroot: a copy of $(go env GOROOT)/src committed in a temp dir); it edits "+fmt.Sprint(realDirty)+" tracked files and adds 2 untracked ones, and restores them")
	fs.BoolVar(&c.realWorktree, "real-worktree", true, "real: also measure a linked worktree of DIR")
	fs.StringVar(&c.rareQuery, "real-rare", DefaultRareQuery, "real: the rare symbol searched")
	fs.StringVar(&c.commonQuery, "real-common", DefaultCommonQuery, "real: the common symbol searched")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if (c.load || len(c.files) > 0 || c.real != "") && !fs.Changed("surfaces") {
		c.surfaces = []string{SurfaceInproc}
	}
	if len(c.files) > 0 && !fs.Changed("cases") {
		c.cases = ScaleCases()
	}
	if c.real != "" && !fs.Changed("cases") {
		c.cases = RealCases()
	}
	c.warmupSet, c.iterationsSet = fs.Changed("warmup"), fs.Changed("iterations")
	if fs.Changed("files") && len(c.files) == 0 {
		return c, errors.New("--files is empty")
	}
	return c, c.validate()
}

func (c *config) validate() error {
	c.surfaces = dedupe(c.surfaces)
	c.cases = dedupe(c.cases)
	if len(c.surfaces) == 0 {
		return errors.New("--surfaces is empty")
	}
	for _, s := range c.surfaces {
		if !slices.Contains(AllSurfaces, s) && !slices.Contains(OptInSurfaces, s) {
			return fmt.Errorf("--surfaces: unknown surface %q (known: %s)", s, strings.Join(append(slices.Clone(AllSurfaces), OptInSurfaces...), ", "))
		}
	}
	if c.forge != "" && !fileExists(c.forge) {
		return fmt.Errorf("--forge %q is not a file (Forge's bin/forge.mjs)", c.forge)
	}
	if c.fsServer != "" && !fileExists(c.fsServer) {
		return fmt.Errorf("--fs-server %q is not a file (server-filesystem's dist/index.js)", c.fsServer)
	}
	for _, peer := range []string{SurfaceForgeMCPStdioRaw, SurfaceFSMCPStdioRaw} {
		if c.load && slices.Contains(c.surfaces, peer) {
			return fmt.Errorf("--load does not drive %s; compare it in the suite (no --load)", peer)
		}
	}
	if c.harnessd != "" {
		if st, err := os.Stat(c.harnessd); err != nil || st.IsDir() {
			return fmt.Errorf("--harnessd %q is not a file", c.harnessd)
		}
	}
	if c.load && len(c.files) > 0 || c.real != "" && (c.load || len(c.files) > 0) {
		return errors.New("--files, --load and --real are separate modes: give one")
	}
	if c.load {
		if len(c.surfaces) != 1 {
			return fmt.Errorf("--load runs through one surface; got --surfaces %s", strings.Join(c.surfaces, ","))
		}
		switch {
		case c.concurrency < 1 || c.concurrency > maxConc:
			return fmt.Errorf("--concurrency %d is outside 1..%d", c.concurrency, maxConc)
		case c.repos < 1 || c.repos > maxRepos:
			return fmt.Errorf("--repos %d is outside 1..%d", c.repos, maxRepos)
		case c.duration <= 0 || c.duration > maxDuration:
			return fmt.Errorf("--duration %s is outside (0, %s]", c.duration, maxDuration)
		}
		return nil
	}
	if len(c.cases) == 0 {
		return errors.New("--cases is empty")
	}
	known := Cases()
	if len(c.files) > 0 {
		if len(c.surfaces) != 1 || c.surfaces[0] != SurfaceInproc {
			return fmt.Errorf("--files measures in process only; got --surfaces %s (use --surfaces inproc)", strings.Join(c.surfaces, ","))
		}
		for _, n := range c.files {
			if n < MinGenFiles || n > MaxGenFiles {
				return fmt.Errorf("--files %d is outside %d..%d", n, MinGenFiles, MaxGenFiles)
			}
		}
		c.files = dedupeInts(c.files)
		known = ScaleCases()
	}
	if c.real != "" {
		if len(c.surfaces) != 1 || c.surfaces[0] != SurfaceInproc {
			return fmt.Errorf("--real measures in process only; got --surfaces %s (use --surfaces inproc)", strings.Join(c.surfaces, ","))
		}
		if c.rareQuery == "" || c.commonQuery == "" {
			return errors.New("--real-rare and --real-common must not be empty")
		}
		known = RealCases()
	}
	for _, k := range c.cases {
		if !slices.Contains(known, k) {
			return fmt.Errorf("--cases: unknown case %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	if c.iterations < 1 || c.iterations > maxIters {
		return fmt.Errorf("--iterations %d is outside 1..%d", c.iterations, maxIters)
	}
	if c.warmup < 0 || c.warmup > maxIters {
		return fmt.Errorf("--warmup %d is outside 0..%d", c.warmup, maxIters)
	}
	return nil
}

func dedupeInts(xs []int) []int {
	var out []int
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		x = strings.TrimSpace(x)
		if x != "" && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// Main runs the bench suite with command-line args, printing the report
// on stdout and progress and errors on stderr, and returns the exit code
// (ExitOK, ExitFailed or ExitUsage). SIGINT and SIGTERM stop it cleanly.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return MainContext(ctx, args, stdout, stderr)
}

// MainContext is Main without signal handling: ctx ends the run.
func MainContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return ExitUsage
	}
	rep := &Report{
		SchemaVersion: SchemaVersion,
		Machine:       machineInfo(),
		GoVersion:     runtime.Version(),
		Commit:        commitOf(ctx),
		StartedAt:     time.Now().UTC().Truncate(time.Millisecond),
		Settings:      Settings{Surfaces: cfg.surfaces},
	}
	var runErr error
	switch {
	case cfg.load:
		runErr = runLoad(ctx, cfg, rep, stderr)
	case len(cfg.files) > 0:
		rep.Settings.Cases, rep.Settings.Files, rep.Settings.Seed = cfg.cases, cfg.files, cfg.seed
		runErr = runScale(ctx, cfg, rep, stderr)
	case cfg.real != "":
		rep.Settings.Cases, rep.Settings.Real, rep.Settings.Queries = cfg.cases, cfg.real, []string{cfg.rareQuery, cfg.commonQuery}
		runErr = runReal(ctx, cfg, rep, stderr)
	default:
		rep.Settings.Warmup, rep.Settings.Iterations, rep.Settings.Cases = cfg.warmup, cfg.iterations, cfg.cases
		runErr = runSuite(ctx, cfg, rep, stderr)
	}
	if len(rep.Results) > 0 || rep.Load != nil || len(rep.Scale) > 0 || len(rep.Real) > 0 {
		var werr error
		switch {
		case cfg.json:
			werr = writeJSON(stdout, rep)
		case len(cfg.files) > 0:
			werr = writeScale(stdout, rep)
		case cfg.real != "":
			werr = writeReal(stdout, rep)
		case cfg.load:
			werr = writeLoad(stdout, rep)
		default:
			werr = writeTable(stdout, rep)
		}
		if werr != nil {
			runErr = errors.Join(runErr, fmt.Errorf("write report: %w", werr))
		}
	}
	if runErr != nil {
		fmt.Fprintln(stderr, "bench:", runErr)
		return ExitFailed
	}
	return ExitOK
}
