package command

import (
	"path"
	"slices"
	"strings"
)

// shieldArgv returns argv with arguments added so that a read-only command
// that reads whole trees (git diff/log/show/grep, rg, grep -r) skips secret
// paths: argument checks (pathsafe.CheckArgv) only see the paths an agent
// names, not the files a recursive read reaches. patterns are the secret
// denylist (doublestar globs matched at any depth unless they start with
// "/"). Other programs are returned unchanged; output redaction remains the
// backstop for everything.
func shieldArgv(argv []string, patterns []string) []string {
	if len(argv) == 0 || len(patterns) == 0 {
		return argv
	}
	switch path.Base(argv[0]) {
	case "git":
		return shieldGit(argv, patterns)
	case "rg":
		extra := make([]string, 0, len(patterns))
		for _, p := range patterns {
			extra = append(extra, "--glob=!"+anyDepth(p))
		}
		return insertAfterProgram(argv, extra)
	case "grep", "egrep", "fgrep":
		var extra []string
		for _, p := range patterns {
			p = strings.TrimPrefix(p, "/")
			if dir, ok := strings.CutSuffix(p, "/**"); ok && !strings.Contains(dir, "/") {
				extra = append(extra, "--exclude-dir="+dir)
				continue
			}
			if i := strings.IndexByte(p, '/'); i >= 0 {
				// grep matches base names only: leave out the directory.
				extra = append(extra, "--exclude-dir="+p[:i])
				continue
			}
			extra = append(extra, "--exclude="+p)
		}
		return insertAfterProgram(argv, extra)
	}
	return argv
}

// gitTreeReader reports the git subcommands that print file contents of
// many paths and take pathspecs.
func gitTreeReader(sub string) bool {
	switch sub {
	case "diff", "log", "show", "grep", "whatchanged":
		return true
	}
	return false
}

func shieldGit(argv []string, patterns []string) []string {
	sub := ""
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-") {
			sub = a
			break
		}
	}
	if !gitTreeReader(sub) {
		return argv
	}
	out := slices.Clone(argv)
	if !slices.Contains(out, "--") {
		out = append(out, "--", ":(top)")
	}
	for _, p := range patterns {
		out = append(out, ":(exclude,glob,icase)"+anyDepth(p))
	}
	return out
}

// anyDepth turns a denylist pattern into a glob that matches at any depth
// ("x" -> "**/x"), keeping root-anchored ones ("/x" -> "x").
func anyDepth(p string) string {
	if rest, ok := strings.CutPrefix(p, "/"); ok {
		return rest
	}
	return "**/" + p
}

func insertAfterProgram(argv, extra []string) []string {
	out := make([]string, 0, len(argv)+len(extra))
	out = append(out, argv[0])
	out = append(out, extra...)
	return append(out, argv[1:]...)
}
