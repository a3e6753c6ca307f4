package gitx

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// The user's global git configuration (~/.gitconfig, $XDG_CONFIG_HOME/git/
// config, or the daemon's GIT_CONFIG_GLOBAL) is a file any process of the
// user can write, an agent's included when it once reached it. harnessd's
// own git therefore reads neither it nor the system configuration (git runs
// with GIT_CONFIG_GLOBAL=/dev/null and GIT_CONFIG_NOSYSTEM=1) and ignores
// the user's attributes file (core.attributesFile=/dev/null): nothing there
// can name a filter, a diff program or a hook. harnessd reads the file
// itself, with the same parser, and passes on only the variables of
// userAllowlist as -c arguments: the identity commits are made with, the
// line-ending settings, the ignore file, safe.directory and the default
// branch. Each is data git never runs.

// userAllowlist are the variables of the user's global configuration
// harnessd's own git keeps (lower-cased names).
var userAllowlist = map[string]bool{
	"user.name": true, "user.email": true,
	"core.autocrlf": true, "core.eol": true, "core.safecrlf": true, "core.excludesfile": true,
	"core.precomposeunicode": true, "core.ignorecase": true,
	"safe.directory": true, "init.defaultbranch": true, "i18n.commitencoding": true,
}

// userConfigFiles are the global configuration files git reads, in order
// (later values win), for the environment of the daemon.
func userConfigFiles(getenv func(string) string) []string {
	if g := getenv("GIT_CONFIG_GLOBAL"); g != "" {
		return []string{g}
	}
	home := getenv("HOME")
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	var out []string
	if xdg != "" {
		out = append(out, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		out = append(out, filepath.Join(home, ".gitconfig"))
	}
	return out
}

// userConfig is the allowlisted part of the user's configuration, as read
// at stamps.
type userConfig struct {
	files  []string // the top files, for the environment they were found in
	stamps []fileStamp
	// vars in the order git would apply them; conditional ones (an
	// includeIf gitdir: section) carry their condition.
	vars []userVar
}

type userVar struct {
	name, value string
	// cond is the includeIf "gitdir:" (or "gitdir/i:") pattern the
	// variable came from, "" for an unconditional one.
	cond  string
	icase bool
}

var (
	userMu    sync.Mutex // protects userCache
	userCache *userConfig
)

// userConfigArgs returns the -c arguments of the allowlisted variables of
// the user's global configuration that apply to a repository whose git
// dir is gitDir ("" = unknown: conditional includes do not apply). It
// reads the files again only when one changed (a `git config --global`
// rewrites the file under a new inode: nothing holds the old one).
func userConfigArgs(gitDir string) []string {
	uc := loadUserConfig()
	var out []string
	for _, v := range uc.vars {
		if v.cond != "" && !gitdirMatches(v.cond, v.icase, gitDir) {
			continue
		}
		out = append(out, "-c", v.name+"="+v.value)
	}
	return out
}

func loadUserConfig() *userConfig {
	userMu.Lock()
	defer userMu.Unlock()
	files := userConfigFiles(os.Getenv)
	if userCache != nil && slices.Equal(userCache.files, files) && stampsValid(userCache.stamps) {
		return userCache
	}
	uc := &userConfig{files: files}
	seen := map[string]bool{}
	var read func(path, cond string, icase bool, depth int)
	read = func(path, cond string, icase bool, depth int) {
		if depth > maxIncludeDepth || len(seen) >= maxConfigFiles || seen[path+"\x00"+cond] {
			return
		}
		seen[path+"\x00"+cond] = true
		b, s, err := readStamped(path, maxConfigBytes)
		uc.stamps = append(uc.stamps, s)
		if err != nil {
			return
		}
		header := func(string) bool { return true }
		entry := func(e cfgEntry) bool {
			switch {
			case e.hasValue && e.name == "include.path":
				for _, p := range interpolatePath(e.value) {
					if !strings.HasPrefix(p, "/") {
						p = dirOfRaw(path) + p
					}
					read(p, cond, icase, depth+1)
				}
			case e.hasValue && isIncludeKey(e.name):
				// includeIf.<cond>.path: only gitdir conditions are
				// honoured (onbranch and hasconfig need git itself).
				c := strings.TrimSuffix(strings.TrimPrefix(e.name, "includeif."), ".path")
				ci := false
				var pat string
				switch {
				case strings.HasPrefix(c, "gitdir:"):
					pat = c[len("gitdir:"):]
				case strings.HasPrefix(c, "gitdir/i:"):
					pat, ci = c[len("gitdir/i:"):], true
				default:
					return true
				}
				if cond != "" {
					return true // a condition inside a condition: git ANDs them; harnessd skips
				}
				pat = gitdirPattern(pat, path)
				for _, p := range interpolatePath(e.value) {
					if !strings.HasPrefix(p, "/") {
						p = dirOfRaw(path) + p
					}
					read(p, pat, ci, depth+1)
				}
			case userAllowlist[e.name] && e.hasValue:
				uc.vars = append(uc.vars, userVar{name: e.name, value: e.value, cond: cond, icase: icase})
			}
			return true
		}
		_ = parseConfig(b, header, entry)
	}
	for _, f := range files {
		read(f, "", false, 0)
	}
	userCache = uc
	return uc
}

// gitdirPattern turns an includeIf gitdir: pattern into an absolute glob
// as git does: "~/" is the home, "./" the including file's directory, a
// relative pattern gets "**/" in front, a trailing "/" gets "**" after.
func gitdirPattern(pat, including string) string {
	switch {
	case strings.HasPrefix(pat, "~/"):
		pat = os.Getenv("HOME") + pat[1:]
	case strings.HasPrefix(pat, "./"):
		pat = dirOfRaw(including) + pat[2:]
	case !strings.HasPrefix(pat, "/"):
		pat = "**/" + pat
	}
	if strings.HasSuffix(pat, "/") {
		pat += "**"
	}
	return pat
}

// gitdirMatches reports whether gitDir (and its symlink-resolved form)
// matches an includeIf gitdir pattern.
func gitdirMatches(pat string, icase bool, gitDir string) bool {
	if gitDir == "" {
		return false
	}
	cands := []string{gitDir}
	if r, err := filepath.EvalSymlinks(gitDir); err == nil && r != gitDir {
		cands = append(cands, r)
	}
	for _, c := range cands {
		p, g := pat, c
		if icase {
			p, g = strings.ToLower(p), strings.ToLower(g)
		}
		if ok, _ := doublestar.Match(p, g); ok {
			return true
		}
	}
	return false
}

// UserConfigArgs returns the -c arguments of the allowlisted variables of
// the user's global configuration for git run in dir (for a caller that
// builds its own git command line, with GIT_CONFIG_GLOBAL=/dev/null).
func UserConfigArgs(dir string) []string { return userConfigArgs(gitDirFor(dir)) }

// UserConfigFiles returns the files harnessd's own git reads outside the
// repository: the ignore files (core.excludesFile, or git's default
// $XDG_CONFIG_HOME/git/ignore) that exist, for the sandbox to show it.
func UserConfigFiles() []string {
	var out []string
	for _, v := range loadUserConfig().vars {
		if v.name == "core.excludesfile" {
			for _, p := range interpolatePath(v.value) {
				out = append(out, p)
			}
		}
	}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && os.Getenv("HOME") != "" {
		xdg = filepath.Join(os.Getenv("HOME"), ".config")
	}
	if xdg != "" {
		out = append(out, filepath.Join(xdg, "git", "ignore"))
	}
	var exist []string
	for _, p := range out {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			exist = append(exist, p)
		}
	}
	sort.Strings(exist)
	return exist
}
