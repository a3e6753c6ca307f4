package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/authority"
)

// Mode says how much confinement harnessd insists on.
type Mode string

// The modes of `harnessd serve --sandbox`.
const (
	// Require refuses to start commands when Landlock is missing.
	Require Mode = "require"
	// Auto confines with every layer the kernel has (the default).
	Auto Mode = "auto"
	// Off confines nothing: the classifier and the argv checks remain.
	Off Mode = "off"
)

// ParseMode parses a --sandbox value.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case Require, Auto, Off:
		return Mode(s), nil
	case "":
		return Auto, nil
	}
	return "", fmt.Errorf("--sandbox %q: one of require, auto, off", s)
}

// Config configures New. Zero fields mean "use the default".
type Config struct {
	Mode Mode
	// Hidden are paths no confined process may see: the data dir (store,
	// sockets, token) above all.
	Hidden []string
	// TmpRoot holds the private tmp of every confined command; "" = a
	// directory of this uid under os.TempDir().
	TmpRoot string
	// Environ is the daemon's environment (PATH, HOME, cache locations);
	// nil = os.Environ().
	Environ []string
	// NoNamespaces keeps every profile on Landlock and seccomp alone.
	NoNamespaces bool
}

// Sandbox confines the processes harnessd starts. Safe for concurrent use.
type Sandbox struct {
	cfg    Config
	kernel Kernel
	env    envInfo
	tmp    string // TmpRoot

	mu    sync.Mutex // protects cache
	cache map[string]*layer

	poolMu sync.Mutex // protects pool, idle and closed
	pool   map[string][]*forker
	idle   int
	closed bool
}

// envInfo is what the daemon's environment says about tools and caches.
type envInfo struct {
	home  string
	path  string
	tools []string
	// creds are the credential homes and files of home (absolute): closed
	// inside every tool and cache directory a confined process sees.
	creds []string
	// modCache is Go's module cache, when it exists: the Fast Path points
	// GOMODCACHE at it (its HOME is a private tmp).
	modCache string
	// cache is harnessd's own cache dir under the tmp root (the Fast
	// Path's GOCACHE): never the user's.
	cache string
	// ns: the rules are the launcher's, in namespaces (caches are
	// copy-on-write layers there).
	ns bool
}

// layer is a cached first-layer ruleset of the Fast Path.
type layer struct {
	fd    int
	flags uint32
}

// New probes the kernel and returns the Sandbox. In Require mode it fails
// without Landlock.
func New(cfg Config) (*Sandbox, error) {
	if cfg.Mode == "" {
		cfg.Mode = Auto
	}
	if cfg.Environ == nil {
		cfg.Environ = os.Environ()
	}
	s := &Sandbox{cfg: cfg, cache: map[string]*layer{}, pool: map[string][]*forker{}}
	if cfg.Mode == Off {
		return s, nil
	}
	s.kernel = Probe()
	// The daemon's own process is not dumpable: a process of the same
	// user (a command that got past every other wall, or one the agent
	// started outside harnessd) cannot read its memory, environment or
	// open files through /proc, nor ptrace it.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if cfg.Mode == Require && s.kernel.LandlockABI == 0 {
		return nil, errors.New("--sandbox=require: this kernel has no Landlock (enable it with lsm=landlock at boot), so commands cannot be confined")
	}
	s.env.home = envGet(cfg.Environ, "HOME")
	s.env.path = envGet(cfg.Environ, "PATH")
	s.env.creds = authority.CredentialPaths(authority.Env{Home: s.env.home, ConfigHome: envGet(cfg.Environ, "XDG_CONFIG_HOME")})
	s.env.tools = toolDirs(s.env.path, s.env.home, cfg.Hidden, cfg.Environ...)
	s.env.modCache = modCache(cfg.Environ, s.env.home)
	s.tmp = cfg.TmpRoot
	if s.tmp == "" {
		s.tmp = filepath.Join(os.TempDir(), "harnessd-sandbox-"+strconv.Itoa(os.Getuid()))
	}
	if err := os.MkdirAll(s.tmp, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox tmp root: %w", err)
	}
	_ = os.Chmod(s.tmp, 0o700)
	s.env.cache = filepath.Join(s.tmp, "cache")
	if err := os.MkdirAll(filepath.Join(s.env.cache, "go-build"), 0o700); err != nil {
		return nil, fmt.Errorf("sandbox cache dir: %w", err)
	}
	return s, nil
}

// TmpRoot is the directory that holds every confined command's private
// tmp and harnessd's own tool caches: no root may be, hold or lie in it.
func (s *Sandbox) TmpRoot() string {
	if s == nil {
		return ""
	}
	return s.tmp
}

// modCache returns Go's module cache as the environment names it
// (GOMODCACHE, else the first GOPATH entry's pkg/mod, else ~/go/pkg/mod),
// when it exists.
func modCache(environ []string, home string) string {
	c := envGet(environ, "GOMODCACHE")
	if c == "" {
		if gp := filepath.SplitList(envGet(environ, "GOPATH")); len(gp) > 0 && gp[0] != "" {
			c = filepath.Join(gp[0], "pkg", "mod")
		} else if home != "" {
			c = filepath.Join(home, "go", "pkg", "mod")
		}
	}
	if c == "" || !filepath.IsAbs(c) {
		return ""
	}
	if fi, err := os.Stat(c); err != nil || !fi.IsDir() {
		return ""
	}
	return filepath.Clean(c)
}

// Close stops the idle forkers and releases the cached rulesets.
func (s *Sandbox) Close() {
	if s == nil {
		return
	}
	s.closePool()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, l := range s.cache {
		if l.fd >= 0 {
			_ = syscall.Close(l.fd)
		}
		delete(s.cache, k)
	}
}

// Mode returns the sandbox mode.
func (s *Sandbox) Mode() Mode {
	if s == nil {
		return Off
	}
	return s.cfg.Mode
}

// Kernel returns what the kernel offers.
func (s *Sandbox) Kernel() Kernel { return s.kernel }

// namespaces reports whether profile p runs in namespaces.
func (s *Sandbox) namespaces(p Profile) bool {
	return p != Read && p != Target && !s.cfg.NoNamespaces && s.kernel.UserNS && Linked()
}

// Namespaced reports whether processes of profile p run in namespaces
// (a mount namespace of their own: copy-on-write checkout and caches,
// hidden paths absent; a network namespace with loopback).
func (s *Sandbox) Namespaced(p Profile) bool {
	return s != nil && s.cfg.Mode != Off && s.namespaces(p)
}

// Visible returns the directories a process confined by policy p sees:
// the system directories, the tool directories (PATH and where its
// programs lead), the root, its git directories, the caches and the
// policy's other readable and writable paths.
func (s *Sandbox) Visible(p Policy) []string {
	out := append([]string(nil), systemReadDirs()...)
	if s != nil {
		out = append(out, s.env.tools...)
	}
	if p.Root != "" {
		out = append(out, p.Root)
	}
	out = append(out, p.GitDirs...)
	out = append(out, p.Caches...)
	out = append(out, p.ReadOnly...)
	return append(out, p.Writable...)
}

// Confines reports whether processes of profile p are confined by the
// kernel: Landlock (or namespaces) keep them from writing outside what
// the policy allows. The Fast Path then needs no before/after snapshot of
// the work tree: a read-only command cannot change it.
func (s *Sandbox) Confines(p Profile) bool {
	if s == nil || s.cfg.Mode == Off {
		return false
	}
	return s.kernel.LandlockABI > 0 || s.namespaces(p)
}

// Status reports, per profile, which layers are active and what a missing
// one weakens.
func (s *Sandbox) Status() []Layers {
	var out []Layers
	for _, p := range Profiles() {
		l := Layers{Profile: p, Mode: "none", PidsLimit: "off"}
		if s == nil || s.cfg.Mode == Off {
			l.Weakened = []string{"the sandbox is off (--sandbox=off): commands run with the daemon's authority; only the classifier and the argv checks stand"}
			out = append(out, l)
			continue
		}
		k := s.kernel
		l.LandlockABI, l.Seccomp = k.LandlockABI, k.Seccomp
		if s.namespaces(p) {
			l.Mode, l.UserNS, l.MountNS, l.PidNS, l.NetNS = "namespaces", true, true, true, true
			l.PidsLimit = "counted in the pid namespace by its init"
			if pidsV1Base() != "" {
				l.PidsLimit = "counted in the pid namespace by its init; cgroup v1 pids.max (about 2 tasks a process) as the kernel's hard stop"
			}
		} else if k.LandlockABI > 0 {
			l.Mode = "landlock"
			l.PidsLimit = "watchdog over the command's process tree"
		}
		if k.LandlockABI == 0 {
			l.Weakened = append(l.Weakened, "no Landlock: file reads and writes outside the policy are not denied by the kernel")
		} else {
			if k.LandlockABI < 4 {
				l.Weakened = append(l.Weakened, "Landlock ABI < 4: TCP is not denied by Landlock (seccomp denies sockets other than AF_UNIX)")
			}
			if k.LandlockABI < 6 {
				l.Weakened = append(l.Weakened, "Landlock ABI < 6: signals and abstract unix sockets are not scoped to the sandbox")
			}
		}
		if !k.Seccomp {
			l.Weakened = append(l.Weakened, "no seccomp: UDP, raw and netlink sockets, io_uring and namespace syscalls, set-ID modes, other processes' limits and priority, the host's name and clock are not filtered")
		}
		if p != Read && p != Target && !s.namespaces(p) {
			why := k.UserNSReason
			switch {
			case s.cfg.NoNamespaces:
				why = "namespaces disabled"
			case !Linked():
				why = "the program embedding harnessd does not link the launcher (call harness.SandboxMain at the start of main)"
			}
			l.Weakened = append(l.Weakened, "no namespaces ("+why+"): the data dir and $HOME are denied by Landlock but visible by name, secret files are closed by Landlock, escaped processes are swept by marker, the network is denied by Landlock and seccomp rather than absent (no loopback of its own either: a test's local server cannot listen), the checkout and caches are read-only rather than copy-on-write (a test that writes golden files fails; Go builds in a private GOCACHE), and a job that writes in the checkout itself is refused (Landlock alone cannot keep .git read-only): use isolation=worktree")
		}
		if p == Read || p == Target {
			l.Weakened = append(l.Weakened, "by design on the Fast Path: no namespaces (they cost milliseconds a command); Landlock and seccomp on the forking thread (no capabilities, no metadata changes by path), rlimits, a process-count watchdog; names in /proc stay listable (another process's environment and memory do not)")
		}
		out = append(out, l)
	}
	return out
}

// Prepared is one command's confinement: made by Prepare, used by the
// runner to start the command (Start) and to clean up after it (Done).
type Prepared struct {
	s      *Sandbox
	p      Policy
	tmp    string // the command's private tmp
	stage  string // the launcher's staging dir (namespaces)
	cow    string // the host dir of its copy-on-write layers (namespaces)
	launch bool
	fk     *forker      // the Fast Path's confined thread, from the pool
	cost   atomic.Int64 // ns spent confining in Start
	specW  *os.File     // the launcher's spec pipe, written after it started
	spec   []byte
	pidsCg string // the cgroup v1 pids group of the launcher, "" = none
}

// Cost is the time Start spent confining: the thread's no_new_privs,
// Landlock and seccomp, or turning the command into the launcher.
func (c *Prepared) Cost() time.Duration { return time.Duration(c.cost.Load()) }

// Prepare makes a command's confinement: its private tmp and, on the Fast
// Path, the cached ruleset of its checkout. A nil *Sandbox (or Off)
// confines nothing.
func (s *Sandbox) Prepare(p Policy) (*Prepared, error) {
	if s == nil || s.cfg.Mode == Off {
		return nil, nil
	}
	if s.cfg.Mode == Require && s.kernel.LandlockABI == 0 {
		return nil, errs.New(errs.Unavailable, "--sandbox=require and the kernel has no Landlock: commands cannot be confined")
	}
	if p.writesRoot() && !p.OwnGit && !s.namespaces(p.Profile) {
		if fi, err := os.Lstat(filepath.Join(p.Root, ".git")); err == nil && fi.IsDir() {
			return nil, errs.New(errs.Unavailable, "sandbox: writing in the checkout %s needs user namespaces here (Landlock alone cannot keep its .git "+
				"read-only); run the job with isolation=worktree, or allow unprivileged user namespaces", p.Root)
		}
	}
	if !s.namespaces(p.Profile) && s.kernel.LandlockABI > 0 {
		// The Fast Path forks from a pooled thread confined for this
		// policy and this state of the tree.
		if key, ok := s.forkerKey(p); ok {
			t0 := time.Now()
			f := s.takeForker(key)
			if f == nil {
				var err error
				if f, err = s.newForker(key, p); err != nil {
					return nil, err
				}
			}
			c := &Prepared{s: s, p: p, tmp: f.tmp, fk: f}
			c.cost.Add(int64(time.Since(t0)))
			return c, nil
		}
	}
	tmp, err := os.MkdirTemp(s.tmp, string(p.Profile)+"-")
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "create the command's private tmp: %v", err)
	}
	c := &Prepared{s: s, p: p, tmp: tmp, launch: s.namespaces(p.Profile)}
	if c.launch {
		c.stage = filepath.Join(tmp, ".stage")
		c.tmp = filepath.Join(tmp, "tmp")
		c.cow = filepath.Join(tmp, "cow")
		for _, d := range []string{c.stage, c.tmp, c.cow} {
			if err := os.Mkdir(d, 0o700); err != nil {
				c.Done()
				return nil, errs.Wrap(errs.Internal, err, "create the sandbox staging dir: %v", err)
			}
		}
	}
	return c, nil
}

// Tmp returns the command's private tmp as the command sees it.
func (c *Prepared) Tmp() string {
	if c.launch {
		return "/tmp"
	}
	return c.tmp
}

// Env returns env for the confined command: TMPDIR in its private tmp;
// on the Fast Path, HOME there too, Go's build cache in harnessd's own
// cache dir (never the user's) and its module cache where it is (read
// only); for checks and jobs without namespaces, a build cache in the
// private tmp (the user's caches are read-only to them). In namespaces
// HOME is a private tmpfs with the user's caches as copy-on-write layers:
// the tools find them where they always do.
func (c *Prepared) Env(env []string) []string {
	set := map[string]string{"TMPDIR": c.Tmp()}
	switch {
	case c.p.Profile == Read || c.p.Profile == Target:
		set["HOME"] = c.Tmp()
		set["XDG_CACHE_HOME"] = c.Tmp() + "/.cache"
		set["GOCACHE"] = filepath.Join(c.s.env.cache, "go-build")
		if c.s.env.modCache != "" && envGet(env, "GOMODCACHE") == "" {
			set["GOMODCACHE"] = c.s.env.modCache
		}
		// go build stamps the version control state by running the
		// checkout's VCS program (hg, svn, ... with the repository's own
		// config): not on the Fast Path. The user's other flags stay.
		if f := envGet(env, "GOFLAGS"); !strings.Contains(f, "-buildvcs") {
			set["GOFLAGS"] = strings.TrimSpace(f + " -buildvcs=false")
		}
	case !c.launch:
		set["GOCACHE"] = c.Tmp() + "/go-build"
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"HOME", "TMPDIR", "XDG_CACHE_HOME", "GOCACHE", "GOMODCACHE", "GOFLAGS"} {
		if v, ok := set[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// PidsMax is the process-count ceiling the runner enforces (the launcher
// enforces it itself in a pid namespace: 0 then).
func (c *Prepared) PidsMax() int {
	if c.launch {
		return 0
	}
	return c.p.pidsMax()
}

// Namespaced reports whether the command runs in namespaces.
func (c *Prepared) Namespaced() bool { return c.launch }

// Start starts cmd confined. It forks from an OS thread of its own that
// stays alive until exited is closed (the child's Pdeathsig is tied to
// the thread that forked it), then ends with it: on the Fast Path that
// thread carries the Landlock domain, the seccomp filter and no_new_privs
// the child inherits; in namespaces, cmd becomes the launcher.
func (c *Prepared) Start(cmd *exec.Cmd, exited <-chan struct{}) error {
	if c.fk != nil {
		if err := c.fk.start(cmd); err != nil {
			return err
		}
		c.rlimits(cmd.Process.Pid)
		return nil
	}
	t0 := time.Now()
	if c.launch {
		if err := c.toLauncher(cmd); err != nil {
			return err
		}
		c.cost.Add(int64(time.Since(t0)))
	}
	if c.launch {
		// pids.max counts threads too (a build's compilers have many): it
		// is the kernel's hard stop at about two tasks a process, the init's
		// count keeps the processes to the policy's ceiling.
		c.pidsCg = newPidsGroup(filepath.Base(filepath.Dir(c.tmp)), 2*c.p.pidsMax()+64)
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread is confined (or holds the launcher's
		// Pdeathsig) and must die with this goroutine.
		runtime.LockOSThread()
		if !c.launch {
			t1 := time.Now()
			if err := c.confineThread(); err != nil {
				errc <- err
				return
			}
			c.cost.Add(int64(time.Since(t1)))
		}
		err := cmd.Start()
		if err == nil && !c.launch {
			c.rlimits(cmd.Process.Pid)
		}
		errc <- err
		if err == nil {
			<-exited
		}
	}()
	err := <-errc
	if c.launch && cmd.ExtraFiles != nil {
		for _, f := range cmd.ExtraFiles {
			_ = f.Close()
		}
	}
	if c.specW != nil {
		w, b := c.specW, c.spec
		c.specW, c.spec = nil, nil
		if err != nil {
			_ = w.Close()
			return err
		}
		if c.pidsCg != "" {
			if aerr := addToPidsGroup(c.pidsCg, cmd.Process.Pid); aerr != nil {
				c.pidsCg = "" // the launcher's count still holds
			}
		}
		go func() {
			_, _ = w.Write(b)
			_ = w.Close()
		}()
	}
	return err
}

// Done removes the command's private tmp; call it once the command ended.
func (c *Prepared) Done() {
	if c == nil {
		return
	}
	if c.fk != nil {
		f := c.fk
		c.fk = nil
		c.s.putForker(f)
		return
	}
	root := c.tmp
	if c.launch {
		root = filepath.Dir(c.tmp)
	}
	removeTree(root)
	if c.pidsCg != "" {
		removePidsGroup(c.pidsCg)
		c.pidsCg = ""
	}
}

// confineThread confines the calling (locked) thread: no_new_privs, the
// Landlock layers, the seccomp filter.
func (c *Prepared) confineThread() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return errs.Wrap(errs.Internal, err, "sandbox: no_new_privs: %v", err)
	}
	// A daemon run as root forks its commands as root: without this they
	// would keep every capability (chown anything, read any process's
	// memory, set file capabilities, renice the daemon).
	if err := dropThreadCaps(); err != nil {
		return errs.Wrap(errs.Internal, err, "sandbox: drop capabilities: %v", err)
	}
	if c.s.kernel.LandlockABI > 0 {
		fd, flags, owned, err := c.s.firstLayer(c.p)
		if err != nil {
			return err
		}
		if fd >= 0 {
			err := ll.LandlockRestrictSelf(fd, flags)
			if owned {
				_ = syscall.Close(fd)
			}
			if err != nil {
				return errs.Wrap(errs.Internal, err, "sandbox: landlock: %v", err)
			}
		}
		fd2, flags2, err := secondLayerFD(c.p, c.tmp, c.s.env.cache)
		if err != nil {
			return errs.Wrap(errs.Internal, err, "sandbox: landlock tmp layer: %v", err)
		}
		if fd2 >= 0 {
			err = ll.LandlockRestrictSelf(fd2, flags2)
			_ = syscall.Close(fd2)
			if err != nil {
				return errs.Wrap(errs.Internal, err, "sandbox: landlock tmp layer: %v", err)
			}
		}
	}
	if c.s.kernel.Seccomp {
		// No mount namespace: no unix sockets (they connect by path), and
		// on the Fast Path no metadata changes by path (every path of the
		// host is walkable by name).
		fast := (c.p.Profile == Read || c.p.Profile == Target) && !c.p.Metadata
		if err := loadFilter(filterOpts{network: c.p.Network, noUnix: true, pathMeta: fast}); err != nil {
			return errs.Wrap(errs.Internal, err, "sandbox: seccomp: %v", err)
		}
	}
	return nil
}

// firstLayer returns the cached ruleset of p's checkout, secrets and tools;
// writes are allowed only under the tmp root (the second layer narrows them
// to the command's own tmp).
func (s *Sandbox) firstLayer(p Policy) (fd int, flags uint32, owned bool, err error) {
	stamp, settled := carveStamp(p, time.Now())
	if !settled {
		// A directory changed too recently for its mtime to tell a later
		// change: build a ruleset for this command alone.
		fd, flags, err := rulesetFD(p, s.tmp, s.env)
		if err != nil {
			return -1, 0, false, errs.Wrap(errs.Internal, err, "sandbox: build the Landlock ruleset: %v", err)
		}
		return fd, flags, true, nil
	}
	key := policyKey(p, stamp)
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.cache[key]; ok {
		return l.fd, l.flags, false, nil
	}
	fd, flags, err = rulesetFD(p, s.tmp, s.env)
	if err != nil {
		return -1, 0, false, errs.Wrap(errs.Internal, err, "sandbox: build the Landlock ruleset: %v", err)
	}
	if len(s.cache) > 256 {
		for k, l := range s.cache {
			if l.fd >= 0 {
				_ = syscall.Close(l.fd)
			}
			delete(s.cache, k)
		}
	}
	s.cache[key] = &layer{fd: fd, flags: flags}
	return fd, flags, false, nil
}

// policyKey identifies a policy and the stamp of its tree.
func policyKey(p Policy, stamp string) string {
	return string(p.Profile) + "\x00" + p.Root + "\x00" + strings.Join(p.Secrets, "\x01") + "\x00" + strings.Join(p.GitDirs, "\x01") +
		"\x00" + strings.Join(p.ReadOnly, "\x01") + "\x00" + stamp +
		"\x00" + strings.Join(p.Writable, "\x01") + "\x00" + strings.Join(p.Caches, "\x01") + "\x00" + strconv.FormatBool(p.Network) +
		"\x00" + strconv.Itoa(p.pidsMax()) + "\x00" + strconv.FormatUint(p.noFile(), 10) + "\x00" + strconv.FormatUint(p.cpuSeconds(), 10) +
		"\x00" + strconv.FormatBool(p.Metadata) + "\x00" + fmt.Sprint(p.ConnectPorts)
}

// forkerKey returns the pool key of p, and false when the tree changed too
// recently for a confined thread to be reused (see carveStamp).
func (s *Sandbox) forkerKey(p Policy) (string, bool) {
	stamp, settled := carveStamp(p, time.Now())
	return policyKey(p, stamp), settled
}

// carveStamp identifies the directories a carve walks (the root and those
// on the way to each secret, and /etc) and the files the rules bind one by
// one (Policy.ReadOnly): a rule set built from their entries
// is stale once one of them gains or loses an entry, which changes its
// mtime. settled is false when one changed less than a second before now
// (file times are coarse: a second change in the same tick keeps the mtime).
func carveStamp(p Policy, now time.Time) (_ string, settled bool) {
	var b strings.Builder
	settled = true
	stamp := func(d string) {
		if fi, err := os.Lstat(d); err == nil {
			if now.Sub(fi.ModTime()) < time.Second {
				settled = false
			}
			b.WriteString(strconv.FormatInt(fi.ModTime().UnixNano(), 36))
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				b.WriteByte('.')
				b.WriteString(strconv.FormatUint(st.Ino, 36))
			}
		}
		b.WriteByte(',')
	}
	stamp("/etc")
	if p.Root != "" {
		// The ruleset holds the root by its inode: another directory
		// put at the same path (a replaced repository) needs its own.
		var st syscall.Stat_t
		if syscall.Stat(p.Root, &st) == nil {
			b.WriteString("root." + strconv.FormatUint(uint64(st.Dev), 36) + "." + strconv.FormatUint(st.Ino, 36) + ",")
		}
	}
	// Files and dirs the rules bind one by one (the user's git ignore
	// file): a file renamed into place is a new inode the old rule does
	// not reach.
	for _, f := range p.ReadOnly {
		stamp(f)
	}
	if p.Root == "" || len(p.Secrets) == 0 {
		return b.String(), settled
	}
	seen := map[string]bool{}
	for _, sec := range p.Secrets {
		d := p.Root
		for _, part := range strings.Split(path.Dir(sec), "/") {
			if !seen[d] {
				seen[d] = true
				stamp(d)
			}
			if part == "." || part == "" {
				break
			}
			d = filepath.Join(d, part)
		}
		if !seen[d] {
			seen[d] = true
			stamp(d)
		}
	}
	return b.String(), settled
}

// rlimits applies the command's rlimits right after it started (an exec
// cannot carry them: rlimits are per process in Linux, so the forking
// thread cannot set them without setting them for the daemon).
func (c *Prepared) rlimits(pid int) {
	nofile := c.p.noFile()
	_ = unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: nofile, Max: nofile}, nil)
	if cpu := c.p.cpuSeconds(); cpu > 0 {
		_ = unix.Prlimit(pid, unix.RLIMIT_CPU, &unix.Rlimit{Cur: cpu, Max: cpu + 5}, nil)
	}
}

func envGet(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}

// removeTree removes dir and what it holds, also where a copy-on-write
// layer left a directory without permissions (overlayfs makes its work dir
// mode 0).
func removeTree(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		} else if err != nil {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
