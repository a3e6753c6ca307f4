package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

const (
	// DefaultMount is where cgroup v2 must be mounted.
	DefaultMount = "/sys/fs/cgroup"
	// JobsDir is the name of the cgroup, next to ours, that holds one child
	// cgroup per job.
	JobsDir = "harnessd-jobs"
	// DaemonDir is the leaf cgroup Detect moves the daemon into when its own
	// cgroup must delegate controllers (the no-internal-processes rule).
	DaemonDir = "harnessd-daemon"

	cgroup2Magic = 0x63677270 // CGROUP2_SUPER_MAGIC
	probePrefix  = ".probe-"

	// drainTimeout bounds how long Kill and Remove wait for a group to empty.
	drainTimeout = 5 * time.Second
	pollInterval = 5 * time.Millisecond
)

// Controllers are the cgroup v2 controllers Detect requires.
var Controllers = []string{"memory", "pids"}

// Manager places job processes in cgroup v2 groups with memory and pid
// limits. Make one with Detect.
type Manager struct {
	mount       string
	self        string // our cgroup, the parent of jobs (and of the daemon leaf)
	jobs        string // self/JobsDir
	controllers []string
	movedSelf   bool // the daemon was moved into self/DaemonDir
}

// config parameterises detect; tests point it at other hierarchies.
type config struct {
	mount       string
	procCgroup  string // /proc/self/cgroup
	controllers []string
	jobsName    string
}

func defaultConfig() config {
	return config{mount: DefaultMount, procCgroup: "/proc/self/cgroup", controllers: Controllers, jobsName: JobsDir}
}

// lastFailure is the reason of the last failed Detect, for Status on nil.
var lastFailure atomic.Pointer[string]

// Detect finds out whether jobs can be contained in cgroup v2 groups and
// prepares the hierarchy. It requires cgroup v2 mounted at /sys/fs/cgroup
// (statfs magic 0x63677270), our cgroup from the "0::" line of
// /proc/self/cgroup, the memory and pids controllers in its
// cgroup.controllers, and write access to it.
//
// It then creates <ours>/harnessd-jobs and enables +memory +pids in
// <ours>/cgroup.subtree_control and in harnessd-jobs/cgroup.subtree_control,
// so that each job cgroup <ours>/harnessd-jobs/<id> has memory.max and
// pids.max. cgroup v2 forbids a (non-root) cgroup to both hold processes and
// delegate controllers, so when enabling fails with EBUSY, Detect moves the
// daemon process (all its threads) into the leaf <ours>/harnessd-daemon and
// tries again; if other processes share our cgroup it moves the daemon back
// and fails. A later Detect in the same process recognises the leaf.
//
// On any failure it returns a nil Manager and an error that says why, e.g.
// "cgroup v2 not mounted at /sys/fs/cgroup ...", "no write access to ...:
// read-only file system" or "memory controller not delegated to ...".
func Detect() (*Manager, error) {
	return detect(defaultConfig())
}

func detect(c config) (*Manager, error) {
	m, err := detectSteps(c)
	if err != nil {
		msg := err.Error()
		lastFailure.Store(&msg)
		return nil, err
	}
	lastFailure.Store(nil)
	return m, nil
}

func unavailable(format string, args ...any) error {
	return errs.New(errs.Unavailable, format, args...)
}

func detectSteps(c config) (*Manager, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(c.mount, &st); err != nil {
		return nil, unavailable("cgroup v2 not mounted: statfs %s: %v", c.mount, err)
	}
	if uint32(st.Type) != cgroup2Magic {
		why := fmt.Sprintf("cgroup v2 not mounted at %s (found file system type 0x%x: a cgroup v1 or hybrid layout)", c.mount, uint32(st.Type))
		var u syscall.Statfs_t
		if syscall.Statfs(filepath.Join(c.mount, "unified"), &u) == nil && uint32(u.Type) == cgroup2Magic {
			why += "; the cgroup2 hierarchy at " + filepath.Join(c.mount, "unified") + " is the hybrid one, whose memory and pids controllers are bound to cgroup v1"
		}
		return nil, unavailable("%s", why)
	}
	raw, err := os.ReadFile(c.procCgroup)
	if err != nil {
		return nil, unavailable("cannot read %s: %v", c.procCgroup, err)
	}
	rel, ok := parseProcCgroup(raw)
	if !ok {
		return nil, unavailable("no cgroup v2 entry (\"0::/...\") in %s", c.procCgroup)
	}
	self := filepath.Join(c.mount, rel)
	movedSelf := false
	if filepath.Base(self) == DaemonDir && self != c.mount {
		self, movedSelf = filepath.Dir(self), true
	}
	if _, err := os.Stat(filepath.Join(self, "cgroup.procs")); err != nil {
		return nil, unavailable("our cgroup %s is not visible (cgroup namespace or mount mismatch): %v", self, err)
	}
	avail, err := readWords(filepath.Join(self, "cgroup.controllers"))
	if err != nil {
		return nil, unavailable("cannot read %s/cgroup.controllers: %v", self, err)
	}
	for _, ctl := range c.controllers {
		if !slices.Contains(avail, ctl) {
			return nil, unavailable("%s controller not delegated to %s (cgroup.controllers: %q)", ctl, self, strings.Join(avail, " "))
		}
	}
	jobs := filepath.Join(self, c.jobsName)
	if err := os.Mkdir(jobs, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, unavailable("no write access to %s: %v", self, syscallMessage(err))
	}
	if len(c.controllers) > 0 {
		moved, err := enable(self, c.controllers)
		if err != nil {
			return nil, err
		}
		movedSelf = movedSelf || moved
		if err := writeFile(filepath.Join(jobs, "cgroup.subtree_control"), plus(c.controllers)); err != nil {
			return nil, unavailable("cannot enable %s in %s/cgroup.subtree_control: %v", strings.Join(c.controllers, ", "), jobs, syscallMessage(err))
		}
	}
	// Probe: a child must be creatable and carry the limit files.
	probe := filepath.Join(jobs, probePrefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, unavailable("no write access to %s: %v", jobs, syscallMessage(err))
	}
	defer os.Remove(probe)
	for _, ctl := range c.controllers {
		if _, err := os.Stat(filepath.Join(probe, ctl+".max")); err != nil {
			return nil, unavailable("%s controller not usable in %s: %s.max missing", ctl, jobs, ctl)
		}
	}
	return &Manager{mount: c.mount, self: self, jobs: jobs, controllers: slices.Clone(c.controllers), movedSelf: movedSelf}, nil
}

// enable turns the controllers on in self/cgroup.subtree_control, moving
// the daemon into the DaemonDir leaf when self holds processes.
func enable(self string, controllers []string) (moved bool, err error) {
	on, err := readWords(filepath.Join(self, "cgroup.subtree_control"))
	if err != nil {
		return false, unavailable("cannot read %s/cgroup.subtree_control: %v", self, err)
	}
	missing := false
	for _, c := range controllers {
		missing = missing || !slices.Contains(on, c)
	}
	if !missing {
		return false, nil
	}
	ctl := filepath.Join(self, "cgroup.subtree_control")
	err = writeFile(ctl, plus(controllers))
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, syscall.EBUSY) {
		return false, unavailable("cannot enable %s in %s: %v (controllers not delegated for writing)", strings.Join(controllers, ", "), ctl, syscallMessage(err))
	}
	// EBUSY: processes live in self. Move the daemon into a leaf.
	leaf := filepath.Join(self, DaemonDir)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return false, unavailable("no write access to %s: %v", self, syscallMessage(err))
	}
	pid := strconv.Itoa(os.Getpid())
	if err := writeFile(filepath.Join(leaf, "cgroup.procs"), pid); err != nil {
		return false, unavailable("cannot move the daemon into %s: %v", leaf, syscallMessage(err))
	}
	if err := writeFile(ctl, plus(controllers)); err != nil {
		// Undo: back into our cgroup, drop the leaf.
		writeFile(filepath.Join(self, "cgroup.procs"), pid)
		os.Remove(leaf)
		others, _ := readPids(filepath.Join(self, "cgroup.procs"))
		return false, unavailable("cannot enable %s in %s: %v; %d other process(es) share our cgroup and cgroup v2 forbids processes in a cgroup that delegates controllers: run harnessd in a cgroup of its own (systemd: Delegate=yes)",
			strings.Join(controllers, ", "), ctl, syscallMessage(err), max(len(others)-1, 0))
	}
	return true, nil
}

// Status is the one-line state for `harness status`. On a nil Manager it
// reports why the last Detect failed.
func (m *Manager) Status() string {
	if m == nil {
		if p := lastFailure.Load(); p != nil {
			return "cgroup v2: jobs not contained: " + *p
		}
		return "cgroup v2: jobs not contained (not detected)"
	}
	s := "cgroup v2: jobs contained under " + m.jobs
	if len(m.controllers) > 0 {
		s += " (" + strings.Join(m.controllers, ", ") + ")"
	} else {
		s += " (no controllers: kill only)"
	}
	if m.movedSelf {
		s += "; daemon in " + filepath.Join(m.self, DaemonDir)
	}
	return s
}

// JobsPath returns the directory that holds the job groups.
func (m *Manager) JobsPath() string { return m.jobs }

// Limits are the resource limits of one job group.
type Limits struct {
	MemoryMax int64 // bytes, 0 = none
	PidsMax   int64 // 0 = none
}

// Group is one job's cgroup.
type Group struct {
	id   string
	dir  string
	kill bool // cgroup.kill may be used (tests turn it off)
}

// New creates the job group <jobs>/<id> and sets its limits: memory.max
// (with memory.swap.max 0, so the limit cannot be dodged by swapping, and
// memory.oom.group 1, so an OOM kills the whole job) and pids.max. A limit
// of 0 means none ("max").
func (m *Manager) New(id string, l Limits) (*Group, error) {
	if m == nil {
		return nil, errs.New(errs.Unavailable, "cgroup: not available")
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	if l.MemoryMax < 0 || l.PidsMax < 0 {
		return nil, errs.New(errs.InvalidArgument, "cgroup: negative limit (memory %d, pids %d)", l.MemoryMax, l.PidsMax)
	}
	dir := filepath.Join(m.jobs, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, errs.New(errs.InvalidArgument, "cgroup: job group %q already exists", id)
		}
		return nil, errs.Wrap(errs.Unavailable, err, "cgroup: create %s: %v", dir, syscallMessage(err))
	}
	g := &Group{id: id, dir: dir, kill: true}
	set := func(file, value string, required bool) error {
		err := writeFile(filepath.Join(dir, file), value)
		if err != nil && (required || !errors.Is(err, fs.ErrNotExist)) {
			return errs.Wrap(errs.Unavailable, err, "cgroup: set %s=%s: %v", file, value, syscallMessage(err))
		}
		return nil
	}
	var err error
	if l.MemoryMax > 0 {
		v := strconv.FormatInt(l.MemoryMax, 10)
		err = errors.Join(set("memory.max", v, true), set("memory.swap.max", "0", false), set("memory.oom.group", "1", false))
	}
	if err == nil && l.PidsMax > 0 {
		err = set("pids.max", strconv.FormatInt(l.PidsMax, 10), true)
	}
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return g, nil
}

// ID returns the job id of the group.
func (g *Group) ID() string { return g.id }

// Path returns the group's directory in the cgroup file system.
func (g *Group) Path() string { return g.dir }

// Open opens the group's directory, for starting a process directly inside
// it with syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
// (clone3 CLONE_INTO_CGROUP, Linux >= 5.7), which has none of Add's race.
// The caller closes the file after Start.
func (g *Group) Open() (*os.File, error) {
	f, err := os.Open(g.dir)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "cgroup: open %s: %v", g.dir, err)
	}
	return f, nil
}

// Add moves the process pid (with all its threads) into the group. Call it
// right after the process started: children it forked before Add stay
// outside the group. The process group kill and sweep of harness/proc still
// apply to the process; the cgroup adds limits and a kill that setsid
// cannot escape. Prefer starting inside the group (Open) where possible.
func (g *Group) Add(pid int) error {
	if pid <= 0 {
		return errs.New(errs.InvalidArgument, "cgroup: invalid pid %d", pid)
	}
	if err := writeFile(filepath.Join(g.dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return errs.Wrap(errs.NotFound, err, "cgroup: process %d is gone", pid)
		}
		return errs.Wrap(errs.Unavailable, err, "cgroup: add %d to %s: %v", pid, g.id, syscallMessage(err))
	}
	return nil
}

// Kill SIGKILLs every process in the group: by writing "1" to cgroup.kill
// (Linux >= 5.14), which also reaches processes forked meanwhile; on older
// kernels by freezing the group, SIGKILLing every pid in cgroup.procs until
// it is empty (bounded to 5 s) and thawing it. A group that is gone is not
// an error.
func (g *Group) Kill() error {
	if g.kill {
		err := writeFile(filepath.Join(g.dir, "cgroup.kill"), "1")
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return errs.Wrap(errs.Internal, err, "cgroup: kill %s: %v", g.id, syscallMessage(err))
		}
		if _, serr := os.Stat(g.dir); serr != nil {
			return nil // the group itself is gone
		}
	}
	return g.killEach()
}

// killEach is Kill without cgroup.kill.
func (g *Group) killEach() error {
	freeze := filepath.Join(g.dir, "cgroup.freeze")
	frozen := writeFile(freeze, "1") == nil
	if frozen {
		defer writeFile(freeze, "0")
	}
	deadline := time.Now().Add(drainTimeout)
	for {
		pids, err := readPids(filepath.Join(g.dir, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return errs.Wrap(errs.Internal, err, "cgroup: read %s/cgroup.procs: %v", g.id, err)
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return errs.New(errs.Timeout, "cgroup: %d process(es) of %s survived SIGKILL for %s", len(pids), g.id, drainTimeout)
		}
		time.Sleep(pollInterval)
	}
}

// Remove kills the group, waits (at most 5 s) until it holds no process,
// and removes it along with any child cgroups. Removing a removed group is
// not an error.
func (g *Group) Remove() error {
	if _, err := os.Stat(g.dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := g.Kill(); err != nil {
		return err
	}
	if err := g.waitEmpty(); err != nil {
		return err
	}
	if err := removeTree(g.dir); err != nil {
		return errs.Wrap(errs.Internal, err, "cgroup: remove %s: %v", g.id, syscallMessage(err))
	}
	return nil
}

// waitEmpty polls cgroup.events (descendants included) until unpopulated.
func (g *Group) waitEmpty() error {
	deadline := time.Now().Add(drainTimeout)
	for {
		populated, err := isPopulated(g.dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return errs.Wrap(errs.Internal, err, "cgroup: read %s/cgroup.events: %v", g.id, err)
		}
		if !populated {
			return nil
		}
		if time.Now().After(deadline) {
			return errs.New(errs.Timeout, "cgroup: %s still holds processes after %s", g.id, drainTimeout)
		}
		time.Sleep(pollInterval)
	}
}

// Stats returns the group's peak memory (memory.peak, Linux >= 5.19, else
// memory.current; 0 without the memory controller) and the number of tasks
// in it (pids.current, else the processes listed in cgroup.procs).
func (g *Group) Stats() (memPeak int64, pids int, err error) {
	for _, f := range []string{"memory.peak", "memory.current"} {
		v, rerr := readInt(filepath.Join(g.dir, f))
		if rerr == nil {
			memPeak = v
			break
		}
		if !errors.Is(rerr, fs.ErrNotExist) {
			return 0, 0, errs.Wrap(errs.Internal, rerr, "cgroup: read %s: %v", f, rerr)
		}
	}
	if v, rerr := readInt(filepath.Join(g.dir, "pids.current")); rerr == nil {
		return memPeak, int(v), nil
	} else if !errors.Is(rerr, fs.ErrNotExist) {
		return 0, 0, errs.Wrap(errs.Internal, rerr, "cgroup: read pids.current: %v", rerr)
	}
	list, rerr := readPids(filepath.Join(g.dir, "cgroup.procs"))
	if rerr != nil {
		if errors.Is(rerr, fs.ErrNotExist) {
			return 0, 0, errs.Wrap(errs.NotFound, rerr, "cgroup: group %s is gone", g.id)
		}
		return 0, 0, errs.Wrap(errs.Internal, rerr, "cgroup: read cgroup.procs: %v", rerr)
	}
	return memPeak, len(list), nil
}

// Cleanup removes the job groups left from an earlier run for which keep
// returns false (keep may be nil: remove all), killing what runs in them.
func (m *Manager) Cleanup(keep func(id string) bool) error {
	if m == nil {
		return nil
	}
	ents, err := os.ReadDir(m.jobs)
	if err != nil {
		return errs.Wrap(errs.Internal, err, "cgroup: list %s: %v", m.jobs, err)
	}
	var errList []error
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if strings.HasPrefix(name, probePrefix) {
			os.Remove(filepath.Join(m.jobs, name))
			continue
		}
		if keep != nil && keep(name) {
			continue
		}
		g := &Group{id: name, dir: filepath.Join(m.jobs, name), kill: true}
		if err := g.Remove(); err != nil {
			errList = append(errList, err)
		}
	}
	return errors.Join(errList...)
}

// parseProcCgroup returns the cgroup v2 path of a /proc/<pid>/cgroup file.
func parseProcCgroup(b []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			rest = strings.TrimSuffix(rest, " (deleted)")
			if !strings.HasPrefix(rest, "/") || strings.Contains(rest, "/../") || strings.HasSuffix(rest, "/..") {
				return "", false
			}
			return filepath.Clean(rest), true
		}
	}
	return "", false
}

// checkID accepts a job id usable as one cgroup directory name.
func checkID(id string) error {
	if id == "" || len(id) > 128 || id == "." || id == ".." || strings.HasPrefix(id, ".") {
		return errs.New(errs.InvalidArgument, "cgroup: invalid job id %q", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return errs.New(errs.InvalidArgument, "cgroup: invalid character %q in job id %q", c, id)
		}
	}
	if strings.HasPrefix(id, "cgroup.") || strings.HasPrefix(id, "memory.") || strings.HasPrefix(id, "pids.") {
		return errs.New(errs.InvalidArgument, "cgroup: job id %q looks like a cgroup interface file", id)
	}
	return nil
}

func plus(controllers []string) string {
	parts := make([]string, len(controllers))
	for i, c := range controllers {
		parts[i] = "+" + c
	}
	return strings.Join(parts, " ")
}

// writeFile writes a cgroup interface file (no create, no truncate: cgroupfs
// takes one write per value).
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func readWords(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// readPids parses cgroup.procs.
func readPids(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parsePids(b), nil
}

func parsePids(b []byte) []int {
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			pids = append(pids, n)
		}
	}
	return pids
}

// isPopulated reads "populated" from cgroup.events.
func isPopulated(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false, err
	}
	return parsePopulated(b), nil
}

func parsePopulated(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return false
}

// removeTree rmdirs dir's child cgroups depth-first, then dir.
func removeTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// syscallMessage returns the errno text of err ("read-only file system").
func syscallMessage(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en.Error()
	}
	return err.Error()
}

// detectOnce remembers the one detection of this process: Detect may move
// the daemon into a leaf cgroup, which must not happen twice.
var detectOnce = sync.OnceValues(Detect)

// DetectOnce runs Detect once per process and returns its answer every time.
func DetectOnce() (*Manager, error) { return detectOnce() }
