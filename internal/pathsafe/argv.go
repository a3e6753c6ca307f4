package pathsafe

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/harnessd/harnessd/contract/errs"
)

// allowedDevices are absolute paths outside the root that commands may name.
var allowedDevices = map[string]bool{
	"/dev/null":   true,
	"/dev/stdin":  true,
	"/dev/stdout": true,
	"/dev/stderr": true,
}

// CheckArgv checks the arguments of a command (argv[0] is the program and is
// not checked) for paths that leave the root or name secrets.
//
// Arguments are not always paths (a search pattern like "foo|bar/baz" is not),
// so the check is a heuristic. Each argument, and the value of a
// "--flag=value" or "name=value" argument, is examined as follows:
//
//   - "~", "~user/..." and "$HOME"/"${HOME}" forms give errs.PathOutsideRoot.
//   - An absolute path is resolved like Resolve (symlinks followed) unless it
//     is /dev/null, /dev/stdin, /dev/stdout or /dev/stderr: outside the root
//     gives errs.PathOutsideRoot, a secret gives errs.SecretPathDenied.
//   - A relative path that after cleaning is ".." or starts with "../" gives
//     errs.PathOutsideRoot.
//   - A relative argument without glob metacharacters (*?[]{}) whose cleaned
//     form matches the denylist (by base name or any suffix, e.g. ".env",
//     "config/.aws/credentials") gives errs.SecretPathDenied. Glob-looking
//     arguments such as find's -name '*.pem' are patterns, not paths.
//   - A relative argument that starts with "./" or whose first component
//     exists under the root is resolved like Resolve, which catches symlinks
//     leading outside ("link/newfile" with link -> /etc) and symlinks to
//     secrets.
//   - For a "rev:path" argument (git show HEAD:.env) the part after the first
//     ':' is checked against the denylist.
//   - A value glued to a short option ("-f.env", "-g*") is checked too.
//   - A glob argument (".en?", "*", "**/*.pem") that matches a secret file
//     under the root, or whose last component can match a secret pattern at
//     any depth, gives errs.SecretPathDenied: the program expands it.
//   - The script of a shell started with -c (sh -c, env bash -c, find -exec
//     sh -c) is parsed and its words are checked the same way, redirection
//     targets included; a script that does not parse is refused.
//
// Anything else (flags, patterns, words) is accepted. An empty argv or a NUL
// byte in any argument gives errs.InvalidArgument. The .git rule does not
// apply: commands like git legitimately read .git.
func (r *Root) CheckArgv(argv []string) error {
	if len(argv) == 0 {
		return errs.New(errs.InvalidArgument, "empty argv")
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return errs.New(errs.InvalidArgument, "argument %d contains a NUL byte", i).With("index", i)
		}
	}
	if argv[0] == "" {
		return errs.New(errs.InvalidArgument, "empty program name")
	}
	if err := r.checkProgram(argv[0]); err != nil {
		return withIndex(err, 0)
	}
	scripts := scriptIndexes(argv)
	for i, a := range argv[1:] {
		if isScript(scripts, i+1) {
			continue // parsed below, word by word
		}
		if err := r.checkWord(a, true); err != nil {
			return withIndex(err, i+1)
		}
	}
	for _, s := range shellScripts(argv) {
		if err := r.checkScript(s, 1); err != nil {
			return err
		}
	}
	return nil
}

func withIndex(err error, i int) error {
	return errs.From(err).With("arg_index", i)
}

func (r *Root) checkArg(a string) error { return r.checkArgGlob(a, true) }

// checkArgGlob is checkArg; dots says whether a glob matches names that
// start with a dot (a program's glob does; a shell's does not).
func (r *Root) checkArgGlob(a string, dots bool) error {
	if a == "" || a == "-" || a == "--" {
		return nil
	}
	if isHomeLike(a) {
		return errs.New(errs.PathOutsideRoot, "argument %q refers to a home directory, outside the repository root", a).With("path", a)
	}
	if filepath.IsAbs(a) {
		if allowedDevices[filepath.Clean(a)] {
			return nil
		}
		return r.resolveArg(a)
	}
	c := path.Clean(a)
	if c == ".." || strings.HasPrefix(c, "../") {
		return errs.New(errs.PathOutsideRoot, "argument %q escapes the repository root", a).With("path", a)
	}
	if strings.HasPrefix(a, "./") || a == "." {
		return r.resolveArg(a)
	}
	if !hasGlobMeta(a) {
		if err := r.checkSecretOnly(a, c); err != nil {
			return err
		}
	} else if err := r.checkGlob(a, dots); err != nil {
		return err
	}
	if len(a) <= MaxPathLen && r.firstComponentExists(c) {
		return r.resolveArg(a)
	}
	return nil
}

// HardLinked reports whether fi is a regular file with more than one link:
// another name of the same file, which may be outside the root or a secret
// path. Kernel rules (Landlock, bind mounts) follow the file, not the name.
func HardLinked(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && st.Nlink > 1
}

// resolveArg resolves an argument that names a path under the root and
// refuses a regular file with more than one link: a hard link is the same
// file as its other names, which may be outside the root or secret, and
// the kernel's rules follow the file, not the name.
func (r *Root) resolveArg(a string) error {
	abs, _, _, err := r.resolve(a, modeArgv)
	if err != nil {
		return err
	}
	var st syscall.Stat_t
	if lstat(abs, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Nlink > 1 {
		return errs.New(errs.PathNotAllowed, "argument %q is a hard link (%d names for one file): harnessd does not let commands read through hard links", a, st.Nlink).
			With("path", a)
	}
	return nil
}

// checkSecretOnly applies only the denylist to the relative path rel, which
// came from argument a.
func (r *Root) checkSecretOnly(a, rel string) error {
	if pat, ok := r.deny.Match(rel); ok {
		return r.deny.SecretError(fmt.Sprintf("argument %q", a), a, rel, pat)
	}
	return nil
}

// firstComponentExists reports whether the first component of the clean
// relative path c exists under the root (as anything, dangling symlinks
// included).
func (r *Root) firstComponentExists(c string) bool {
	first, _, _ := strings.Cut(c, "/")
	if first == "" || first == "." || first == ".." {
		return false
	}
	var st syscall.Stat_t
	return lstat(r.path+"/"+first, &st) == nil
}

// isHomeLike reports whether a names a home directory: "~", "~/x", "~user/x",
// "$HOME", "${HOME}/x".
func isHomeLike(a string) bool {
	if strings.HasPrefix(a, "~") {
		return true
	}
	for _, h := range []string{"$HOME", "${HOME}"} {
		if strings.HasPrefix(a, h) && (len(a) == len(h) || a[len(h)] == '/') {
			return true
		}
	}
	return false
}

// hasGlobMeta reports whether a looks like a glob pattern.
func hasGlobMeta(a string) bool { return strings.ContainsAny(a, "*?[]{}") }

// assignmentValue returns the value of "--flag=value", "-f=value" or
// "name=value" (dd's if=/etc/shadow, make's VAR=path); name may only contain
// letters, digits, '-', '_' and '.'.
func assignmentValue(a string) (string, bool) {
	i := strings.IndexByte(a, '=')
	if i <= 0 || i == len(a)-1 {
		return "", false
	}
	for j := 0; j < i; j++ {
		c := a[j]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", false
		}
	}
	return a[i+1:], true
}

// revPathPart returns the path of a git "rev:path" argument, cleaned.
func revPathPart(a string) (string, bool) {
	i := strings.IndexByte(a, ':')
	if i < 0 || i == len(a)-1 || hasGlobMeta(a[i+1:]) {
		return "", false
	}
	p := path.Clean(a[i+1:])
	p = strings.TrimLeft(p, "/")
	if p == "" || p == "." {
		return "", false
	}
	return p, true
}
