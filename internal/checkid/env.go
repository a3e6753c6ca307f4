package checkid

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/harnessd/harnessd/contract/errs"
)

// Env is the part of a check's environment that can change its outcome.
type Env struct {
	// Vars holds the allowlisted variables present in the environment.
	Vars map[string]string `json:"vars"`
	// Tools maps a toolchain ("go", "node", "python3", "cargo", "rustc",
	// "make") to its version line, or an unknown program (argv[0] as given)
	// to "sha256:<hex>" over its resolved path, size and mtime. Probes that
	// fail give "unavailable: <reason>".
	Tools  map[string]string `json:"tools"`
	Digest string            `json:"digest"` // see ComputeDigest
}

// DefaultEnvAllowlist is the allowlist of NewEnvProbe(nil).
var DefaultEnvAllowlist = []string{"GOFLAGS", "GOOS", "GOARCH", "CGO_ENABLED", "GOEXPERIMENT", "GOTOOLCHAIN", "NODE_ENV", "NODE_OPTIONS", "PYTHONPATH", "RUSTFLAGS", "CARGO_BUILD_TARGET", "CI", "TZ", "LANG", "LC_ALL", "PATH"}

// DefaultProbeTimeout bounds one tool version probe.
const DefaultProbeTimeout = 5 * time.Second

// maxProbeOutput bounds what is kept of a probe's output.
const maxProbeOutput = 64 << 10

// maxVersionLen bounds a recorded version line.
const maxVersionLen = 200

// Unavailable is the prefix of a Tools value whose probe failed.
const Unavailable = "unavailable: "

// EnvProbe fingerprints check environments. It caches tool versions per
// (tool, PATH and the few variables the probe sees) for the life of the
// process, revalidated by the size and mtime of the probed executable, so a
// reinstalled toolchain is noticed. Concurrent callers share one probe. It is
// safe for concurrent use.
type EnvProbe struct {
	allow   []string
	timeout time.Duration

	mu    sync.Mutex             // protects cache
	cache map[string]*probeEntry // probe key -> entry
}

// probeEntry is one probe, running (done open) or finished.
type probeEntry struct {
	stamp string        // executable stamp the probe ran against
	done  chan struct{} // closed when value is set
	value string
}

// NewEnvProbe returns a probe keeping the variables named by allowlist
// (nil means DefaultEnvAllowlist; an empty, non-nil list keeps none).
func NewEnvProbe(allowlist []string) *EnvProbe {
	if allowlist == nil {
		allowlist = DefaultEnvAllowlist
	}
	return &EnvProbe{
		allow:   append([]string(nil), allowlist...),
		timeout: DefaultProbeTimeout,
		cache:   map[string]*probeEntry{},
	}
}

// toolProbe is one version command.
type toolProbe struct {
	name string   // Tools key and executable looked up on PATH
	args []string // arguments giving the version
}

// toolchains maps a program's base name to the probes of its toolchain.
var toolchains = map[string][]toolProbe{
	"go":      {{name: "go", args: []string{"version"}}},
	"gofmt":   {{name: "go", args: []string{"version"}}},
	"node":    {{name: "node", args: []string{"--version"}}},
	"nodejs":  {{name: "node", args: []string{"--version"}}},
	"npm":     {{name: "node", args: []string{"--version"}}},
	"npx":     {{name: "node", args: []string{"--version"}}},
	"jest":    {{name: "node", args: []string{"--version"}}},
	"vitest":  {{name: "node", args: []string{"--version"}}},
	"python":  {{name: "python3", args: []string{"--version"}}},
	"python3": {{name: "python3", args: []string{"--version"}}},
	"pytest":  {{name: "python3", args: []string{"--version"}}},
	"cargo":   {{name: "cargo", args: []string{"--version"}}, {name: "rustc", args: []string{"--version"}}},
	"make":    {{name: "make", args: []string{"--version"}}},
}

// probeEnvVars are taken from the check's environment into a probe's; they
// decide which toolchain answers (rustup proxies read them).
var probeEnvVars = []string{"PATH", "HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "CARGO_HOME"}

// Fingerprint returns the Env of a check about to run argv with environ
// (nil environ means os.Environ(), as for exec.Cmd).
//
// Vars holds the allowlisted variables present in environ (last occurrence
// wins). Tools holds the version of argv[0]'s toolchain: go -> `go version`;
// node, npm, npx, jest, vitest -> `node --version`; python, python3, pytest
// -> `python3 --version`; cargo -> `cargo --version` and `rustc --version`;
// make -> the first line of `make --version`. Executables are looked up on
// environ's PATH (and an absolute argv[0] naming the toolchain's own
// program is probed itself). Probes run in "/" with a minimal environment
// (GOTOOLCHAIN=local: never a download) and a 5 s timeout; a failure is
// recorded as "unavailable: ...", not returned. Any other program is
// recorded as sha256 of its resolved path, size and mtime (not its
// content); a relative path with a slash is recorded as is, since it names a
// file in the repository that the Revision covers.
//
// Errors: INVALID_ARGUMENT for an empty argv, CANCELLED/TIMEOUT when ctx
// ends while waiting for a probe.
func (p *EnvProbe) Fingerprint(ctx context.Context, argv []string, environ []string) (Env, error) {
	if len(argv) == 0 || argv[0] == "" {
		return Env{}, errs.New(errs.InvalidArgument, "argv must name a program")
	}
	if environ == nil {
		environ = os.Environ()
	}
	env := Env{Vars: map[string]string{}, Tools: map[string]string{}}
	for _, name := range p.allow {
		if v, ok := lookupEnv(environ, name); ok {
			env.Vars[name] = v
		}
	}

	prog := argv[0]
	base := filepath.Base(prog)
	probes, known := toolchains[base]
	if !known && strings.HasPrefix(base, "python3.") {
		probes, known = []toolProbe{{name: base, args: []string{"--version"}}}, true
	}
	if !known {
		env.Tools[prog] = executableStamp(prog, environ)
	} else {
		penv := probeEnv(environ)
		type pending struct {
			name string
			e    *probeEntry
		}
		var waits []pending
		for _, tp := range probes {
			exe := ""
			if filepath.IsAbs(prog) && base == tp.name {
				exe = prog
			}
			name, e := p.start(tp, exe, penv)
			if e == nil {
				env.Tools[tp.name] = name
				continue
			}
			waits = append(waits, pending{tp.name, e})
		}
		for _, w := range waits {
			select {
			case <-w.e.done:
				env.Tools[w.name] = w.e.value
			case <-ctx.Done():
				return Env{}, probeCtxError(ctx.Err())
			}
		}
	}
	env.Digest = env.ComputeDigest()
	return env, nil
}

// start returns the cached or newly started probe entry for tp, or (value,
// nil) when the executable cannot be found.
func (p *EnvProbe) start(tp toolProbe, exe string, penv []string) (string, *probeEntry) {
	path, _ := lookupEnv(penv, "PATH")
	if exe == "" {
		var err error
		if exe, err = lookPathIn(tp.name, path); err != nil {
			return Unavailable + err.Error(), nil
		}
	}
	stamp, err := statStamp(exe)
	if err != nil {
		return Unavailable + err.Error(), nil
	}
	key := tp.name + "\x00" + exe + "\x00" + strings.Join(penv, "\x00")
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.cache[key]; ok && e.stamp == stamp {
		return "", e
	}
	e := &probeEntry{stamp: stamp, done: make(chan struct{})}
	p.cache[key] = e
	go func() {
		// Detached from the caller: a cancelled caller must not cache a
		// failure for everyone else. The timeout bounds it.
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		defer cancel()
		e.value = runProbe(ctx, exe, tp, penv, p.timeout)
		close(e.done)
	}()
	return "", e
}

// runProbe runs one version command and returns its version line or
// "unavailable: ...".
func runProbe(ctx context.Context, exe string, tp toolProbe, penv []string, timeout time.Duration) string {
	cmd := exec.CommandContext(ctx, exe, tp.args...)
	cmd.Dir = "/"
	cmd.Env = penv
	out := &capBuffer{limit: maxProbeOutput}
	cmd.Stdout = out
	cmd.Stderr = out // python 2 prints its version on stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Kill the whole group: npm and friends start children.
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	line := versionLine(out.Bytes())
	if err != nil {
		if ctx.Err() != nil {
			return Unavailable + tp.name + " did not answer within " + timeout.String()
		}
		msg := Unavailable + tp.name + ": " + err.Error()
		if line != "" {
			msg += ": " + line
		}
		return msg
	}
	if line == "" {
		return Unavailable + tp.name + " printed no version"
	}
	return line
}

// versionLine returns the first non-empty line of out, trimmed, valid UTF-8
// and bounded.
func versionLine(out []byte) string {
	for _, l := range bytes.Split(out, []byte("\n")) {
		s := strings.TrimSpace(strings.ToValidUTF8(string(l), "\uFFFD"))
		if s == "" {
			continue
		}
		if len(s) > maxVersionLen {
			cut := maxVersionLen
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			s = s[:cut] + "..."
		}
		return s
	}
	return ""
}

// capBuffer keeps the first limit bytes written to it.
type capBuffer struct {
	mu    sync.Mutex // protects buf (stdout and stderr share it)
	buf   []byte
	limit int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capBuffer) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf
}

// probeEnv is the environment of a probe: the few variables that select a
// toolchain, then fixed settings.
func probeEnv(environ []string) []string {
	env := make([]string, 0, len(probeEnvVars)+3)
	for _, name := range probeEnvVars {
		if v, ok := lookupEnv(environ, name); ok {
			env = append(env, name+"="+v)
		}
	}
	return append(env, "GOTOOLCHAIN=local", "LANG=C", "LC_ALL=C")
}

// lookupEnv returns the last value of name in environ.
func lookupEnv(environ []string, name string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		kv := environ[i]
		if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
			return kv[len(name)+1:], true
		}
	}
	return "", false
}

// lookPathIn finds an executable regular file called name in the
// directories of path. Empty and relative entries are skipped: a check's
// working directory must never supply a toolchain.
func lookPathIn(name, path string) (string, error) {
	if path == "" {
		return "", errors.New(name + " not found: PATH is empty")
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		return p, nil
	}
	return "", errors.New(name + " not found in PATH")
}

// statStamp is the cheap identity of an executable: its resolved path, size
// and modification time (through symlinks).
func statStamp(exe string) (string, error) {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return "", errors.New("cannot resolve " + exe + ": " + errText(err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", errors.New("cannot stat " + exe + ": " + errText(err))
	}
	return real + "\x00" + strconv.FormatInt(fi.Size(), 10) + "\x00" + strconv.FormatInt(fi.ModTime().UnixNano(), 10), nil
}

// executableStamp is the Tools value of a program without a version probe.
func executableStamp(prog string, environ []string) string {
	exe := prog
	if strings.ContainsRune(prog, '/') {
		if !filepath.IsAbs(prog) {
			// In the repository (or relative to the check's cwd): its
			// content is part of the Revision.
			return "relative:" + prog
		}
	} else {
		path, _ := lookupEnv(environ, "PATH")
		var err error
		if exe, err = lookPathIn(prog, path); err != nil {
			return Unavailable + err.Error()
		}
	}
	stamp, err := statStamp(exe)
	if err != nil {
		return Unavailable + err.Error()
	}
	sum := sha256.Sum256([]byte(stamp))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// errText is err's message without the operation and path that os adds.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func probeCtxError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errs.Wrap(errs.Timeout, err, "waiting for tool version probes timed out")
	}
	return errs.Wrap(errs.Cancelled, err, "waiting for tool version probes was cancelled")
}
