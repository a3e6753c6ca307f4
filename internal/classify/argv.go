package classify

import (
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// maxDepth bounds how deeply wrappers (env, timeout, xargs, find -exec) and
// nested `sh -c` scripts are followed.
const maxDepth = 8

// dynamicArg stands for an argument whose value is only known at run time
// (a shell expansion, a leading glob, xargs input). Real argv elements cannot
// contain NUL, so any element containing one is treated as dynamic.
const dynamicArg = "\x00"

func isDynamic(a string) bool { return strings.IndexByte(a, 0) >= 0 }

// Argv classifies a typed argv (never a shell string: a `sh -c` script is
// parsed with [Script]). It never panics; an empty argv is unknown.
func Argv(argv []string) Result { return classifyArgv(argv, 0) }

// handler classifies the arguments of one program (argv[1:]).
type handler func(prog string, args []string, depth int) Result

type command struct {
	fn handler
	// wrapper programs run another command and judge its arguments themselves.
	wrapper bool
}

var commands map[string]command

func classifyArgv(argv []string, depth int) Result {
	if len(argv) == 0 {
		return result(Unknown, "empty command")
	}
	name := argv[0]
	if isDynamic(name) {
		return result(Shell, "the command name is expanded at run time")
	}
	prog, trusted := programName(name)
	var r Result
	switch {
	case prog == "":
		r = result(Unknown, "empty program name")
	case depth > maxDepth:
		r = result(Shell, "commands are nested too deeply to classify")
	case !trusted:
		r = result(Unknown, "runs "+strconv.Quote(name)+" by path; only programs on PATH or in system directories are classified")
	default:
		r = dispatch(prog, argv[1:], depth)
	}
	r.Program = prog
	if r.Class == Readonly && hasRecursiveRm(argv) {
		r.raise(Unknown, "the arguments contain \"rm -r\"; not treated as readonly")
	}
	return r
}

func dispatch(prog string, args []string, depth int) Result {
	if r, ok := versionQuery(prog, args); ok {
		return r
	}
	c, ok := commands[prog]
	if !ok {
		switch {
		case strings.HasPrefix(prog, "mkfs"):
			return result(Destructive, prog+" formats a filesystem")
		case isShell(prog):
			c = command{fn: classifyShell, wrapper: true}
		default:
			return result(Unknown, prog+" is not on the readonly allowlist")
		}
	}
	r := c.fn(prog, args, depth)
	if !c.wrapper && r.Class.Severity() < Unknown.Severity() && !argSafe[prog] {
		if i := firstInjectable(prog, args); i >= 0 {
			r.raise(Unknown, "argument "+strconv.Itoa(i+1)+" of "+prog+" is expanded at run time and could add options")
		}
	}
	return r
}

// firstInjectable returns the index of the first dynamic argument that could
// be taken as an option, or -1. Arguments after "--" are operands.
func firstInjectable(prog string, args []string) int {
	for i, a := range args {
		if a == "--" && prog != "find" {
			return -1
		}
		if isDynamic(a) {
			return i
		}
	}
	return -1
}

// argSafe lists readonly programs whose options cannot write files, run
// programs or use the network, so unknown extra arguments keep them readonly.
var argSafe = map[string]bool{
	"cat": true, "head": true, "tail": true, "wc": true, "ls": true, "stat": true,
	"grep": true, "egrep": true, "fgrep": true, "basename": true, "dirname": true,
	"realpath": true, "readlink": true, "echo": true, "printf": true, "pwd": true,
	"true": true, "false": true, "uname": true, "which": true, "sha1sum": true,
	"sha224sum": true, "sha256sum": true, "sha384sum": true, "sha512sum": true,
	"md5sum": true, "b2sum": true, "cksum": true, "cmp": true, "diff": true, "du": true,
	"cut": true, "nl": true, "tac": true, "rev": true, "jq": true, "id": true,
	"whoami": true, "seq": true, "sleep": true, "comm": true, "paste": true,
	"fold": true, "expand": true, "unexpand": true, "od": true, "strings": true,
	"base64": true, "nproc": true, "tr": true, "test": true, "[": true,
}

var systemDirs = map[string]bool{
	"/bin": true, "/usr/bin": true, "/usr/local/bin": true,
	"/sbin": true, "/usr/sbin": true, "/usr/local/sbin": true,
}

// programName returns the base name of argv[0] and whether it names a program
// looked up on PATH or in a system directory (not ./tool or /tmp/x/git).
func programName(p string) (string, bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return p, true
	}
	base := p[i+1:]
	dir := p[:i]
	if dir == "" {
		return base, false
	}
	return base, systemDirs[path.Clean(dir)]
}

// hasRecursiveRm reports whether argv holds an "rm" element followed later by
// a recursive flag. It backs up the parsers: such an argv is never readonly.
func hasRecursiveRm(argv []string) bool {
	seenRm := false
	for _, a := range argv {
		if seenRm && isRecursiveRmFlag(a) {
			return true
		}
		seenRm = seenRm || a == "rm" || strings.HasSuffix(a, "/rm")
	}
	return false
}

func isRecursiveRmFlag(f string) bool {
	if strings.HasPrefix(f, "--") {
		return len(f) > 3 && strings.HasPrefix("--recursive", f)
	}
	return len(f) > 1 && f[0] == '-' && strings.ContainsAny(f, "rR")
}

// dangerousEnv reports environment variables that change which program runs
// or make a readonly program run others (loader, git, pager, shell startup).
func dangerousEnv(name string) bool {
	switch name {
	case "PATH", "BASH_ENV", "ENV", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "IFS",
		"PS4", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "RIPGREP_CONFIG_PATH",
		"LESSOPEN", "LESSCLOSE", "GCONV_PATH", "HOME", "XDG_CONFIG_HOME", "GOFLAGS",
		"GOTOOLCHAIN", "GOENV", "SHELL", "PYTHONSTARTUP", "PERL5OPT", "NODE_OPTIONS",
		"CDPATH", "TERMINFO",
		// Toolchains: options, wrappers and search paths that load or run
		// other code (java -version starts a JVM with its agents, cgo runs
		// the C compiler with its flags, rustup picks a toolchain by path).
		"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "RUBYOPT", "RUBYLIB", "PERL5LIB",
		"PERLLIB", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "NODE_PATH", "RUSTC", "RUSTC_WRAPPER",
		"RUSTDOC", "RUSTFLAGS", "CC", "CXX", "GOROOT", "GOWORK", "GCC_EXEC_PREFIX", "COMPILER_PATH",
		"PKG_CONFIG", "PKG_CONFIG_PATH":
		return true
	}
	return strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "DYLD_") ||
		strings.HasPrefix(name, "GIT_") || strings.HasPrefix(name, "BASH_FUNC_") ||
		strings.HasPrefix(name, "CGO_") || strings.HasPrefix(name, "CARGO_") || strings.HasPrefix(name, "RUSTUP_") ||
		strings.HasPrefix(strings.ToLower(name), "npm_config_")
}

// splitAssign splits NAME=VALUE; ok is false when a is not an assignment.
func splitAssign(a string) (name string, ok bool) {
	i := strings.IndexByte(a, '=')
	if i <= 0 {
		return "", false
	}
	for j := 0; j < i; j++ {
		c := a[j]
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (j == 0 || c < '0' || c > '9') {
			return "", false
		}
	}
	return a[:i], true
}

func envReason(name string) string {
	return "environment variable " + name + " can change what the command runs"
}

// scanShort walks a short-option cluster such as "-nro" or "-ofile". Letters
// in withArg take an argument: the rest of the cluster, or else the next
// argument (takesNext). It returns the letters seen up to and including the
// first argument-taking one.
func scanShort(a, withArg string) (letters string, takesNext bool) {
	for j := 1; j < len(a); j++ {
		if strings.IndexByte(withArg, a[j]) >= 0 {
			return a[1 : j+1], j == len(a)-1
		}
	}
	return a[1:], false
}

// isShort reports whether a is a short-option cluster ("-x...", not "-" or "--...").
func isShort(a string) bool { return len(a) > 1 && a[0] == '-' && a[1] != '-' }

// longName splits "--name=value" into name and whether a value is attached.
func longName(a string) (name string, attached bool) {
	name = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		return name[:i], true
	}
	return name, false
}

// abbrevOf reports whether the long option name (without "--") is full or an
// abbreviation of it at least min characters long, as getopt_long and git's
// parse-options accept.
func abbrevOf(name, full string, min int) bool {
	return len(name) >= min && strings.HasPrefix(full, name)
}

// ---- wrappers ----------------------------------------------------------------

// wrapped classifies the command a wrapper runs; reasons from the wrapper's
// own options (pre) are kept.
func wrapped(prog string, inner []string, depth int, pre Result) Result {
	if len(inner) == 0 {
		return pre
	}
	r := classifyArgv(inner, depth+1)
	if r.Class.Severity() > Readonly.Severity() || len(r.Reasons) == 0 {
		r.Reasons = append([]string(nil), r.Reasons...)
	} else {
		r.Reasons = []string{prog + " runs " + r.Program + ": " + r.Reasons[0]}
	}
	if pre.Class != Readonly || pre.Network {
		r.merge(pre)
	}
	return r
}

func classifyEnv(prog string, args []string, depth int) Result {
	pre := result(Readonly, "env prints the environment")
	i := 0
options:
	for i < len(args) {
		a := args[i]
		switch {
		case a == "-" || a == "-i" || a == "--ignore-environment":
			// The command would run without the environment harnessd
			// hardens git with (GIT_CONFIG_COUNT) and scrubs.
			pre.raise(Unknown, "env -i drops the environment harnessd gives commands")
			i++
		case a == "-0" || a == "--null" || a == "-v" || a == "--debug":
			i++
		case a == "--":
			i++
			break options
		case strings.HasPrefix(a, "--"):
			name, attached := longName(a)
			switch {
			case abbrevOf(name, "unset", 1):
				v := ""
				if attached {
					v = a[strings.IndexByte(a, '=')+1:]
				} else if i+1 < len(args) {
					v = args[i+1]
				}
				if dangerousEnv(v) {
					pre.raise(Unknown, "env --unset "+v+": "+envReason(v))
				}
				i++
				if !attached {
					i++
				}
			case abbrevOf(name, "ignore-environment", 1):
				pre.raise(Unknown, "env -i drops the environment harnessd gives commands")
				i++
			case abbrevOf(name, "chdir", 1):
				pre.raise(Unknown, "env --chdir runs the command in another directory")
				i++
				if !attached {
					i++
				}
			case abbrevOf(name, "split-string", 2):
				return result(Unknown, "env --split-string builds the command from a string")
			case strings.HasSuffix(name, "signal") || strings.HasSuffix(name, "signal-handling"):
				i++
			default:
				return result(Unknown, "unrecognised env option "+strconv.Quote(a))
			}
		case isShort(a):
			letters, next := scanShort(a, "uCS")
			last := letters[len(letters)-1]
			for k := 0; k < len(letters); k++ {
				if strings.IndexByte("i0vuCS", letters[k]) < 0 {
					return result(Unknown, "unrecognised env option "+strconv.Quote(a))
				}
			}
			if strings.IndexByte(letters, 'i') >= 0 {
				pre.raise(Unknown, "env -i drops the environment harnessd gives commands")
			}
			switch last {
			case 'S':
				return result(Unknown, "env -S builds the command from a string")
			case 'C':
				pre.raise(Unknown, "env -C runs the command in another directory")
			case 'u':
				v := a[len(letters)+1:]
				if next && i+1 < len(args) {
					v = args[i+1]
				}
				if dangerousEnv(v) {
					pre.raise(Unknown, "env -u "+v+": "+envReason(v))
				}
			}
			i++
			if next {
				i++
			}
		default:
			break options
		}
	}
	for ; i < len(args); i++ {
		name, ok := splitAssign(args[i])
		if !ok {
			break
		}
		if dangerousEnv(name) {
			pre.raise(Unknown, envReason(name))
		}
	}
	if i >= len(args) {
		return pre
	}
	return wrapped(prog, args[i:], depth, pre)
}

// skipOptions returns the index of the first operand of a wrapper command
// (the word after "--", or the first word that is not an option). A long
// option whose name longValue accepts takes the next word as its value
// unless the value is attached ("--signal=KILL"); a short cluster ending in
// a letter of shortValue takes the next word. shortSeen, if set, sees the
// letters of each short cluster.
func skipOptions(args []string, shortValue string, longValue func(name string) bool, shortSeen func(letters string)) int {
	i := 0
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			return i + 1
		case strings.HasPrefix(a, "--"):
			name, attached := longName(a)
			if longValue(name) && !attached {
				i++
			}
		case isShort(a):
			letters, next := scanShort(a, shortValue)
			if shortSeen != nil {
				shortSeen(letters)
			}
			if next {
				i++
			}
		default:
			return i
		}
		i++
	}
	return min(i, len(args)) // an option's value may be missing at the end
}

func classifyTimeout(prog string, args []string, depth int) Result {
	i := skipOptions(args, "sk", func(name string) bool {
		return abbrevOf(name, "signal", 1) || abbrevOf(name, "kill-after", 1)
	}, nil)
	if i >= len(args) {
		return result(Unknown, "timeout needs a duration and a command")
	}
	i++ // the duration
	if i >= len(args) {
		return result(Unknown, "timeout needs a command")
	}
	return wrapped(prog, args[i:], depth, result(Readonly, ""))
}

func classifyNice(prog string, args []string, depth int) Result {
	i := 0
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			i++
		case a == "-n" || a == "--adjustment":
			i += 2
			continue
		case strings.HasPrefix(a, "--"):
			i++
			continue
		case isShort(a):
			i++
			continue
		}
		break
	}
	if i >= len(args) {
		return result(Readonly, "nice prints the niceness")
	}
	return wrapped(prog, args[i:], depth, result(Readonly, ""))
}

func classifyNohup(prog string, args []string, depth int) Result {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return result(Unknown, "nohup needs a command")
	}
	return wrapped(prog, args, depth, result(Readonly, ""))
}

func classifyTime(prog string, args []string, depth int) Result {
	pre := result(Readonly, "")
	i := skipOptions(args, "fo", func(name string) bool {
		if abbrevOf(name, "output", 1) || abbrevOf(name, "append", 1) {
			pre.raise(WorkspaceWrite, "time --output writes a file")
		}
		return abbrevOf(name, "output", 1) || abbrevOf(name, "format", 1)
	}, func(letters string) {
		if strings.ContainsAny(letters, "oa") {
			pre.raise(WorkspaceWrite, "time -o writes a file")
		}
	})
	if i >= len(args) {
		return result(Readonly, "time without a command does nothing")
	}
	return wrapped(prog, args[i:], depth, pre)
}

func classifyStdbuf(prog string, args []string, depth int) Result {
	i := skipOptions(args, "ioe", func(string) bool { return true }, nil)
	if i >= len(args) {
		return result(Unknown, "stdbuf needs a command")
	}
	return wrapped(prog, args[i:], depth, result(Readonly, ""))
}

// classifyXargs classifies the command xargs runs, with a dynamic argument
// appended for the input it reads: only commands that stay readonly whatever
// their arguments stay readonly under xargs.
func classifyXargs(prog string, args []string, depth int) Result {
	i := skipOptions(args, "adEILnPs", func(name string) bool {
		for _, full := range []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"} {
			if abbrevOf(name, full, 3) {
				return true
			}
		}
		return false
	}, nil)
	inner := []string{"echo"}
	if i < len(args) {
		inner = args[i:]
	}
	if repl, ok := xargsReplace(args[:i]); ok && shellSubstitutes(inner, repl) {
		return result(Shell, "xargs -I puts its input into a shell script: a crafted line becomes code")
	}
	inner = append(inner[:len(inner):len(inner)], dynamicArg)
	r := classifyArgv(inner, depth+1)
	r.Effect = nil // what it works on is xargs' input, known only at run time
	reasons := make([]string, 0, len(r.Reasons))
	for _, m := range r.Reasons {
		reasons = append(reasons, "xargs runs "+r.Program+": "+m)
	}
	r.Reasons = reasons
	return r
}

// xargsReplace returns the replace string of xargs options (-I R, -IR,
// --replace[=R], -i[R]; "{}" by default).
func xargsReplace(opts []string) (string, bool) {
	for k := 0; k < len(opts); k++ {
		a := opts[k]
		switch {
		case a == "-I" && k+1 < len(opts):
			return opts[k+1], true
		case strings.HasPrefix(a, "-I") && len(a) > 2:
			return a[2:], true
		case a == "--replace" || a == "-i":
			return "{}", true
		case strings.HasPrefix(a, "--replace="):
			return strings.TrimPrefix(a, "--replace="), true
		case strings.HasPrefix(a, "-i") && len(a) > 2 && !strings.HasPrefix(a, "--"):
			return a[2:], true
		}
	}
	return "", false
}

// shellSubstitutes reports whether argv runs a shell whose arguments carry
// repl inside a word (not as a whole word): the text substituted there is
// parsed as shell code.
func shellSubstitutes(argv []string, repl string) bool {
	if repl == "" || len(argv) == 0 {
		return false
	}
	shell := false
	for _, a := range argv {
		if isShell(filepath.Base(a)) {
			shell = true
		}
		if shell && a != repl && strings.Contains(a, repl) {
			return true
		}
	}
	return false
}

func classifyCommandBuiltin(prog string, args []string, depth int) Result {
	i := 0
	for i < len(args) && isShort(args[i]) {
		if strings.ContainsAny(args[i], "vV") {
			return result(Readonly, "command -v looks a program up")
		}
		i++
	}
	if i < len(args) && args[i] == "--" {
		i++
	}
	if i >= len(args) {
		return result(Readonly, "command without a program does nothing")
	}
	return wrapped(prog, args[i:], depth, result(Readonly, ""))
}

// ---- shells ------------------------------------------------------------------

func isShell(prog string) bool {
	switch prog {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash":
		return true
	}
	return false
}

func classifyShell(prog string, args []string, depth int) Result {
	cmode, interactive, stdin := false, false, false
	i := 0
options:
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			i++
			break options
		case strings.HasPrefix(a, "--"):
			switch a {
			case "--rcfile", "--init-file":
				i++
			case "--norc", "--noprofile", "--posix", "--login", "--noediting", "--restricted",
				"--verbose", "--version", "--help", "--pretty-print":
			default:
				return result(Shell, "unrecognised shell option "+strconv.Quote(a))
			}
			i++
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			needArgs := 0
			for k := 1; k < len(a); k++ {
				switch a[k] {
				case 'c':
					cmode = true
				case 'i':
					interactive = true
				case 's':
					stdin = true
				case 'o', 'O':
					needArgs++
				}
			}
			i += 1 + needArgs
		default:
			break options
		}
	}
	if interactive {
		return result(Shell, prog+" -i runs interactive startup files")
	}
	if cmode {
		if i >= len(args) {
			return result(Shell, prog+" -c needs a script")
		}
		return classifyScript(args[i], depth+1)
	}
	if i >= len(args) || stdin {
		return result(Shell, prog+" reads commands from standard input")
	}
	return result(Unknown, prog+" runs the script file "+strconv.Quote(args[i]))
}
