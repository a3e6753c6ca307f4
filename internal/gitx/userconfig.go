package gitx

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The user's global git configuration (~/.gitconfig, $XDG_CONFIG_HOME/git/
// config, or the daemon's GIT_CONFIG_GLOBAL) is a file any process of the
// user can write, an agent's included when it once reached it. harnessd's
// own git therefore reads neither it nor the system configuration
// (GIT_CONFIG_NOSYSTEM=1, and GIT_CONFIG_GLOBAL names a file harnessd
// writes) and ignores the user's attributes file
// (core.attributesFile=/dev/null): nothing there can name a filter, a diff
// program or a hook. harnessd reads the user's file itself, with the same
// parser, and hands git only the variables of userAllowlist, in the file it
// writes (UserConfigEnv), so they keep the
// global scope (a repository's own user.email still wins) and their
// includeIf "gitdir:" conditions: the identity commits are made with, the
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
	file   string   // the global file written for git (userGlobalFile), once
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

// UserConfigEnv returns GIT_CONFIG_GLOBAL naming a file harnessd wrote
// with the allowlisted variables of the user's global configuration (and
// their includeIf "gitdir:" sections), or GIT_CONFIG_GLOBAL=/dev/null when
// there are none or the file cannot be written. git reads it at the
// global scope: the repository's own config still wins, as for the user's
// git.
func UserConfigEnv() string {
	if f := userGlobalFile(); f != "" {
		return "GIT_CONFIG_GLOBAL=" + f
	}
	return "GIT_CONFIG_GLOBAL=/dev/null"
}

// userGlobalFile writes (once per content) the global config file of the
// allowlisted variables under a directory of this uid's, and returns its
// path ("" when there is nothing to write or it cannot be).
func userGlobalFile() string {
	uc := loadUserConfig()
	userMu.Lock()
	defer userMu.Unlock()
	if uc.file != "" || len(uc.vars) == 0 {
		return uc.file
	}
	dir := filepath.Join(os.TempDir(), "harnessd-gitconfig-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedBySelf(fi) {
		return "" // not ours alone: write nothing there
	}
	var main strings.Builder
	groups := map[string][]userVar{}
	var order []string
	for _, v := range uc.vars {
		if v.cond == "" {
			writeVar(&main, v)
			continue
		}
		key := strconv.FormatBool(v.icase) + "\x00" + v.cond
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], v)
	}
	for _, key := range order {
		var b strings.Builder
		for _, v := range groups[key] {
			writeVar(&b, v)
		}
		sub, err := writeOnce(dir, b.String())
		if err != nil {
			return ""
		}
		g := groups[key][0]
		kind := "gitdir"
		if g.icase {
			kind = "gitdir/i"
		}
		fmt.Fprintf(&main, "[includeIf %s]\n\tpath = %s\n", quoteConfig(kind+":"+g.cond), quoteConfig(sub))
	}
	f, err := writeOnce(dir, main.String())
	if err != nil {
		return ""
	}
	uc.file = f
	return f
}

// writeVar writes one variable as its own section line.
func writeVar(b *strings.Builder, v userVar) {
	section, key, _ := strings.Cut(v.name, ".")
	fmt.Fprintf(b, "[%s]\n\t%s = %s\n", section, key, quoteConfig(v.value))
}

// quoteConfig quotes a value for a git config file.
func quoteConfig(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\b", `\b`)
	return `"` + r.Replace(v) + `"`
}

// writeOnce writes content to a file named by its digest in dir (once:
// the same content is the same file) and returns its path.
func writeOnce(dir, content string) (string, error) {
	sum := sha256.Sum256([]byte(content))
	p := filepath.Join(dir, hex.EncodeToString(sum[:12])+".gitconfig")
	if b, err := os.ReadFile(p); err == nil && string(b) == content {
		return p, nil
	}
	tmp, err := os.CreateTemp(dir, ".gitconfig-*")
	if err != nil {
		return "", err
	}
	_, werr := tmp.WriteString(content)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(tmp.Name())
		return "", errors.Join(werr, cerr)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return p, nil
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

// UserConfigFiles returns the files harnessd's own git reads outside the
// repository, for the sandbox to show it: the ignore files
// (core.excludesFile, or git's default $XDG_CONFIG_HOME/git/ignore) that
// exist, and the directory of the global file harnessd writes.
func UserConfigFiles() []string {
	var out []string
	for _, v := range loadUserConfig().vars {
		if v.name == "core.excludesfile" {
			out = append(out, interpolatePath(v.value)...)
		}
	}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && os.Getenv("HOME") != "" {
		xdg = filepath.Join(os.Getenv("HOME"), ".config")
	}
	if xdg != "" {
		out = append(out, filepath.Join(xdg, "git", "ignore"))
	}
	if f := userGlobalFile(); f != "" {
		out = append(out, filepath.Dir(f)) // the global file and its includes
	}
	var exist []string
	for _, p := range out {
		if fi, err := os.Stat(p); err == nil && (fi.Mode().IsRegular() || fi.IsDir()) {
			exist = append(exist, p)
		}
	}
	sort.Strings(exist)
	return exist
}

// ownedBySelf reports whether fi belongs to this process's uid.
func ownedBySelf(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
