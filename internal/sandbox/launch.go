package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/errs"
)

// LaunchArg is the hidden argument that makes harnessd the launcher: the
// first argument of a process the parent started with it.
const LaunchArg = "__harnessd-sandbox-launch"

// linked is set by Main: the program can run as the launcher.
var linked atomic.Bool

// Linked reports whether this program runs the launcher when re-executed
// (its main calls Main first). Without it, no profile gets namespaces.
func Linked() bool { return linked.Load() }

// Main must be called first thing in main (and in TestMain of tests that
// start confined jobs): when the process is a launcher it confines itself
// and runs the command, and never returns; otherwise it records that the
// launcher is available and returns.
func Main() {
	if len(os.Args) > 1 && os.Args[1] == LaunchArg {
		os.Exit(launcher())
	}
	linked.Store(true)
}

// launchSpec is what the parent hands the launcher on fd 3.
type launchSpec struct {
	Policy Policy   `json:"policy"`
	Stage  string   `json:"stage"`  // the empty dir the new root is built in
	Tmp    string   `json:"tmp"`    // the host dir mounted at /tmp
	Home   string   `json:"home"`   // $HOME: a private tmpfs with the caches bound in
	Hidden []string `json:"hidden"` // over-mounted empty when under a bound dir
	Tools  []string `json:"tools"`  // tool dirs outside the system dirs
	Creds  []string `json:"creds"`  // credential files and homes: closed wherever they are bound
	Cow    string   `json:"cow"`    // a host dir for the copy-on-write layers' upper and work dirs
	Path   string   `json:"path"`   // the command
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	Dir    string   `json:"dir"`
}

// toLauncher turns cmd into the launcher of itself: harnessd re-executed
// in new namespaces, with the spec on fd 3.
func (c *Prepared) toLauncher(cmd *exec.Cmd) error {
	exe, err := os.Executable()
	if err != nil {
		return errs.Wrap(errs.Internal, err, "sandbox: find the harnessd executable: %v", err)
	}
	spec := launchSpec{Policy: c.p, Stage: c.stage, Tmp: c.tmp, Home: c.s.env.home, Hidden: c.s.cfg.Hidden, Tools: c.s.env.tools,
		Creds: c.s.env.creds, Cow: c.cow, Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir}
	b, err := json.Marshal(spec)
	if err != nil {
		return errs.Wrap(errs.Internal, err, "sandbox: encode the launch spec: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return errs.Wrap(errs.Internal, err, "sandbox: spec pipe: %v", err)
	}
	// The spec is written once the launcher started (and was put in its
	// pids group): it waits for it before anything else.
	c.specW, c.spec = w, b
	cmd.Path = exe
	cmd.Args = []string{exe, LaunchArg}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{r}
	// The launcher's own environment: nothing of the command's (it gets
	// its env from the spec).
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	attr := nsAttr(os.Getuid(), os.Getgid(), !c.p.Network)
	if cmd.SysProcAttr != nil {
		attr.Setpgid, attr.Pdeathsig = cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pdeathsig
	}
	cmd.SysProcAttr = attr
	return nil
}

// launcher runs in the new namespaces as pid 1: it reads the spec, builds
// the new root, confines itself (Landlock, seccomp, rlimits) and runs the
// command as its child, forwarding signals, reaping orphans, killing the
// namespace's processes past the pids ceiling, and exiting with the
// command's status. When it exits, the kernel kills every process left in
// the pid namespace.
func launcher() int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "harnessd sandbox: "+format+"\n", a...)
		return 126
	}
	f := os.NewFile(3, "spec")
	b, err := io.ReadAll(io.LimitReader(f, 16<<20))
	_ = f.Close()
	if err != nil {
		return fail("read the launch spec: %v", err)
	}
	var spec launchSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fail("decode the launch spec: %v", err)
	}
	if err := buildRoot(spec); err != nil {
		return fail("build the sandbox root: %v", err)
	}
	if !spec.Policy.Network {
		if err := loopbackUp(); err != nil {
			return fail("bring up loopback: %v", err)
		}
	}
	// The rest runs on one OS thread: the Landlock domain, the seccomp
	// filter, no_new_privs and the dropped capabilities are per thread;
	// the command inherits them from the thread that forks it, and the
	// init loop signals it from that same thread (Landlock scopes signals
	// to the sender's own domain).
	runtime.LockOSThread()
	if err := confineThread(spec); err != nil {
		return fail("%v", err)
	}
	return runInit(spec)
}

// mountSpec is one mount of the new root.
type mountSpec struct {
	src, dst string
	ro       bool
	// cow mounts src as the lower layer of an overlay whose upper layer
	// is private to the command: it writes, and its writes are dropped.
	cow bool
}

// cowProfile reports whether p sees its checkout and caches through a
// copy-on-write layer: checks and jobs in namespaces whose checkout is not
// writable (tests may write golden files and caches, nothing reaches the
// checkout).
func cowProfile(p Policy) bool { return p.Profile == Check || p.Profile == Job }

// buildRoot builds the new root in spec.Stage and pivots into it: a
// minimal /dev with a private /dev/shm (first, so a checkout that lives
// below /dev/shm is bound on top of it, not hidden by it), the system dirs
// and the tools bound read-only, a private /tmp, a fresh /proc, $HOME a
// private tmpfs with the caches as copy-on-write layers, the checkout
// read-only, writable or copy-on-write, and every secret path, credential
// file and hidden dir under a bound dir over-mounted empty. Every bind is
// nosuid.
func buildRoot(spec launchSpec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	root := spec.Stage
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount the root tmpfs: %w", err)
	}
	if err := buildDev(root); err != nil {
		return err
	}
	p := spec.Policy
	cow := cowProfile(p)
	var ms []mountSpec
	for _, d := range append(systemReadDirs(), spec.Tools...) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			ms = append(ms, mountSpec{src: d, dst: d, ro: true})
		}
	}
	if spec.Home != "" {
		ms = append(ms, mountSpec{src: "", dst: spec.Home}) // tmpfs
	}
	// The private /tmp, before what may live below /tmp (a checkout there).
	ms = append(ms, mountSpec{src: spec.Tmp, dst: "/tmp"})
	for _, d := range p.Caches {
		ms = append(ms, mountSpec{src: d, dst: d, ro: !cow, cow: cow})
	}
	for _, d := range append(append([]string(nil), p.GitDirs...), p.ReadOnly...) {
		ms = append(ms, mountSpec{src: d, dst: d, ro: true})
	}
	if p.Root != "" {
		w := p.writesRoot()
		ms = append(ms, mountSpec{src: p.Root, dst: p.Root, ro: !w && !cow, cow: !w && cow})
	}
	for _, d := range p.Writable {
		if d != p.Root {
			ms = append(ms, mountSpec{src: d, dst: d})
		}
	}
	// Parents before children.
	sort.SliceStable(ms, func(i, j int) bool { return strings.Count(ms[i].dst, "/") < strings.Count(ms[j].dst, "/") })
	layers := 0
	for _, m := range ms {
		if m.cow {
			layers++
			if err := mountCow(root, m, filepath.Join(spec.Cow, strconv.Itoa(layers))); err != nil {
				return err
			}
			continue
		}
		if err := mountInto(root, m); err != nil {
			return err
		}
	}
	// .git stays read-only even in a writable checkout.
	if p.Root != "" && p.writesRoot() && !p.OwnGit {
		if fi, err := os.Lstat(filepath.Join(p.Root, ".git")); err == nil && fi.IsDir() {
			if err := mountInto(root, mountSpec{src: filepath.Join(p.Root, ".git"), dst: filepath.Join(p.Root, ".git"), ro: true}); err != nil {
				return err
			}
		}
	}
	// /proc, /sys.
	if err := os.MkdirAll(root+"/proc", 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", root+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := mountInto(root, mountSpec{src: "/sys", dst: "/sys", ro: true}); err != nil {
		return err
	}
	// Closed paths: secrets of the checkout, system secrets, credential
	// files wherever a tool or cache dir brought them in, hidden dirs.
	var closed []string
	for _, s := range p.Secrets {
		closed = append(closed, filepath.Join(p.Root, filepath.FromSlash(s)))
	}
	closed = append(closed, systemSecrets()...)
	closed = append(closed, spec.Creds...)
	for _, c := range closed {
		if err := closeIn(root, c); err != nil {
			return err
		}
	}
	// A hidden dir may hold what the policy binds (a job's worktree lives
	// in the data dir): everything in it but the way to those is closed.
	var bound []string
	for _, m := range ms {
		bound = append(bound, m.dst)
	}
	for _, h := range spec.Hidden {
		if err := closeExcept(root, h, bound); err != nil {
			return err
		}
	}
	// Pivot.
	old := filepath.Join(root, ".oldroot")
	if err := os.Mkdir(old, 0o700); err != nil {
		return err
	}
	if err := unix.PivotRoot(root, old); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.oldroot", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the old root: %w", err)
	}
	_ = os.Remove("/.oldroot")
	// The root tmpfs itself: read-only from now on.
	_ = unix.MountSetattr(-1, "/", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	return nil
}

// mountInto bind-mounts m.src at root+m.dst (a tmpfs when src is ""),
// nosuid, and read-only (recursively) when m.ro.
func mountInto(root string, m mountSpec) error {
	dst := filepath.Join(root, m.dst)
	isFile := false
	if m.src != "" {
		fi, err := os.Stat(m.src)
		if err != nil {
			return nil // gone meanwhile: nothing to bind
		}
		isFile = !fi.IsDir()
	}
	if isFile {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if f, err := os.OpenFile(dst, os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
			_ = f.Close()
		}
	} else if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", m.dst, err)
	}
	if m.src == "" {
		if err := unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
			return fmt.Errorf("mount tmpfs at %s: %w", m.dst, err)
		}
		return nil
	}
	if err := unix.Mount(m.src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", m.dst, err)
	}
	// No set-ID program runs with its owner's rights from a bind (a
	// setuid-root binary a writable checkout somehow holds stays inert).
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}
	if m.ro {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(-1, dst, unix.AT_RECURSIVE, &attr); err != nil {
		if m.ro {
			return fmt.Errorf("make %s read-only: %w", m.dst, err)
		}
	}
	return nil
}

// mountCow mounts m.src at root+m.dst as the lower layer of an overlay
// whose upper and work dirs are made in layer (a host dir private to the
// command, dropped with it): the command writes, nothing reaches m.src.
// Where the kernel refuses the overlay (no unprivileged overlayfs, or an
// upper file system without the xattrs it needs), the upper layer moves to
// a tmpfs; failing that, m.src is bound read-only as without copy-on-write.
func mountCow(root string, m mountSpec, layer string) error {
	fi, err := os.Stat(m.src)
	if err != nil {
		return nil // gone meanwhile: nothing to mount
	}
	if !fi.IsDir() {
		return mountInto(root, mountSpec{src: m.src, dst: m.dst, ro: true})
	}
	dst := filepath.Join(root, m.dst)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", m.dst, err)
	}
	try := func(base string) bool {
		upper, work := filepath.Join(base, "upper"), filepath.Join(base, "work")
		if os.MkdirAll(upper, 0o755) != nil || os.MkdirAll(work, 0o700) != nil {
			return false
		}
		opts := "lowerdir=" + overlayEscape(m.src) + ",upperdir=" + overlayEscape(upper) + ",workdir=" + overlayEscape(work)
		for _, o := range []string{opts + ",userxattr", opts} {
			if unix.Mount("overlay", dst, "overlay", unix.MS_NOSUID|unix.MS_NODEV, o) == nil {
				return true
			}
		}
		return false
	}
	if layer != "" && try(layer) {
		return nil
	}
	mem := layer + "-mem"
	if layer != "" && os.MkdirAll(mem, 0o700) == nil &&
		unix.Mount("tmpfs", mem, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700") == nil && try(mem) {
		return nil
	}
	return mountInto(root, mountSpec{src: m.src, dst: m.dst, ro: true})
}

// overlayEscape escapes the characters overlayfs splits its options on.
func overlayEscape(p string) string {
	r := strings.NewReplacer(`\`, `\\`, ",", `\,`, ":", `\:`)
	return r.Replace(p)
}

// closeExcept closes path inside the new root, but when keep holds paths
// strictly below it, it closes only the entries that do not lead to them.
func closeExcept(root, path string, keep []string) error {
	var below []string
	for _, k := range keep {
		if k == path {
			return nil // bound on purpose
		}
		if within(k, path) {
			below = append(below, k)
		}
	}
	if len(below) == 0 {
		return closeIn(root, path)
	}
	ents, err := os.ReadDir(filepath.Join(root, path))
	if err != nil {
		return nil // not in the new root: closed already
	}
	for _, e := range ents {
		if err := closeExcept(root, filepath.Join(path, e.Name()), below); err != nil {
			return err
		}
	}
	return nil
}

// closeIn over-mounts path (inside the new root) with something empty: a
// read-only empty tmpfs for a directory, /dev/null for a file. A path that
// is not in the new root is already closed.
func closeIn(root, path string) error {
	dst := filepath.Join(root, path)
	fi, err := os.Lstat(dst)
	if err != nil {
		return nil
	}
	if fi.IsDir() {
		if err := unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_RDONLY, "mode=0000,size=4k"); err != nil {
			return fmt.Errorf("close %s: %w", path, err)
		}
		return nil
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil // resolves to something the policy checks on its own
	}
	if err := unix.Mount("/dev/null", dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	_ = unix.MountSetattr(-1, dst, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	return nil
}

// buildDev makes a minimal /dev: the harmless devices bound from the host,
// the usual symlinks, a private /dev/shm.
func buildDev(root string) error {
	dev := filepath.Join(root, "dev")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID, "mode=0755"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		src := "/dev/" + d
		if _, err := os.Stat(src); err != nil {
			continue
		}
		dst := filepath.Join(dev, d)
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_RDONLY, 0o666)
		if err != nil {
			return err
		}
		_ = f.Close()
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", src, err)
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		_ = os.Symlink(target, filepath.Join(dev, name))
	}
	shm := filepath.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o1777); err == nil {
		_ = unix.Mount("tmpfs", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777")
	}
	return nil
}

// loopbackUp brings up lo in the new network namespace (it starts down),
// so a command may talk to itself, and to nothing else.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// confineThread gives up the capabilities and applies rlimits,
// no_new_privs, Landlock and seccomp to the calling (locked) thread of the
// launcher: the command forked from it inherits them.
func confineThread(spec launchSpec) error {
	p := spec.Policy
	if err := dropCaps(); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	nofile := p.noFile()
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: nofile, Max: nofile}); err != nil {
		return fmt.Errorf("rlimit nofile: %w", err)
	}
	// The kernel's own ceiling on the namespace's processes, counted per
	// user namespace (it does not bind a daemon run by root, whose uid is
	// the init user's; the init loop's count does).
	if n := uint64(p.pidsMax()) + 1; n > 1 {
		_ = unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n})
	}
	if cpu := p.cpuSeconds(); cpu > 0 {
		_ = unix.Setrlimit(unix.RLIMIT_CPU, &unix.Rlimit{Cur: cpu, Max: cpu + 5})
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if Probe().LandlockABI > 0 {
		rs := rules(p, "/tmp", envInfo{tools: spec.Tools, home: spec.Home, creds: spec.Creds, ns: true})
		if spec.Home != "" {
			// $HOME is a private tmpfs here: writable.
			rs = append(rs, landlock.PathAccess(accessRead|accessWrite, spec.Home).IgnoreIfMissing())
		}
		// TCP is not Landlock's to deny here: the network namespace is
		// (loopback only, unless the network was granted), except that
		// a granted network narrowed to ports is narrowed here.
		var ports []int
		if p.Network {
			ports = p.ConnectPorts
		}
		fd, flags, err := landlockConfig(true, ports).NewRulesetFD(append(rs, netRules(p)...)...)
		if err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
		if fd >= 0 {
			err = ll.LandlockRestrictSelf(fd, flags)
			_ = syscall.Close(fd)
			if err != nil {
				return fmt.Errorf("landlock: %w", err)
			}
		}
	}
	if Probe().Seccomp {
		// The mount namespace hides the socket files, and without a
		// granted network the command has a network namespace of its
		// own with loopback only: every socket family may stay.
		if err := loadFilter(filterOpts{network: true}); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	return nil
}

// dropThreadCaps gives up the calling thread's capabilities for good when
// it has any (a daemon run as root): see dropCaps. A thread with none (the
// usual daemon of a user) has nothing to give up, nor the right to set the
// securebits.
func dropThreadCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	if data[0].Effective == 0 && data[1].Effective == 0 && data[0].Permitted == 0 && data[1].Permitted == 0 {
		return nil
	}
	if data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 {
		return dropCaps()
	}
	// Some capabilities but not the right to drop them from the bounding
	// set: clear the thread's own sets (no_new_privs keeps an exec from
	// granting file capabilities back).
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	data = [2]unix.CapUserData{}
	return unix.Capset(&hdr, &data[0])
}

// dropCaps gives up every capability for good: the launcher is uid 0 of
// its user namespace (so it could mount), and the command must not be: the
// securebits make uid 0 confer nothing on exec, the bounding set is
// emptied, and the launcher's own sets are cleared.
func dropCaps() error {
	// linux/securebits.h: NOROOT and NO_SETUID_FIXUP, KEEP_CAPS locked off,
	// NO_CAP_AMBIENT_RAISE, each with its lock bit.
	const (
		secNoRoot, secNoRootLocked             = 1 << 0, 1 << 1
		secNoSetuidFixup, secNoSetuidFixupLock = 1 << 2, 1 << 3
		secKeepCapsLocked                      = 1 << 5
		secNoAmbient, secNoAmbientLocked       = 1 << 6, 1 << 7
		bits                                   = secNoRoot | secNoRootLocked | secNoSetuidFixup | secNoSetuidFixupLock | secKeepCapsLocked | secNoAmbient | secNoAmbientLocked
	)
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}

// jobNice is the niceness of the commands in namespaces (checks and jobs).
const jobNice = 19

// runInit starts the command and serves as the namespace's init until it
// exits: signals forwarded to the command's process group, orphans reaped,
// the pids ceiling enforced. It returns the exit status to exit with
// (128+n for a command killed by signal n).
func runInit(spec launchSpec) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	attr := &syscall.ProcAttr{Dir: spec.Dir, Env: spec.Env, Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{Setpgid: true}}
	pid, err := syscall.ForkExec(spec.Path, spec.Args, attr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "harnessd sandbox: start %s: %v\n", spec.Path, err)
		if errors.Is(err, syscall.ENOENT) {
			return 127
		}
		return 126
	}
	// The command and what it starts run at a lower priority than this
	// init (nice +10): under a fork bomb the init still gets the CPU to
	// count and kill, and the host keeps its share.
	_ = unix.Setpriority(unix.PRIO_PROCESS, pid, jobNice)
	done := make(chan int, 1)
	go func() {
		// Reap every child; the command's status is the answer.
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err != nil && !errors.Is(err, syscall.EINTR) {
				done <- 125
				return
			}
			if wpid == pid {
				switch {
				case ws.Exited():
					done <- ws.ExitStatus()
				case ws.Signaled():
					done <- 128 + int(ws.Signal())
				default:
					done <- 125
				}
				return
			}
		}
	}()
	max := spec.Policy.pidsMax()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case code := <-done:
			return code
		case s := <-sigs:
			_ = syscall.Kill(-pid, s.(syscall.Signal))
		case <-tick.C:
			if n := countProcs(); n > max+1 { // +1: this init
				fmt.Fprintf(os.Stderr, "harnessd sandbox: %d processes, more than the limit of %d: killing them all\n", n-1, max)
				// Exit: the kernel kills everything in a pid namespace whose
				// init is gone, and no process can fork into it meanwhile
				// (kill(-1) would race a fork bomb's forks).
				return 128 + int(syscall.SIGKILL)
			}
		}
	}
}

// countProcs counts the processes of the pid namespace (its /proc).
func countProcs() int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if c := e.Name()[0]; c >= '0' && c <= '9' {
			n++
		}
	}
	return n
}
