// Command harnessd is the harnessd daemon: `harnessd serve` runs it on a data
// dir, `harnessd mcp` speaks MCP over stdio and bridges to the daemon
// (starting one if none answers), `harnessd stop` stops the daemon of a data
// dir, `harnessd version` prints the version.
//
// Exit codes: 0 ok, 1 failure, 2 usage error, 3 (stop) no daemon running.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/logx"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/surfaces/daemon"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

const usage = `harnessd mediates AI coding agents' work on git repositories.

Usage:
  harnessd serve [flags]    run the daemon on a data dir
  harnessd mcp [flags]      MCP over stdio, bridged to the daemon (started if needed)
  harnessd stop [flags]     stop the daemon of a data dir gracefully and wait until it is gone
  harnessd version          print the version, commit and Go version (also --version)

Run 'harnessd <command> --help' for the flags of a command.
Exit codes: 0 ok, 1 failure, 2 usage error, 3 (stop) no daemon running.
`

func main() {
	// First: when harnessd is re-executed as the sandbox's launcher, this
	// confines the process and runs the command, and never returns.
	sandbox.Main()
	os.Exit(exitCode(run(os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

// usageError is a usage mistake; cmd names the command for the hint.
type usageError struct {
	error
	cmd string
}

// notRunning is `harnessd stop` finding no daemon: exit 3.
type notRunning struct{ error }

// exitCode prints err (one line, and a hint for usage errors) and returns
// the exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ue usageError
	var nr notRunning
	switch {
	case errors.As(err, &ue):
		hint := "run 'harnessd --help' for the usage"
		if ue.cmd != "" {
			hint = fmt.Sprintf("run 'harnessd %s --help' for the usage", ue.cmd)
		}
		fmt.Fprintf(stderr, "harnessd: %v\n%s\n", ue.error, hint)
		return 2
	case errors.As(err, &nr):
		fmt.Fprintln(stderr, "harnessd:", err)
		return 3
	}
	fmt.Fprintln(stderr, "harnessd:", err)
	return 1
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return usageError{error: errors.New("no command")}
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "mcp":
		return mcpBridge(args[1:], stdout, stderr)
	case "stop":
		return stopCmd(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		if len(args) > 1 && !(len(args) == 2 && (args[1] == "--help" || args[1] == "-h")) {
			return usageError{error: fmt.Errorf("unexpected arguments: %q", args[1:]), cmd: "version"}
		}
		printVersion(stdout)
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usageError{error: fmt.Errorf("unknown command %q", args[0])}
}

// printVersion prints "harnessd VERSION (commit C, GO)".
func printVersion(w io.Writer) {
	commit, modified := "unknown", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if modified {
		commit += ", modified"
	}
	fmt.Fprintf(w, "harnessd %s (commit %s, %s)\n", harness.VersionString(), commit, runtime.Version())
}

type commonFlags struct {
	dataDir, logLevel, logFormat string
}

func (c *commonFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", harness.DefaultDataDir(), "data `directory` (env HARNESSD_DATA_DIR)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.StringVar(&c.logFormat, "log-format", "console", "log `format`: json or console")
}

// errHelped is returned by parse after it printed a command's help: the
// command exits 0 without running.
var errHelped = errors.New("help printed")

// newFlagSet is a flag set whose --help prints to stdout and whose errors
// are returned, never printed.
func newFlagSet(name, synopsis string, stdout io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("harnessd "+name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage:\n  harnessd %s [flags]\n\n%s\n\nFlags:\n%s", name, synopsis, fs.FlagUsages())
	}
	return fs
}

func parse(fs *pflag.FlagSet, args []string) error {
	cmd := strings.TrimPrefix(fs.Name(), "harnessd ")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelped // pflag printed fs.Usage
		}
		return usageError{error: err, cmd: cmd}
	}
	if fs.NArg() > 0 {
		return usageError{error: fmt.Errorf("unexpected arguments: %q", fs.Args()), cmd: cmd}
	}
	return nil
}

func serve(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "Runs the daemon on a data dir in the foreground; SIGINT or SIGTERM (harnessd stop) shut it down gracefully, SIGHUP reloads the policy.", stdout)
	var cf commonFlags
	cf.register(fs)
	listen := fs.String("listen", "", "also listen on loopback TCP `address`, e.g. 127.0.0.1:7411 (bearer token in <data-dir>/token)")
	wait := fs.Duration("shutdown-wait", 10*time.Second, "how long shutdown waits for running operations; past it and 5s more, what is left is abandoned and the daemon exits non-zero")
	sessionIdle := fs.Duration("session-idle", daemon.DefaultSessionIdle, "close a streamable-HTTP MCP session after this long without a request (the client initializes again)")
	loops := fs.Int("loop-threshold", 3, "identical results of the same input before LOOP_DETECTED (0 = loop detection off)")
	policyPath := fs.String("policy", "", "policy `file` (default <data-dir>/policy.yaml; reload with SIGHUP or 'harness policy reload')")
	sbMode := fs.String("sandbox", "auto", "confinement of the processes harnessd starts: require (refuse to start commands without Landlock), auto, off")
	otlp := fs.String("otlp-endpoint", "", "export run spans over OTLP/HTTP to this collector `url`, e.g. http://127.0.0.1:4318 (default off)")
	noLiveIndex := fs.Bool("no-live-index", false, "keep no live index of checkouts (no inotify watches): git_status, search and git_diff run git or rg on every call")
	watchInstances := fs.Int("watch-instances", 0, "checkouts the live index watches at once, each with one of your inotify instances (0 = a quarter of fs.inotify.max_user_instances; -1 = no cap); the least recently used beyond it is answered by git until used again")
	noClientApprovals := fs.Bool("no-client-approvals", false, "never ask an MCP client's person to decide an approval (elicitation); approvals only through harness approve, the HTTP API and the console")
	reserveText := fs.String("store-reserve", "auto", "free space kept on the data dir's file system; writes that would leave less answer STORAGE_FULL (auto = 1/16 of it, 1-64 MiB; e.g. 256MiB; off)")
	var fl fleetFlags
	fl.register(fs)
	allowRoots := fs.StringArray("allow-root", nil, "an allowed area `DIR` (repeatable): agents may register repositories and targets inside it without asking a person; elsewhere a person approves each (see docs/authority.md)")
	if err := parse(fs, args); err != nil {
		return helpedOK(err)
	}
	for i, d := range *allowRoots {
		if !filepath.IsAbs(d) {
			abs, err := filepath.Abs(d)
			if err != nil {
				return usageError{error: fmt.Errorf("--allow-root %q: %v", d, err), cmd: "serve"}
			}
			(*allowRoots)[i] = abs // a person's shell: relative to where they are
		}
	}
	reserve, err := parseReserve(*reserveText)
	if err != nil {
		return usageError{error: err, cmd: "serve"}
	}
	if _, err := sandbox.ParseMode(*sbMode); err != nil {
		return usageError{error: err, cmd: "serve"}
	}
	fleetCfg, err := fl.config(cf.dataDir, *listen)
	if err != nil {
		return usageError{error: err, cmd: "serve"}
	}
	lg, err := logx.New(cf.logLevel, cf.logFormat, stderr)
	if err != nil {
		return usageError{error: err, cmd: "serve"}
	}
	defer lg.Sync()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return daemon.Serve(ctx, daemon.Config{Fleet: fleetCfg, DataDir: cf.dataDir, Listen: *listen, ShutdownWait: *wait, LoopThreshold: *loops, PolicyPath: *policyPath, Sandbox: *sbMode, OTLPEndpoint: *otlp,
		StoreReserve: reserve, NoClientApprovals: *noClientApprovals, NoLiveIndex: *noLiveIndex, AllowRoots: *allowRoots, SessionIdle: *sessionIdle, WatchInstances: *watchInstances}, lg)
}

// helpedOK turns errHelped (the help was printed) into success.
func helpedOK(err error) error {
	if errors.Is(err, errHelped) {
		return nil
	}
	return err
}

// parseReserve reads --store-reserve: auto (0), off (-1), or a size in
// bytes with an optional KiB/MiB/GiB (or K/M/G) suffix.
func parseReserve(s string) (int64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return 0, nil
	case "off", "none":
		return -1, nil
	}
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("--store-reserve %q: want auto, off, or a size such as 64MiB", s)
	}
	return n * mult, nil
}

func mcpBridge(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("mcp", "Speaks MCP on stdin/stdout and bridges to the daemon of the data dir, starting one in the background if none answers (its log: <data-dir>/harnessd.log).", stdout)
	var cf commonFlags
	cf.register(fs)
	allowRoots := fs.StringArray("allow-root", nil, "an allowed area `DIR` (repeatable) for the daemon this starts when none runs (a running daemon keeps its own: add areas with harness roots allow DIR)")
	toolsets := fs.String("toolsets", "", "the toolsets the agent sees, `SETS` separated by commas: core (always), git, jobs, runs, targets, undo, provenance, admin, or all (default core, or $HARNESSD_TOOLSETS); the toolsets tool switches them in a session")
	role := fs.String("role", "", "the `ROLE` the agent acts as, enforced on every call: reader, editor, reviewer or operator (default operator, or $HARNESSD_ROLE)")
	if err := parse(fs, args); err != nil {
		return helpedOK(err)
	}
	opts, err := mcpOptions(fs.Changed("toolsets"), *toolsets, fs.Changed("role"), *role, os.Getenv)
	if err != nil {
		return usageError{error: err, cmd: "mcp"}
	}
	var serveArgs []string
	for _, d := range *allowRoots {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		serveArgs = append(serveArgs, "--allow-root", d)
	}
	// Stdout carries only MCP frames: logs go to stderr.
	lg, err := logx.New(cf.logLevel, cf.logFormat, stderr)
	if err != nil {
		return usageError{error: err, cmd: "mcp"}
	}
	defer lg.Sync()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := daemon.EnsureDaemon(ctx, cf.dataDir, exe, lg, serveArgs...)
	if err != nil {
		return err
	}
	c.Close()
	return daemon.RunStdioWith(ctx, cf.dataDir, os.Stdin, os.Stdout, opts)
}

// mcpOptions are the session options of `harnessd mcp`: its --toolsets
// and --role, else $HARNESSD_TOOLSETS and $HARNESSD_ROLE.
func mcpOptions(setsGiven bool, sets string, roleGiven bool, role string, getenv func(string) string) (mcpserver.Options, error) {
	if !setsGiven {
		sets = getenv("HARNESSD_TOOLSETS")
	}
	if !roleGiven {
		role = getenv("HARNESSD_ROLE")
	}
	var o mcpserver.Options
	var err error
	if o.Toolsets, err = mcpserver.ParseToolsets(sets); err != nil {
		return o, fmt.Errorf("--toolsets: %w", err)
	}
	if o.Role, err = mcpserver.ParseRole(role); err != nil {
		return o, fmt.Errorf("--role: %w", err)
	}
	return o, nil
}
