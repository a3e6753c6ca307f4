// Command harness is the human CLI of harnessd: it talks to the daemon of a
// data dir over its unix socket.
//
// Exit codes: 0 success, 1 the operation failed (the error code is printed),
// 2 usage error, 3 the daemon is not running or not answering.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnavailable = 3
)

const usage = `harness is the command-line client of harnessd.

Usage:
  harness cat|grep|diff|status|patch|log|check ...
                               work in the repository of the current directory, like
                               cat, grep -n, git diff, git status -sb, patch and git log
  harness repo add PATH        register a git work tree (PATH is made absolute)
  harness repo ls              list registered repositories
  harness repo rm REPO_ID      unregister a repository
  harness status               in a registered repository: its git status (short, with the branch);
                               elsewhere, and with --daemon: the daemon's status
  harness daemon               daemon status (pid, uptime, version, repos, store, actors)
  harness ops [NAME]           list every operation, or one operation's input schema and an example call
  harness call OP [JSON|-]     run any operation with JSON arguments (or JSON on stdin with -)
  harness version              version, commit and Go version of this CLI (also --version)
  harness completion SHELL     print a completion script for bash, zsh or fish

Global flags (before or after the command):
  --data-dir DIR   data directory of the daemon (env HARNESSD_DATA_DIR)
  --json           print JSON instead of tables
  --timeout D      give up after D (default 60s)
  -h, --help       help of harness or of a command ('harness repo add --help')

Exit codes: 0 ok, 1 operation failed, 2 usage, 3 daemon not running.
`

func main() {
	harness.SandboxMain() // `harness bench` runs harnessd in process: its jobs and checks are confined in namespaces
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type cli struct {
	c       *client.Client
	json    bool
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	dataDir string
}

// globals are the flags every command accepts, before or after it.
type globals struct {
	dataDir string
	json    bool
	timeout time.Duration
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("harness", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	var g globals
	fs.StringVar(&g.dataDir, "data-dir", harness.DefaultDataDir(), "")
	fs.BoolVar(&g.json, "json", false, "")
	fs.DurationVar(&g.timeout, "timeout", 60*time.Second, "")
	help := fs.BoolP("help", "h", false, "")
	version := fs.BoolP("version", "v", false, "")
	if err := fs.Parse(args); err != nil {
		return printUsageErr(stderr, usageErr{err.Error()}, "")
	}
	rest := fs.Args()
	if *version {
		return printVersion(stdout, "harness", g.json)
	}
	if len(rest) == 0 {
		fmt.Fprint(stdout, helpText())
		if *help {
			return exitOK
		}
		return exitUsage
	}
	cmd, registered := commands[rest[0]]
	passthrough := registered && cmd.passthrough
	if !passthrough {
		var err error
		if rest, err = extractGlobals(rest, &g); err != nil {
			return printUsageErr(stderr, err, rest[0])
		}
	}
	if *help || (!passthrough && wantsHelp(rest)) {
		text, ok := helpFor(rest)
		if !ok {
			return printUsageErr(stderr, unknownCommand(rest[0]), "")
		}
		fmt.Fprint(stdout, text)
		return exitOK
	}
	if abs, err := filepath.Abs(g.dataDir); err == nil {
		g.dataDir = abs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()

	paths := daemon.PathsOf(g.dataDir)
	uc := client.Unix(paths.Socket)
	// The human credential: people's endpoints (approvals, policy, audit,
	// store dump) need it on every transport.
	if token, err := daemon.ReadToken(paths); err == nil && token != "" {
		uc = uc.WithToken(token)
	}
	c := &cli{c: uc, json: g.json, stdin: stdin, stdout: stdout, stderr: stderr, dataDir: g.dataDir}
	defer c.c.Close()
	err := c.dispatch(ctx, rest)
	return c.exit(err, rest)
}

// extractGlobals takes the global flags out of a command's arguments (up to
// a "--"), so that `harness repo ls --json` means `harness --json repo ls`.
func extractGlobals(args []string, g *globals) ([]string, error) {
	out := []string{args[0]}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "--json":
			if !hasVal {
				g.json = true
				continue
			}
			b, err := strconv.ParseBool(val)
			if err != nil {
				return args, usageErr{fmt.Sprintf("--json=%s: want true or false", val)}
			}
			g.json = b
			continue
		case "--data-dir", "--timeout":
			if !hasVal {
				if i+1 >= len(args) {
					return args, usageErr{fmt.Sprintf("flag needs an argument: %s", name)}
				}
				i++
				val = args[i]
			}
			if name == "--data-dir" {
				g.dataDir = val
				continue
			}
			d, err := time.ParseDuration(val)
			if err != nil || d <= 0 {
				return args, usageErr{fmt.Sprintf("--timeout %q: want a duration such as 30s or 5m", val)}
			}
			g.timeout = d
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

// wantsHelp reports a -h or --help among args before a "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-h" || a == "--help" || a == "--help=true" {
			return true
		}
	}
	return false
}

type usageErr struct{ msg string }

func (u usageErr) Error() string { return u.msg }

// usageHint is a usage error with its own hint line.
type usageHint struct{ msg, hint string }

func (u usageHint) Error() string { return u.msg }

// silentFailure exits 1 after the command printed its own result (a failed
// check or job): msg goes to stderr only, so --json output stays one JSON
// document.
type silentFailure struct{ msg string }

func (s silentFailure) Error() string { return s.msg }

func unknownCommand(name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if m := closest(name, commandNames()); m != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", m)
	}
	return usageHint{msg, "run 'harness --help' for the list of commands"}
}

// printUsageErr prints a usage error as one line and a hint, and returns
// exitUsage.
func printUsageErr(w io.Writer, err error, cmdKey string) int {
	var uh usageHint
	if errors.As(err, &uh) {
		fmt.Fprintf(w, "harness: %s\n%s\n", oneLine(uh.msg), uh.hint)
		return exitUsage
	}
	hint := "run 'harness --help' for the usage"
	if cmdKey != "" {
		hint = fmt.Sprintf("run 'harness %s --help' for the usage", cmdKey)
	}
	fmt.Fprintf(w, "harness: %s\n%s\n", oneLine(err.Error()), hint)
	return exitUsage
}

// oneLine joins the lines of s with "; ".
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

func (c *cli) exit(err error, args []string) int {
	if err == nil {
		return exitOK
	}
	var ue usageErr
	var uh usageHint
	if errors.As(err, &ue) || errors.As(err, &uh) {
		return printUsageErr(c.stderr, err, helpKey(args))
	}
	var sf silentFailure
	if errors.As(err, &sf) {
		fmt.Fprintf(c.stderr, "harness: %s\n", esc(sf.msg))
		return exitFailed
	}
	var bf benchFailed
	if errors.As(err, &bf) {
		return int(bf)
	}
	e := errs.From(err)
	if e.Code == errs.Unavailable {
		fmt.Fprintf(c.stderr, "harness: harnessd is not running on %s (start it with `harnessd serve --data-dir %s`): %s\n", c.dataDir, c.dataDir, esc(e.Message))
		return exitUnavailable
	}
	if c.json {
		b, _ := json.Marshal(map[string]any{"error": e})
		fmt.Fprintln(c.stdout, string(b))
	} else {
		fmt.Fprintf(c.stderr, "harness: %s: %s\n", esc(string(e.Code)), esc(e.Message))
	}
	return exitFailed
}

// commandNames lists every top-level command, sorted.
func commandNames() []string {
	names := slices.Clone(builtinCommands)
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// helpText is the usage plus the registered commands.
func helpText() string {
	if len(commands) == 0 {
		return usage
	}
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(usage)
	b.WriteString("\nMore commands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  harness %s\n", commands[n].usage)
	}
	b.WriteString("\nRun 'harness COMMAND --help' for the usage of a command.\n")
	return b.String()
}

func (c *cli) dispatch(ctx context.Context, args []string) error {
	switch args[0] {
	case "help":
		text, ok := helpFor(args[1:])
		if len(args) == 1 {
			text, ok = helpText(), true
		}
		if !ok {
			return unknownCommand(args[1])
		}
		fmt.Fprint(c.stdout, text)
		return nil
	case "version":
		if len(args) != 1 {
			return usageErr{"usage: harness version"}
		}
		printVersion(c.stdout, "harness", c.json)
		return nil
	case "completion":
		if len(args) != 2 {
			return usageErr{"usage: harness completion bash|zsh|fish"}
		}
		return c.completion(args[1])
	case "repo":
		if len(args) < 2 {
			return usageErr{"repo needs a subcommand: add, ls, rm"}
		}
		switch args[1] {
		case "add":
			if len(args) != 3 {
				return usageErr{"usage: harness repo add PATH"}
			}
			path, err := absPath(args[2])
			if err != nil {
				return err
			}
			return c.repoAdd(ctx, path)
		case "ls", "list":
			if len(args) != 2 {
				return usageErr{"usage: harness repo ls"}
			}
			return c.repoList(ctx)
		case "rm", "remove":
			if len(args) != 3 {
				return usageErr{"usage: harness repo rm REPO_ID"}
			}
			return c.show(ctx, "repository_unregister", map[string]any{"repo_id": args[2]}, func(raw json.RawMessage) {
				var r harness.UnregisterResult
				_ = json.Unmarshal(raw, &r)
				fmt.Fprintf(c.stdout, "unregistered %s (%s)\n", esc(r.ID), esc(r.Root))
			})
		}
		return usageErr{fmt.Sprintf("unknown repo subcommand %q (want add, ls or rm)", args[1])}
	case "daemon":
		if len(args) != 1 {
			return usageErr{"usage: harness daemon"}
		}
		return c.status(ctx)
	case "status":
		return c.statusHere(ctx, args[1:])
	case "ops":
		switch len(args) {
		case 1:
			return c.ops(ctx)
		case 2:
			return c.opShow(ctx, args[1])
		}
		return usageErr{"usage: harness ops [NAME]"}
	case "call":
		if len(args) < 2 || len(args) > 3 {
			return usageErr{"usage: harness call OP [JSON|-]"}
		}
		body := json.RawMessage("{}")
		if len(args) == 3 {
			b := []byte(args[2])
			if args[2] == "-" {
				var err error
				if b, err = io.ReadAll(c.stdin); err != nil {
					return err
				}
			}
			body = b
		}
		raw, err := c.c.Call(ctx, args[1], body)
		if err != nil {
			return suggestOp(err, args[1])
		}
		return c.printJSON(raw)
	}
	if cmd, ok := commands[args[0]]; ok {
		return cmd.run(ctx, c, args[1:])
	}
	return unknownCommand(args[0])
}

// suggestOp adds the closest operation name to an unknown operation error.
func suggestOp(err error, name string) error {
	e := errs.From(err)
	if e.Code != errs.NotFound || e.Details["operation"] != name {
		return err
	}
	names := make([]string, 0, len(harness.Ops()))
	for _, o := range harness.Ops() {
		names = append(names, o.Name)
	}
	if m := closest(name, names); m != "" && m != name {
		e.Message += fmt.Sprintf(" (did you mean %s? 'harness ops %s' shows its arguments)", m, m)
	}
	return e
}

// absPath makes a path argument absolute: the daemon resolves paths in its
// own working directory, not the caller's.
func absPath(p string) (string, error) {
	if p == "" {
		return "", usageErr{"empty path"}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", usageErr{fmt.Sprintf("path %q: %v", p, err)}
	}
	return abs, nil
}

// command is a CLI command defined in its own file and listed in commands
// (commands.go).
type command struct {
	name  string // what the person types: harness NAME
	usage string // one line for the help text, e.g. "jobs [--all]   list jobs"
	run   func(ctx context.Context, c *cli, args []string) error
	// help is the text of `harness NAME --help` (default: the usage line);
	// subHelp the text of `harness NAME SUB --help` per subcommand.
	help    string
	subHelp map[string]string
	// flags are the command's flags, for the completion scripts.
	flags []string
	// passthrough commands parse every argument themselves (their own
	// --help and --json): the CLI does not take global flags from them.
	passthrough bool
}

// show runs op and prints the raw JSON with --json, else calls human.
func (c *cli) show(ctx context.Context, op string, args any, human func(json.RawMessage)) error {
	raw, err := c.c.Call(ctx, op, args)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	human(raw)
	return nil
}

func (c *cli) printJSON(raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		_, err = c.stdout.Write(append(raw, '\n'))
		return err
	}
	buf.WriteByte('\n')
	_, err := c.stdout.Write(buf.Bytes())
	return err
}

func (c *cli) repoAdd(ctx context.Context, path string) error {
	return c.show(ctx, "repository_register", map[string]any{"path": path}, func(raw json.RawMessage) {
		var r harness.RegisterResult
		_ = json.Unmarshal(raw, &r)
		verb := "registered"
		if !r.Created {
			verb = "already registered"
		}
		fmt.Fprintf(c.stdout, "%s %s\n  repo_id     %s\n  checkout_id %s\n", verb, esc(r.Root), esc(r.ID), esc(r.CheckoutID))
	})
}

func (c *cli) repoList(ctx context.Context) error {
	return c.show(ctx, "repository_list", nil, func(raw json.RawMessage) {
		var r harness.ListResult
		_ = json.Unmarshal(raw, &r)
		if len(r.Repositories) == 0 {
			fmt.Fprintln(c.stdout, "no repositories registered (add one with `harness repo add PATH`)")
			return
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "REPO_ID\tCHECKOUT_ID\tROOT\tREGISTERED")
		for _, x := range r.Repositories {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", esc(x.ID), esc(x.CheckoutID), esc(x.Root), x.Registered.Local().Format(time.DateTime))
		}
		tw.Flush()
	})
}

// statusHere is `harness status`: the git status of the repository of
// the current directory, or the daemon's status outside any registered
// repository (and with --daemon).
func (c *cli) statusHere(ctx context.Context, args []string) error {
	fs, repo, register := whereFlagSet("status")
	daemonOnly := fs.Bool("daemon", false, "the daemon's status")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return usageErr{"usage: harness status [--daemon] [--repo REPO_ID] [--register]"}
	}
	if *daemonOnly {
		return c.status(ctx)
	}
	h, err := c.resolve(ctx, *repo, *register)
	var uh usageHint
	switch {
	case err == nil:
		return c.gitStatus(ctx, h)
	case *repo != "" || *register:
		return err
	case errors.As(err, &uh) && !c.json:
		// Not in a registered repository: the daemon's status, and why.
		fmt.Fprintf(c.stderr, "harness: %s; the daemon's status follows (%s)\n", oneLine(uh.msg), uh.hint)
	case errs.From(err).Code == errs.Unavailable:
		return err
	}
	return c.status(ctx)
}

func (c *cli) status(ctx context.Context) error {
	raw, err := c.c.Get(ctx, "/v1/status")
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	var st harness.StatusResult
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "pid\t%d\n", st.Pid)
	fmt.Fprintf(tw, "version\t%s (%s)\n", esc(st.Version), esc(st.GoVersion))
	fmt.Fprintf(tw, "uptime\t%s\n", (time.Duration(st.UptimeS * float64(time.Second))).Round(time.Second))
	fmt.Fprintf(tw, "data dir\t%s\n", esc(st.DataDir))
	fmt.Fprintf(tw, "repositories\t%d\n", st.Repositories)
	fmt.Fprintf(tw, "active runs\t%d\n", st.RunsActive)
	fmt.Fprintf(tw, "store\t%s\n", humanBytes(st.StoreBytes))
	kinds := make([]string, 0, len(st.Actors))
	for k := range st.Actors {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s=%d", esc(k), st.Actors[k]))
	}
	fmt.Fprintf(tw, "actors\t%s\n", strings.Join(parts, " "))
	fmt.Fprintf(tw, "goroutines\t%d\n", st.Goroutines)
	for _, l := range st.Sandbox {
		fmt.Fprintf(tw, "sandbox %s\t%s\n", l.Profile, esc(l.String()))
		for _, w := range l.Weakened {
			fmt.Fprintf(tw, "\t  weakened: %s\n", esc(w))
		}
	}
	for _, l := range st.Notes {
		fmt.Fprintf(tw, "note\t%s\n", esc(l))
	}
	if f := st.Fleet; f != nil {
		printFleet(tw, f)
	}
	var extra struct {
		Jobs *struct {
			Queued      int `json:"queued"`
			Running     int `json:"running"`
			Concurrency int `json:"concurrency"`
			Total       int `json:"total"`
		} `json:"jobs"`
		Leases []struct {
			RepoID    string    `json:"repo_id"`
			LeaseID   string    `json:"lease_id"`
			Owner     string    `json:"owner"`
			Operation string    `json:"operation"`
			Keys      []string  `json:"keys"`
			Expires   time.Time `json:"expires_at"`
		} `json:"durable_leases"`
	}
	if b, err := json.Marshal(st.Extra); err == nil {
		_ = json.Unmarshal(b, &extra)
	}
	if j := extra.Jobs; j != nil {
		fmt.Fprintf(tw, "jobs\t%d running, %d queued (concurrency %d), %d known\n", j.Running, j.Queued, j.Concurrency, j.Total)
	}
	if len(extra.Leases) == 0 {
		fmt.Fprintf(tw, "durable leases\tnone\n")
	}
	for _, l := range extra.Leases {
		keys := make([]string, len(l.Keys))
		for i, k := range l.Keys {
			keys[i] = esc(k)
		}
		fmt.Fprintf(tw, "durable lease\t%s %s by %s (%s) on %s, expires %s\n", esc(l.LeaseID), esc(l.Operation), esc(l.Owner), esc(l.RepoID),
			strings.Join(keys, " "), l.Expires.Local().Format(time.TimeOnly))
	}
	return tw.Flush()
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
