package gitx

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// Git runs a git binary with harnessd's hardening. The zero value is ready to
// use and runs the "git" found on PATH (looked up once per process).
type Git struct {
	// Bin is the git executable: "" means "git" looked up on PATH once; a
	// name without a slash is looked up once; a path is used as is.
	Bin string
	// Confine, when set, confines every git process run in dir: read-only
	// subcommands (see ReadOnly) with nothing writable, the others with
	// writable (their repository's git directories, and a new worktree's
	// or repository's place). It returns how to start the command and what
	// to call once it ended. Nil = unconfined.
	Confine func(ctx context.Context, dir string, writable []string) (start func(*exec.Cmd) error, done func(), err error)
}

// readOnly are the subcommands that never write the repository as harnessd
// runs them (status may refresh the index opportunistically: it skips that
// when .git is read-only).
var readOnly = map[string]bool{"status": true, "diff": true, "log": true, "show": true, "ls-files": true, "ls-tree": true,
	"cat-file": true, "rev-parse": true, "diff-tree": true, "diff-index": true, "diff-files": true, "rev-list": true,
	"blame": true, "grep": true, "for-each-ref": true, "merge-base": true, "describe": true}

// DefaultMaxOutput is the stdout cap of Run when maxOut is 0.
const DefaultMaxOutput = 16 << 20

// maxStderr bounds the stderr kept from one git process.
const maxStderr = 64 << 10

// maxErrorStderr bounds the stderr quoted in an error message.
const maxErrorStderr = 2000

// waitDelay bounds how long Wait waits for git's output pipes after the
// context ends (a stray grandchild could keep them open).
const waitDelay = 2 * time.Second

// globalArgs are passed before the subcommand on every call; see doc.go.
var globalArgs = []string{
	"--no-pager",
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.pager=cat",
	"-c", "core.editor=false",
	"-c", "sequence.editor=false",
	"-c", "core.askPass=",
	"-c", "core.sshCommand=false",
	"-c", "protocol.allow=never",
	"-c", "credential.helper=",
	"-c", "diff.external=",
	"-c", "color.ui=false",
	"-c", "diff.noprefix=false",
	"-c", "diff.mnemonicPrefix=false",
	"-c", "diff.srcPrefix=a/",
	"-c", "diff.dstPrefix=b/",
	"-c", "diff.relative=false",
	"-c", "core.quotePath=false",
	"-c", "commit.gpgSign=false",
	"-c", "tag.gpgSign=false",
	"-c", "log.showSignature=false",
	"-c", "safe.bareRepository=explicit",
	// The user's attributes file is not read (attributes can route files
	// to drivers); the repository's own .gitattributes still apply.
	"-c", "core.attributesFile=/dev/null",
	// A repository's comment character would make --cleanup=strip drop
	// the provenance trailers of harnessd's commits.
	"-c", "core.commentChar=#",
}

// envAllow lists the variables inherited from the current environment.
var envAllow = []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER",
	// Commit identity: harmless, and what a user sets to commit as someone.
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"}

// envForce is appended after the inherited variables (later entries win).
var envForce = []string{
	"GIT_TERMINAL_PROMPT=0",
	"GIT_OPTIONAL_LOCKS=0",
	"GIT_PAGER=cat",
	"PAGER=cat",
	"GIT_EDITOR=false",
	"GIT_CONFIG_NOSYSTEM=1",
	// The user's global config is read by harnessd itself: only its
	// allowlisted variables reach git, as -c arguments (userconfig.go).
	"GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_ATTR_NOSYSTEM=1",
	"GIT_NO_LAZY_FETCH=1",
	"GIT_PROTOCOL_FROM_USER=0",
	"LC_ALL=C",
}

// HardenedEnv returns the environment gitx gives git, built from environ
// (usually os.Environ()): only the allowlisted variables are kept and the
// forced settings are applied. Each variable appears at most once.
func HardenedEnv(environ []string) []string {
	env := make([]string, 0, len(envAllow)+len(envForce))
	forced := func(name string) bool {
		for _, f := range envForce {
			if len(f) > len(name) && f[len(name)] == '=' && f[:len(name)] == name {
				return true
			}
		}
		return false
	}
	for _, name := range envAllow {
		if forced(name) {
			continue
		}
		// Last occurrence wins, as with getenv on a duplicated variable.
		for i := len(environ) - 1; i >= 0; i-- {
			kv := environ[i]
			if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
				env = append(env, kv)
				break
			}
		}
	}
	return append(env, envForce...)
}

// binInfo is the resolved git binary.
type binInfo struct {
	path string
	err  error

	verOnce sync.Once
	eoo     bool // supports --end-of-options (git >= 2.24)
}

var bins sync.Map // Bin string -> *binInfo

// resolve returns the binary for g, looking it up at most once per Bin.
func (g *Git) resolve() *binInfo {
	name := g.Bin
	if name == "" {
		name = "git"
	}
	if v, ok := bins.Load(name); ok {
		return v.(*binInfo)
	}
	bi := &binInfo{path: name}
	if !strings.ContainsRune(name, filepath.Separator) {
		p, err := exec.LookPath(name)
		if err != nil {
			bi.err = errs.Wrap(errs.Unavailable, err, "git executable %q not found: %v", name, err)
		} else if p, err = filepath.Abs(p); err == nil {
			bi.path = p
		}
	}
	v, _ := bins.LoadOrStore(name, bi)
	return v.(*binInfo)
}

// endOfOptions reports whether the binary understands --end-of-options,
// running `git version` once per binary to find out.
func (g *Git) endOfOptions(ctx context.Context) bool {
	bi := g.resolve()
	bi.verOnce.Do(func() {
		if bi.err != nil {
			return
		}
		cmd := exec.CommandContext(ctx, bi.path, "version")
		cmd.Env = HardenedEnv(os.Environ())
		out, err := cmd.Output()
		if err != nil {
			// Assume a modern git; if it is not, the call fails loudly.
			bi.eoo = true
			return
		}
		bi.eoo = versionAtLeast(string(out), 2, 24)
	})
	return bi.eoo
}

// versionAtLeast parses "git version X.Y.Z..." and compares X.Y.
func versionAtLeast(s string, major, minor int) bool {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "git version "))
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return true
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimLeftFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > major || (ma == major && mi >= minor)
}

// Cmd returns an exec.Cmd for `git <hardening flags> args...` in dir with a
// hardened environment (see the package doc). Stdin is /dev/null; stdout and
// stderr are unset; the context kills git and WaitDelay bounds the wait for
// its pipes. If git cannot be found, Start returns a coded UNAVAILABLE error;
// if the repository config defines a driver gitx cannot neutralise, Start
// returns POLICY_DENIED (fail closed).
func (g *Git) Cmd(ctx context.Context, dir string, args ...string) *exec.Cmd {
	bi := g.resolve()
	over, overErr := driverOverrides(dir)
	full := make([]string, 0, len(globalArgs)+len(over)+len(args))
	full = append(full, globalArgs...)
	full = append(full, over...)
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, bi.path, full...)
	if bi.err != nil {
		cmd.Err = bi.err
	} else if overErr != nil {
		cmd.Err = overErr
	}
	cmd.Dir = dir
	// The user's allowlisted globals, at the global scope (userconfig.go).
	cmd.Env = append(HardenedEnv(os.Environ()), UserConfigEnv())
	cmd.WaitDelay = waitDelay
	return cmd
}

// capWriter keeps the first limit bytes and counts the rest. Once total
// exceeds limit+drain it fails writes, which closes the pipe and lets git
// die of SIGPIPE instead of producing output nobody reads.
type capWriter struct {
	buf     []byte
	limit   int
	drain   int64 // < 0: unlimited
	total   int64
	stopped bool
}

var errDrained = errors.New("gitx: output limit reached")

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.limit - len(w.buf); room > 0 {
		if room > len(p) {
			room = len(p)
		}
		w.buf = append(w.buf, p[:room]...)
	}
	w.total += int64(len(p))
	if w.drain >= 0 && w.total > int64(w.limit)+w.drain {
		w.stopped = true
		return 0, errDrained
	}
	return len(p), nil
}

// runResult is one finished git process.
type runResult struct {
	out       []byte
	total     int64 // bytes of stdout seen (full size unless stopped)
	truncated bool
	stopped   bool // reading stopped early; total is a lower bound
}

// defaultDrain is how much output past the cap is read (and counted) before
// git is cut off.
const defaultDrain = 32 << 20

// Run runs git and returns stdout (capped at maxOut bytes; 0 = 16 MiB;
// truncated reports whether it was cut) and a coded error on failure whose
// message includes trimmed stderr. When output goes more than 32 MiB past the
// cap, git is cut off and its exit status is ignored.
func (g *Git) Run(ctx context.Context, dir string, maxOut int, args ...string) (out []byte, truncated bool, err error) {
	r, err := g.run(ctx, dir, maxOut, defaultDrain, args)
	return r.out, r.truncated, err
}

func (g *Git) run(ctx context.Context, dir string, maxOut int, drain int64, args []string) (runResult, error) {
	if maxOut <= 0 {
		maxOut = DefaultMaxOutput
	}
	if err := ctx.Err(); err != nil {
		return runResult{}, ctxError(err, args)
	}
	cmd := g.Cmd(ctx, dir, args...)
	initial := 4096
	if maxOut < initial {
		initial = maxOut
	}
	stdout := &capWriter{buf: make([]byte, 0, initial), limit: maxOut, drain: drain}
	stderr := &capWriter{limit: maxStderr, drain: -1}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	err := g.runCmd(ctx, cmd, dir, args)
	res := runResult{out: stdout.buf, total: stdout.total, truncated: stdout.total > int64(len(stdout.buf)), stopped: stdout.stopped}
	if err == nil || (stdout.stopped && ctx.Err() == nil) {
		return res, nil
	}
	return res, g.classify(ctx, dir, args, err, stderr.buf)
}

// runCmd runs cmd, confined when g confines.
func (g *Git) runCmd(ctx context.Context, cmd *exec.Cmd, dir string, args []string) error {
	if g.Confine == nil || cmd.Err != nil {
		return cmd.Run()
	}
	start, done, err := g.Confine(ctx, dir, Writable(dir, args))
	if err != nil {
		return err
	}
	defer done()
	if err := start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// Writable returns what git args run in dir may write: nothing for a
// read-only subcommand; else the git directories of the repository that
// holds dir (its .git, a linked worktree's own git dir and the common
// dir), and for `init` dir itself, for `worktree add` the new worktree's
// parent directory.
func Writable(dir string, args []string) []string {
	sub := subcommand(args)
	if readOnly[sub] {
		return nil
	}
	var out []string
	if gd := gitDirFor(dir); gd != "" {
		out = append(out, gd)
		if c, ok, _ := readCommonDir(gd); ok && c != gd {
			out = append(out, c)
		}
	}
	switch sub {
	case "init":
		out = append(out, dir)
	case "apply":
		// apply --index writes the work tree too (--cached only the index).
		if !slices.Contains(args, "--cached") {
			if top := WorkTreeTop(dir); top != "" {
				out = append(out, top)
			}
		}
	case "worktree":
		// worktree add|remove|move [options] [--] <path> ...: the path is
		// the first argument after the verb that is not an option (or
		// after --); its parent gains or loses an entry.
		rest := []string(nil)
		for i, a := range args {
			if a == "add" || a == "remove" || a == "move" {
				rest = args[i+1:]
				break
			}
		}
		endOpts := false
		for _, a := range rest {
			if !endOpts && a == "--" {
				endOpts = true
				continue
			}
			if !endOpts && strings.HasPrefix(a, "-") {
				continue
			}
			p := a
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			out = append(out, filepath.Dir(filepath.Clean(p)))
			break
		}
	}
	return out
}

// readCommonDir returns the common git dir a (linked worktree's) git dir
// names in its commondir file.
func readCommonDir(gitDir string) (string, bool, error) {
	b, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return "", false, nil
	}
	c := strings.TrimSpace(string(b))
	if c == "" {
		return "", false, nil
	}
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	return filepath.Clean(c), true, nil
}

// Start starts cmd, built by Cmd with args, confined as Run confines it:
// for a caller that streams stdin or stdout itself (cat-file --batch). It
// returns the wait that ends it and releases the confinement.
func (g *Git) Start(ctx context.Context, cmd *exec.Cmd, dir string, args ...string) (wait func() error, err error) {
	if g.Confine == nil || cmd.Err != nil {
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return cmd.Wait, nil
	}
	start, done, err := g.Confine(ctx, dir, Writable(dir, args))
	if err != nil {
		return nil, err
	}
	if err := start(cmd); err != nil {
		done()
		return nil, err
	}
	return func() error {
		defer done()
		return cmd.Wait()
	}, nil
}

func ctxError(err error, args []string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errs.Wrap(errs.Timeout, err, "git %s: timed out", subcommand(args))
	}
	return errs.Wrap(errs.Cancelled, err, "git %s: cancelled", subcommand(args))
}

// subcommand names the git subcommand in args for messages.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-c" || a == "-C" {
			i++
			continue
		}
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return "(none)"
}

// classify turns a failed run into a coded error.
func (g *Git) classify(ctx context.Context, dir string, args []string, err error, stderr []byte) error {
	if cerr := ctx.Err(); cerr != nil {
		return ctxError(cerr, args)
	}
	var coded *errs.Error
	if errors.As(err, &coded) {
		return coded
	}
	sub := subcommand(args)
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		// git did not start: most often dir is missing.
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(dir); serr != nil {
				return errs.Wrap(errs.NotFound, err, "directory %q does not exist", dir)
			}
			return errs.Wrap(errs.Unavailable, err, "cannot start git: %v", err)
		}
		if errors.Is(err, fs.ErrPermission) {
			return errs.Wrap(errs.Unavailable, err, "cannot start git in %q: %v", dir, err)
		}
		return errs.Wrap(errs.Internal, err, "git %s: %v", sub, err)
	}
	msg := trimStderr(stderr)
	code := codeForStderr(msg)
	switch code {
	case errs.ConcurrentModification:
		return errs.Wrap(code, err, "git %s failed because another process changed the work tree or index at the same time (exit %d): %s; nothing was changed: retry the call",
			sub, exitErr.ExitCode(), msg).With("exit_code", exitErr.ExitCode()).With("retryable", true)
	case errs.GitIdentityRequired:
		return errs.Wrap(code, err, "git %s needs an author identity and none is configured: run `git config --global user.name \"Your Name\"` and `git config --global user.email you@example.com` (or set them in the repository with `git -C %s config ...`), then retry",
			sub, dir).With("exit_code", exitErr.ExitCode())
	case errs.StorageFull:
		return errs.Wrap(code, err, "no space left on the file system of %s: free space and retry (git %s, exit %d: %s)",
			dir, sub, exitErr.ExitCode(), msg).With("exit_code", exitErr.ExitCode())
	}
	e := errs.Wrap(code, err, "git %s failed (exit %d): %s", sub, exitErr.ExitCode(), msg)
	return e.With("exit_code", exitErr.ExitCode())
}

// trimStderr returns stderr trimmed and bounded for an error message.
func trimStderr(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "(no error output)"
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if len(s) > maxErrorStderr {
		cut := maxErrorStderr
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// stderrCodes maps fragments of git's messages (matched lowercased) to
// codes, first match wins.
var stderrCodes = []struct {
	frag string
	code errs.Code
}{
	// A full disk can make git fail with any of the messages below.
	{"no space left on device", errs.StorageFull},
	{"disk quota exceeded", errs.StorageFull},
	// Another writer changed the work tree or the index while git read
	// or wrote it (a file shrank while hashed, a lock is held, a ref moved
	// under a compare-and-swap): nothing was changed, the same call can
	// succeed.
	{"short read while indexing", errs.ConcurrentModification},
	{".lock': file exists", errs.ConcurrentModification},
	{"unable to write new index file", errs.ConcurrentModification},
	{"but expected", errs.ConcurrentModification}, // cannot lock ref 'x': is at A but expected B
	// No author identity: "Please tell me who you are", "empty ident
	// name (for <...>) not allowed", "unable to auto-detect email address".
	{"please tell me who you are", errs.GitIdentityRequired},
	{"empty ident name", errs.GitIdentityRequired},
	{"unable to auto-detect email address", errs.GitIdentityRequired},
	{"was given and auto-detection is disabled", errs.GitIdentityRequired}, // user.useConfigOnly
	{"not a git repository", errs.NotAGitRepository},
	{"must be run in a work tree", errs.NotAGitRepository},
	{"detected dubious ownership", errs.NotAGitRepository},
	{"cannot use bare repository", errs.NotAGitRepository}, // safe.bareRepository=explicit
	{"unknown revision", errs.NotFound},
	{"bad revision", errs.NotFound},
	{"bad object", errs.NotFound},
	{"invalid object name", errs.NotFound},
	{"not a valid object name", errs.NotFound},
	{"needed a single revision", errs.NotFound},
	{"does not have any commits yet", errs.NotFound},
	{"did not match any file", errs.NotFound},
	{"no such path", errs.NotFound},
	{"unknown option", errs.InvalidArgument},
	{"unknown switch", errs.InvalidArgument},
	{"invalid option", errs.InvalidArgument},
	{"usage: git", errs.InvalidArgument},
	{"outside repository", errs.PathOutsideRoot},
	{"is outside the directory tree", errs.PathOutsideRoot},
}

func codeForStderr(msg string) errs.Code {
	low := strings.ToLower(msg)
	for _, sc := range stderrCodes {
		if strings.Contains(low, sc.frag) {
			return sc.code
		}
	}
	return errs.Internal
}

// Head returns the commit HEAD names in the work tree at dir, or "" on an
// unborn branch.
func (g *Git) Head(ctx context.Context, dir string) (string, error) {
	out, _, err := g.Run(ctx, dir, 0, "rev-parse", "--verify", "--quiet", "HEAD")
	if err != nil {
		if errs.CodeOf(err) == errs.NotFound || len(out) == 0 {
			return "", nil // unborn branch
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// gitDirFor returns the git directory of the repository holding dir (the
// .git directory, or where a .git file points), "" when there is none
// within 64 levels: for the user's includeIf gitdir: conditions.
func gitDirFor(dir string) string {
	d := filepath.Clean(dir)
	for i := 0; i < 64; i++ {
		p := filepath.Join(d, ".git")
		if fi, err := os.Lstat(p); err == nil {
			if fi.IsDir() {
				return p
			}
			if t, ok, _ := readGitFile(p); ok {
				if !filepath.IsAbs(t) {
					t = filepath.Join(d, t)
				}
				return filepath.Clean(t)
			}
			return ""
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
	return ""
}

// WorkTreeTop returns the nearest directory at or above dir holding a .git
// entry, "" when there is none.
func WorkTreeTop(dir string) string {
	d := filepath.Clean(dir)
	for i := 0; i < 64; i++ {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
	return ""
}
