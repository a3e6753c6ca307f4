package authority

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Env is what the rules need to know of the machine. Paths are absolute
// and canonical (symlinks resolved); "" means none.
type Env struct {
	// Home is the daemon user's home directory.
	Home string
	// ConfigHome is $XDG_CONFIG_HOME ("" = Home/.config).
	ConfigHome string
	// Hidden are harnessd's own directories: the data dir first, then the
	// sandbox's tmp root, job logs, worktrees.
	Hidden []string
}

// EnvFrom builds an Env from an environment (os.Environ()) and harnessd's
// hidden directories, canonicalising what exists.
func EnvFrom(environ []string, hidden []string) Env {
	get := func(k string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if kk, v, ok := strings.Cut(environ[i], "="); ok && kk == k {
				return v
			}
		}
		return ""
	}
	e := Env{Home: Canonical(get("HOME")), ConfigHome: Canonical(get("XDG_CONFIG_HOME"))}
	for _, h := range hidden {
		if h = Canonical(h); h != "" {
			e.Hidden = append(e.Hidden, h)
		}
	}
	return e
}

// Canonical returns p absolute, clean and with symlinks resolved as far as
// it exists ("" for "" or a relative path): a path that does not exist yet
// keeps its missing tail.
func Canonical(p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return ""
	}
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(p)
	if dir == "" || filepath.Clean(dir) == p {
		return p
	}
	return filepath.Join(Canonical(filepath.Clean(dir)), base)
}

// systemTrees are the directories of the system that can never be a root,
// nor anything below them: kernel interfaces, devices, the system's
// configuration, sockets and boot files.
var systemTrees = []string{"/proc", "/sys", "/dev", "/etc", "/run", "/var/run", "/boot"}

// scratch reports whether abs lies below /dev/shm: a tmpfs for anyone's
// files (checkouts of CI runs live there), not a device; /dev/shm itself
// stays closed.
func scratch(abs string) bool { return strings.HasPrefix(abs, "/dev/shm/") }

// credentialRel are the well-known credential homes and files, relative
// to the home directory.
var credentialRel = []string{
	".ssh", ".aws", ".azure", ".kube", ".docker", ".gnupg", ".password-store",
	".config/gh", ".config/git", ".config/gcloud", ".config/hub", ".config/op", ".local/share/keyrings",
	".netrc", "_netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass", ".vault-token", ".gem/credentials",
	".cargo/credentials", ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json",
	".m2/settings.xml", ".gradle/gradle.properties",
}

// credentialConfigRel are credential homes relative to $XDG_CONFIG_HOME.
var credentialConfigRel = []string{"gh", "git", "gcloud", "hub", "op"}

// CredentialPaths returns the absolute credential homes and files of e's
// home (whether or not they exist): no root may be one, lie inside one or
// hold one, and the sandbox closes those inside the directories it shows.
func CredentialPaths(e Env) []string {
	if e.Home == "" {
		return nil
	}
	var out []string
	for _, r := range credentialRel {
		out = append(out, filepath.Join(e.Home, r))
	}
	if e.ConfigHome != "" && e.ConfigHome != filepath.Join(e.Home, ".config") {
		for _, r := range credentialConfigRel {
			out = append(out, filepath.Join(e.ConfigHome, r))
		}
	}
	return out
}

// Within reports whether p is dir or below it.
func Within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// Never is why a path can never be a root.
type Never struct {
	// Rule names the rule: root, system, home, holds-home, git-dir,
	// harnessd, credentials.
	Rule string
	// Reason says it to a person.
	Reason string
}

// NeverGrantable reports why abs (canonical) can never be a root, whoever
// asks: the file system root; /proc, /sys, /dev, /etc, /run, /boot and
// what is below them; the home directory itself and what holds it; any
// git directory (a .git directory or anything in one, a bare repository, a
// linked worktree's git dir); harnessd's own directories, what holds them
// and what they hold; and the credential homes, what they hold and what
// holds them (~/.config holds ~/.config/gh).
func NeverGrantable(abs string, e Env) (Never, bool) {
	if abs == "" || !filepath.IsAbs(abs) {
		return Never{Rule: "root", Reason: fmt.Sprintf("%q is not an absolute path", abs)}, true
	}
	abs = filepath.Clean(abs)
	if abs == "/" {
		return Never{Rule: "root", Reason: "the file system root cannot be granted: grant the directory the work needs"}, true
	}
	for _, s := range systemTrees {
		if Within(abs, s) && !scratch(abs) {
			return Never{Rule: "system", Reason: fmt.Sprintf("%s is in %s, which holds the system's devices, kernel interfaces, configuration or sockets: it can never be granted", abs, s)}, true
		}
	}
	if e.Home != "" {
		if abs == e.Home {
			return Never{Rule: "home", Reason: fmt.Sprintf("%s is the home directory itself: grant the project directory inside it", abs)}, true
		}
		if Within(e.Home, abs) {
			return Never{Rule: "holds-home", Reason: fmt.Sprintf("%s holds the home directory %s: grant the project directory inside it", abs, e.Home)}, true
		}
	}
	if gd, ok := gitDirOf(abs); ok {
		return Never{Rule: "git-dir", Reason: fmt.Sprintf("%s is a git directory (%s): register the work tree instead (its hooks, config and objects are harnessd's to guard)", abs, gd)}, true
	}
	for _, h := range e.Hidden {
		if Within(abs, h) || Within(h, abs) {
			return Never{Rule: "harnessd", Reason: fmt.Sprintf("%s is, holds or lies in harnessd's own data (%s): commands there could reach its token and store; grant a directory that does not, or move the data dir (harnessd serve --data-dir DIR)", abs, h)}, true
		}
	}
	for _, c := range CredentialPaths(e) {
		if Within(abs, c) || Within(c, abs) {
			return Never{Rule: "credentials", Reason: fmt.Sprintf("%s is, holds or lies in the credential store %s: it can never be granted", abs, c)}, true
		}
	}
	return Never{}, false
}

// gitDirOf reports whether abs is a git directory or lies in one: a path
// component named .git, or a directory (abs or one above it) that git
// would take for a repository's git dir (HEAD, objects and refs in it).
func gitDirOf(abs string) (string, bool) {
	parts := strings.Split(abs, "/")
	for i, p := range parts {
		if strings.EqualFold(p, ".git") {
			return strings.Join(parts[:i+1], "/"), true
		}
	}
	for d := abs; d != "/" && d != "."; d = filepath.Dir(d) {
		if looksLikeGitDir(d) {
			return d, true
		}
	}
	return "", false
}

// looksLikeGitDir reports whether dir holds what git requires of a git
// directory: a HEAD file, an objects directory and a refs directory (git's
// own is_git_directory test).
func looksLikeGitDir(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "HEAD"))
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// ErrArea is the error of a bad allowed area.
var ErrArea = errors.New("authority: bad allowed area")

// Areas are the allowed areas people configured: canonical absolute
// directories inside which agents may register roots without asking.
type Areas []string

// NewAreas canonicalises dirs into Areas: each must be absolute and
// exist as a directory; duplicates go.
func NewAreas(dirs []string) (Areas, error) {
	var out Areas
	for _, d := range dirs {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("%w: %q is not absolute (give the full path)", ErrArea, d)
		}
		c, err := filepath.EvalSymlinks(filepath.Clean(d))
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrArea, d, err)
		}
		if fi, err := os.Stat(c); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: %q is not a directory", ErrArea, d)
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Contains returns the area that holds abs (canonical), if any.
func (a Areas) Contains(abs string) (string, bool) {
	for _, d := range a {
		if Within(abs, d) {
			return d, true
		}
	}
	return "", false
}
