// Command harnessd is the harnessd daemon: `harnessd serve` runs it on a data
// dir, `harnessd mcp` speaks MCP over stdio and bridges to the daemon
// (starting one if none answers), `harnessd version` prints the version.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/daemon"
	"github.com/harnessd/harnessd/internal/logx"
	"github.com/harnessd/harnessd/internal/sandbox"
)

const usage = `harnessd mediates AI coding agents' work on git repositories.

Usage:
  harnessd serve [flags]    run the daemon on a data dir
  harnessd mcp [flags]      MCP over stdio, bridged to the daemon (started if needed)
  harnessd version          print the version

Run 'harnessd <command> --help' for the flags of a command.
`

func main() {
	// First: when harnessd is re-executed as the sandbox's launcher, this
	// confines the process and runs the command, and never returns.
	sandbox.Main()
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "harnessd:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{errors.New("no command")}
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "mcp":
		return mcpBridge(args[1:], stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "harnessd", harness.VersionString())
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

type commonFlags struct {
	dataDir, logLevel, logFormat string
}

func (c *commonFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", harness.DefaultDataDir(), "data directory (env HARNESSD_DATA_DIR)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.logFormat, "log-format", "console", "log format: json or console")
}

func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments: %q", fs.Args())}
	}
	return nil
}

func serve(args []string, stderr io.Writer) error {
	fs := pflag.NewFlagSet("harnessd serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf commonFlags
	cf.register(fs)
	listen := fs.String("listen", "", "also listen on loopback TCP, e.g. 127.0.0.1:7411 (bearer token in <data-dir>/token)")
	wait := fs.Duration("shutdown-wait", 10*time.Second, "how long shutdown waits for running operations")
	loops := fs.Int("loop-threshold", 3, "identical results of the same input before LOOP_DETECTED (0 = loop detection off)")
	policyPath := fs.String("policy", "", "policy file (default <data-dir>/policy.yaml; reload with SIGHUP or `harness policy reload`)")
	sbMode := fs.String("sandbox", "auto", "confinement of the processes harnessd starts: require (refuse to start commands without Landlock), auto, off")
	otlp := fs.String("otlp-endpoint", "", "export run spans over OTLP/HTTP to this collector, e.g. http://127.0.0.1:4318 (default off)")
	reserveText := fs.String("store-reserve", "auto", "free space kept on the data dir's file system; writes that would leave less answer STORAGE_FULL (auto = 1/16 of it, 1-64 MiB; e.g. 256MiB; off)")
	if err := parse(fs, args); err != nil {
		return err
	}
	reserve, err := parseReserve(*reserveText)
	if err != nil {
		return usageError{err}
	}
	if _, err := sandbox.ParseMode(*sbMode); err != nil {
		return usageError{err}
	}
	lg, err := logx.New(cf.logLevel, cf.logFormat, stderr)
	if err != nil {
		return usageError{err}
	}
	defer lg.Sync()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return daemon.Serve(ctx, daemon.Config{DataDir: cf.dataDir, Listen: *listen, ShutdownWait: *wait, LoopThreshold: *loops, PolicyPath: *policyPath, Sandbox: *sbMode, OTLPEndpoint: *otlp,
		StoreReserve: reserve}, lg)
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

func mcpBridge(args []string, stderr io.Writer) error {
	fs := pflag.NewFlagSet("harnessd mcp", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf commonFlags
	cf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	// Stdout carries only MCP frames: logs go to stderr.
	lg, err := logx.New(cf.logLevel, cf.logFormat, stderr)
	if err != nil {
		return usageError{err}
	}
	defer lg.Sync()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := daemon.EnsureDaemon(ctx, cf.dataDir, exe, lg)
	if err != nil {
		return err
	}
	c.Close()
	return daemon.RunStdio(ctx, cf.dataDir, os.Stdin, os.Stdout)
}
