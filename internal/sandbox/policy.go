package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Profile names what a confined process is for.
type Profile string

// The profiles (DESIGN §10).
const (
	// Read is the Fast Path: run_command, read lanes and harnessd's own
	// read-only git and search. No writes but a private tmp, no network.
	Read Profile = "read"
	// Check is run_check: the checkout read-only, private tmp and build
	// caches writable, network only if declared.
	Check Profile = "check"
	// Job is job_start: writes only in its worktree, or in the checkout
	// under the durable lease; private tmp; caches; network off unless a
	// policy rule or an approval allows it.
	Job Profile = "job"
	// Target is a repository-free target: the target root, writable only
	// when the grant allows.
	Target Profile = "target"
)

// Profiles lists the profiles in the order status reports them.
func Profiles() []Profile { return []Profile{Read, Check, Job, Target} }

// Policy is what one confined process may do: plain data, built by the
// caller (harnessd's operations) and enforced by the kernel.
type Policy struct {
	Profile Profile
	// Root is the checkout (or target) the process works in: readable; the
	// secret paths below it stay closed.
	Root string
	// GitDirs are git directories outside Root that git needs to read (the
	// common dir of a worktree).
	GitDirs []string
	// Secrets are paths under Root (slash-separated, relative) that stay
	// closed: secret files and directories. Directories end without "/".
	Secrets []string
	// Writable are directories the process may write (its worktree, or the
	// checkout under a durable lease). Root is writable only if listed.
	Writable []string
	// Caches are tool cache directories: writable for check and job, read
	// only for read.
	Caches []string
	// ReadOnly are more files or directories the process may read (the
	// user's git configuration, for harnessd's own git).
	ReadOnly []string
	// Network allows network access (check and job profiles, when declared
	// and allowed).
	Network bool
	// ConnectPorts narrows a granted network to TCP connections to these
	// ports (a remote write: its registry's), where the kernel's Landlock
	// has ABI 4 or later; nil leaves every port open. TCP bind is denied
	// then too. UDP (DNS) is not Landlock's to narrow.
	ConnectPorts []int
	// PidsMax is the process-count ceiling of the command's tree (0 = the
	// profile's default).
	PidsMax int
	// Metadata lets a process without a mount namespace change the mode,
	// owner and times of files by path (refused otherwise: Landlock does
	// not check them): harnessd's own writing git, which sets the mode of
	// its lock files, never an agent's command.
	Metadata bool
	// OwnGit: the process is harnessd's own git (op.Env.ConfineGit), which
	// writes .git on purpose: a writable Root keeps its .git writable (git
	// reset --hard as harnessd performs it). Never an agent's command.
	OwnGit bool
	// NoFile and CPUSeconds are the rlimits of the command (0 = the
	// profile's default; CPU only for the read profile).
	NoFile     uint64
	CPUSeconds uint64
}

// Default limits per profile.
const (
	DefaultPidsFast = 64
	DefaultPidsJob  = 512
	DefaultNoFile   = 1024
	DefaultCPUFast  = 30
)

// pidsMax returns the policy's process ceiling.
func (p Policy) pidsMax() int {
	if p.PidsMax > 0 {
		return p.PidsMax
	}
	if p.Profile == Read || p.Profile == Target {
		return DefaultPidsFast
	}
	return DefaultPidsJob
}

func (p Policy) noFile() uint64 {
	if p.NoFile > 0 {
		return p.NoFile
	}
	return DefaultNoFile
}

func (p Policy) cpuSeconds() uint64 {
	if p.CPUSeconds > 0 {
		return p.CPUSeconds
	}
	if p.Profile == Read {
		return DefaultCPUFast
	}
	return 0
}

// writesRoot reports whether the root itself is writable.
func (p Policy) writesRoot() bool { return slices.Contains(p.Writable, p.Root) }

// systemReadDirs are the directories every profile reads (and executes
// from), when they exist: the system, nothing of any user.
func systemReadDirs() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc", "/nix", "/snap", "/var/lib/snapd/snap"}
}

// systemSecrets are files of the system that stay closed even where /etc is
// readable (the daemon may run as root).
func systemSecrets() []string {
	return []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
		"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_dsa_key",
		"/etc/ssl/private", "/etc/security/opasswd"}
}

// toolDirs are the directories of the tools on PATH that live outside the
// system directories (pyenv shims, ~/.cargo/bin, ~/go/bin, /usr/local/go is
// under /usr already), and where the programs in them lead (a symlink in
// ~/.local/bin to ~/opt/tool/bin/tool brings ~/opt/tool): each is made
// readable. A directory under home brings its first component under home
// (~/.pyenv for ~/.pyenv/shims, whose programs run ~/.pyenv/versions/…),
// unless that component is a container of unrelated things (~/.local,
// ~/.config, ~/.cache) or holds a hidden directory (the data dir): then
// only the directory itself. Credential files in them are closed by the
// caller (envInfo.creds).
func toolDirs(pathEnv, home string, hidden []string, environ ...string) []string {
	var out []string
	add := func(d string) {
		if d == "" || !filepath.IsAbs(d) {
			return
		}
		d = filepath.Clean(d)
		if underAny(d, systemReadDirs()) {
			return
		}
		if home != "" && within(d, home) && d != home {
			first := strings.SplitN(strings.TrimPrefix(d, home+"/"), "/", 2)[0]
			top := filepath.Join(home, first)
			if !containerDirs[first] && !holdsAny(top, hidden) {
				d = top
			}
		}
		if d == home || holdsAny(d, hidden) || slices.Contains(out, d) || underAny(d, out) {
			return
		}
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	// Version managers name their own root (a pyenv outside the home, a
	// CI runner's HOME elsewhere): the tool's whole tree is readable, its
	// versions with it (credential files are closed by the caller).
	for _, k := range toolRootVars {
		if v := envGet(environ, k); v != "" && filepath.IsAbs(v) {
			add(v)
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		// <root>/shims or <root>/bin of a manager that keeps versions/
		// beside them: the root, wherever it lives.
		if b := filepath.Base(d); b == "shims" || b == "bin" {
			if fi, err := os.Stat(filepath.Join(filepath.Dir(d), "versions")); err == nil && fi.IsDir() {
				add(filepath.Dir(d))
			}
		}
		add(d)
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		add(real)
		if underAny(real, systemReadDirs()) {
			continue
		}
		// Where its programs lead: symlinks (nvm, asdf, pipx, rustup
		// proxies) resolve to their tool's own tree. Bounded.
		ents, err := os.ReadDir(real)
		if err != nil {
			continue
		}
		for i, e := range ents {
			if i >= 4096 {
				break
			}
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			t, err := filepath.EvalSymlinks(filepath.Join(real, e.Name()))
			if err != nil {
				continue
			}
			add(filepath.Dir(t))
		}
	}
	return out
}

// toolRootVars name the roots of version managers and toolchains.
var toolRootVars = []string{"PYENV_ROOT", "RBENV_ROOT", "NODENV_ROOT", "ASDF_DIR", "ASDF_DATA_DIR", "NVM_DIR", "VOLTA_HOME", "CARGO_HOME", "RUSTUP_HOME", "GOROOT", "SDKMAN_DIR"}

// containerDirs are first components of a home that hold unrelated things
// (state, secrets, other programs' data): a tool below one brings only its
// own directory.
var containerDirs = map[string]bool{".local": true, ".config": true, ".cache": true, ".var": true, ".ssh": true}

// CacheDirs returns the tool caches of home that exist: Go's build and
// module caches, cargo and rustup, npm, pip, yarn, pnpm.
func CacheDirs(home string, environ []string) []string {
	var out []string
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) || slices.Contains(out, p) {
			return
		}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			out = append(out, filepath.Clean(p))
		}
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "GOCACHE", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME", "npm_config_cache", "PIP_CACHE_DIR":
			add(v)
		}
	}
	if home == "" {
		return out
	}
	for _, rel := range []string{".cache/go-build", "go/pkg/mod", ".cargo", ".rustup", ".npm", ".cache/pip", ".cache/yarn", ".local/share/pnpm", ".m2/repository", ".gradle/caches"} {
		add(filepath.Join(home, rel))
	}
	return out
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if within(p, d) {
			return true
		}
	}
	return false
}

// holdsAny reports whether dir contains (or is) one of paths.
func holdsAny(dir string, paths []string) bool {
	for _, h := range paths {
		if h != "" && within(h, dir) {
			return true
		}
	}
	return false
}
