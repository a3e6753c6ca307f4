package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/suggest"
)

const globalsFooter = `
Global flags (before or after the command): --data-dir DIR, --json, --timeout D.
Exit codes: 0 ok, 1 operation failed, 2 usage, 3 daemon not running.
`

// builtinHelp is the --help text of the commands defined in main.go, by
// "command" or "command subcommand".
var builtinHelp = map[string]string{
	"repo": `Usage:
  harness repo add PATH     register a git work tree
  harness repo ls           list registered repositories
  harness repo rm REPO_ID   unregister a repository
`,
	"repo add": `Usage:
  harness repo add PATH

Registers the git work tree at PATH and prints its repo_id and checkout_id.
PATH is made absolute in this shell's working directory before it is sent
(the daemon never resolves relative paths). Registering a tree twice prints
"already registered" and the same ids.
`,
	"repo ls": `Usage:
  harness repo ls [--json]

Lists the registered repositories: REPO_ID, CHECKOUT_ID, ROOT, REGISTERED.
`,
	"repo rm": `Usage:
  harness repo rm REPO_ID

Unregisters a repository (its files are not touched).
`,
	"status": `Usage:
  harness status [--daemon] [--repo REPO_ID] [--register] [--json]

In a registered repository (the current directory or below it): its git
status as 'git status --short --branch' prints it, paths as seen from the
current directory (git_status). Outside any registered repository, and
with --daemon: the daemon's status ('harness daemon'); in a git work tree
harnessd does not know, a note on stderr names 'harness repo add'.
  --daemon         the daemon's status wherever you are
  --repo REPO_ID   the git status of this repository
  --register       register the current git work tree first
`,
	"daemon": `Usage:
  harness daemon [--json]

The daemon's pid, version, uptime, data dir, repositories, store size,
actors, goroutines, sandbox, jobs and durable leases (also: harness status
--daemon, and harness status outside any registered repository).
`,
	"ops": `Usage:
  harness ops          list every operation with its description
  harness ops NAME     one operation: its description, input schema and an example call

The operations come from the running daemon; when none answers, from this
CLI's built-in table (a note on stderr says so). An unknown NAME names the
closest operation.
`,
	"call": `Usage:
  harness call OP [JSON|-]

Runs the operation OP with the JSON object of arguments (default {}), or the
JSON read from stdin with -, and prints the result as JSON. Paths inside the
JSON are sent as they are: give absolute paths. 'harness ops OP' prints the
arguments OP takes and an example.

Examples:
  harness call read_file '{"repo_id":"repo_…","path":"README.md"}'
  echo '{"repo_id":"repo_…"}' | harness call git_status -
`,
	"version": `Usage:
  harness version [--json]      (also: harness --version)

Prints the CLI's version, the commit it was built from and its Go version.
`,
	"completion": `Usage:
  harness completion bash|zsh|fish

Prints a completion script for commands, subcommands, flags and operation
names (the operation names are those of this CLI's build, embedded in the
script). Install:
  bash:  harness completion bash > ~/.local/share/bash-completion/completions/harness
  zsh:   harness completion zsh > "${fpath[1]}/_harness"   (or: source <(harness completion zsh))
  fish:  harness completion fish > ~/.config/fish/completions/harness.fish
`,
	"help": `Usage:
  harness help [COMMAND [SUBCOMMAND]]

Prints the help of harness or of a command (same as COMMAND --help).
`,
}

// helpKey is the help entry args belong to: "repo add", "job status",
// "run", or "" for an unknown command.
func helpKey(args []string) string {
	if len(args) == 0 {
		return ""
	}
	if len(args) > 1 {
		k := args[0] + " " + args[1]
		if _, ok := builtinHelp[k]; ok {
			return k
		}
		if cmd, ok := commands[args[0]]; ok {
			if _, ok := cmd.subHelp[args[1]]; ok {
				return k
			}
		}
	}
	if _, ok := builtinHelp[args[0]]; ok {
		return args[0]
	}
	if _, ok := commands[args[0]]; ok {
		return args[0]
	}
	return ""
}

// helpFor is the --help text of the command in args (flags and operands
// after the command and subcommand are ignored).
func helpFor(args []string) (string, bool) {
	if len(args) == 0 {
		return helpText(), true
	}
	var words []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	key := helpKey(words)
	if key == "" {
		return "", false
	}
	if t, ok := builtinHelp[key]; ok {
		return t + globalsFooter, true
	}
	name, sub, _ := strings.Cut(key, " ")
	cmd := commands[name]
	if sub != "" {
		return cmd.subHelp[sub] + globalsFooter, true
	}
	if cmd.help != "" {
		return cmd.help + globalsFooter, true
	}
	return "Usage:\n  harness " + cmd.usage + "\n" + globalsFooter, true
}

// buildInfo is what `version` prints.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: harness.VersionString(), GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	return b
}

// printVersion prints "NAME VERSION (commit C, GO)" or the JSON of it.
func printVersion(w io.Writer, name string, asJSON bool) int {
	b := readBuildInfo()
	if asJSON {
		out, _ := json.Marshal(b)
		fmt.Fprintln(w, string(out))
		return exitOK
	}
	commit := b.Commit
	if commit == "" {
		commit = "unknown"
	}
	if b.Modified {
		commit += ", modified"
	}
	fmt.Fprintf(w, "%s %s (commit %s, %s)\n", name, b.Version, commit, b.GoVersion)
	return exitOK
}

// closest is the candidate nearest to name (a prefix, a substring, or at
// most a third of its letters edited), or "".
func closest(name string, cands []string) string {
	name = strings.ToLower(name)
	best, bestD := "", len(name)/3+1
	if bestD < 2 {
		bestD = 2
	}
	for _, c := range cands {
		lc := strings.ToLower(c)
		d := suggest.Distance(name, lc)
		if len(name) >= 3 && (strings.HasPrefix(lc, name) || strings.Contains(lc, name)) {
			d = min(d, 1)
		}
		if d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	return best
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
