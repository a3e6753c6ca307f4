package classify

import (
	"strconv"
	"strings"
)

// gitReadonly lists git subcommands that only read the repository. Their
// options are still checked against gitDenied.
var gitReadonly = map[string]string{}

func init() {
	for _, s := range []string{
		"status", "diff", "log", "show", "rev-parse", "ls-files", "ls-tree", "cat-file", "blame",
		"annotate", "describe", "shortlog", "grep", "merge-base", "rev-list", "name-rev",
		"show-ref", "for-each-ref", "whatchanged", "count-objects", "check-ignore", "check-attr",
		"check-mailmap", "check-ref-format", "show-branch", "cherry", "range-diff", "diff-tree",
		"diff-index", "diff-files", "var", "version", "verify-pack", "patch-id", "merge-tree",
		"show-index", "get-tar-commit-id", "column", "stripspace",
	} {
		gitReadonly[s] = "git " + s + " only reads"
	}
}

// gitDenied lists long options that make git write files, run programs or
// leave the repository. git accepts unambiguous abbreviations, so prefixes of
// these are denied too (except where the prefix is itself a harmless option).
var gitDenied = []string{
	"output", "ext-diff", "textconv", "exec", "upload-pack", "receive-pack", "no-index",
	"open-files-in-pager", "config-env", "exec-path", "paginate", "filters",
}

var gitHarmlessPrefixes = map[string]bool{"text": true}

func gitDeniedOption(a string) (string, bool) {
	if !strings.HasPrefix(a, "--") || a == "--" {
		return "", false
	}
	name, _ := longName(a)
	if name == "" || gitHarmlessPrefixes[name] {
		return "", false
	}
	for _, d := range gitDenied {
		if strings.HasPrefix(d, name) {
			return "--" + name, true
		}
	}
	return "", false
}

func gitOptionNotAllowed(opt string) string { return "git option " + opt + " is not allowed" }

func classifyGit(_ string, args []string, depth int) Result {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		a := args[i]
		switch {
		case a == "--no-pager" || a == "-P" || a == "--no-optional-locks" ||
			a == "--literal-pathspecs" || a == "--glob-pathspecs" || a == "--noglob-pathspecs" ||
			a == "--icase-pathspecs" || a == "--no-replace-objects" || a == "--no-lazy-fetch" ||
			a == "--no-advice" || a == "--bare":
			i++
		case a == "--version" || a == "-v" || a == "--help" || a == "-h" ||
			strings.HasPrefix(a, "--list-cmds="):
			return result(Readonly, "git "+a+" only prints")
		case a == "-c" || a == "-C" || a == "-p":
			return result(Unknown, gitOptionNotAllowed(a))
		default:
			name, _ := longName(a)
			switch name {
			case "config-env", "git-dir", "work-tree", "exec-path", "paginate", "super-prefix",
				"namespace", "attr-source":
				return result(Unknown, gitOptionNotAllowed("--"+name))
			}
			return result(Unknown, "unrecognised git option "+strconv.Quote(a))
		}
	}
	if i >= len(args) {
		return result(Readonly, "git without a subcommand prints help")
	}
	sub, rest := args[i], args[i+1:]
	r := gitSubcommand(sub, rest, depth)
	for _, a := range rest {
		if a == "--" {
			break
		}
		if opt, bad := gitDeniedOption(a); bad {
			r.raise(Unknown, gitOptionNotAllowed(opt))
		}
	}
	return r
}

func gitSubcommand(sub string, rest []string, _ int) Result {
	if why, ok := gitReadonly[sub]; ok {
		switch sub {
		case "grep":
			for _, a := range rest {
				if a == "--" {
					break
				}
				if isShort(a) && strings.Contains(a, "O") {
					return result(Unknown, "git grep -O opens files in a pager program")
				}
			}
		case "diff", "log", "show", "whatchanged", "diff-tree", "diff-index", "diff-files":
			for _, a := range rest {
				if a == "--" {
					break
				}
				if a == "-o" || (strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "--")) {
					return result(Unknown, gitOptionNotAllowed("-o"))
				}
			}
		}
		return result(Readonly, why)
	}
	has := func(names ...string) bool { return gitHas(rest, names...) }
	ws := func(why string) Result { return result(WorkspaceWrite, why) }
	net := func(why string) Result { return remote(why) }
	switch sub {
	case "branch":
		return gitBranch(rest)
	case "tag":
		return gitTag(rest)
	case "remote":
		return gitRemote(rest)
	case "config":
		return gitConfig(rest)
	case "reflog":
		op, _ := firstOperand(rest)
		switch op {
		case "expire", "delete", "drop":
			return result(Destructive, "git reflog "+op+" deletes reflog entries")
		}
		return result(Readonly, "git reflog only reads")
	case "symbolic-ref":
		if has("-d", "--delete") {
			return result(Destructive, "git symbolic-ref --delete deletes a symbolic ref")
		}
		if gitOperands(rest, "m") >= 2 {
			return ws("git symbolic-ref with two arguments updates a ref")
		}
		return result(Readonly, "git symbolic-ref only reads")
	case "worktree":
		op, _ := firstOperand(rest)
		switch op {
		case "list":
			return result(Readonly, "git worktree list only reads")
		case "remove":
			if has("-f", "--force") || gitShortHas(rest, 'f') {
				return result(Destructive, "git worktree remove --force discards changes")
			}
		}
		return ws("git worktree " + op + " changes worktrees")
	case "stash":
		op, _ := firstOperand(rest)
		switch op {
		case "list", "show":
			return result(Readonly, "git stash "+op+" only reads")
		case "drop", "clear":
			return result(Destructive, "git stash "+op+" deletes stashed changes")
		}
		return ws("git stash changes the working tree")
	case "push":
		return gitPush(rest)
	case "fetch", "pull", "clone", "ls-remote", "send-email", "request-pull", "fetch-pack",
		"send-pack", "svn", "p4":
		return net("git " + sub + " uses the network")
	case "submodule":
		op, _ := firstOperand(rest)
		switch op {
		case "", "status", "summary":
			return result(Readonly, "git submodule "+op+" only reads")
		case "foreach":
			return result(Shell, "git submodule foreach runs shell commands")
		case "update", "add":
			return net("git submodule " + op + " uses the network")
		}
		return ws("git submodule " + op + " changes submodules")
	case "lfs":
		op, _ := firstOperand(rest)
		switch op {
		case "ls-files", "status", "env", "version":
			return result(Readonly, "git lfs "+op+" only reads")
		case "push", "pull", "fetch", "clone":
			return net("git lfs " + op + " uses the network")
		}
		return ws("git lfs " + op + " changes the repository")
	case "archive":
		if gitHasPrefix(rest, "--remote") {
			return net("git archive --remote uses the network")
		}
		if has("-o") {
			return ws("git archive -o writes a file")
		}
		return result(Readonly, "git archive writes the archive to standard output")
	case "help":
		for _, a := range rest {
			switch a {
			case "-a", "--all", "-g", "--guides", "-c", "--config", "--verbose":
			default:
				return result(Unknown, "git help opens a manual page viewer")
			}
		}
		return result(Readonly, "git help only prints")
	case "fsck":
		if gitHasPrefix(rest, "--lost-found") {
			return ws("git fsck --lost-found writes files")
		}
		return result(Readonly, "git fsck only reads")
	case "hash-object":
		if has("-w") || gitShortHas(rest, 'w') {
			return ws("git hash-object -w writes objects")
		}
		return result(Readonly, "git hash-object only reads")
	case "notes":
		op, _ := firstOperand(rest)
		if op == "list" || op == "show" || op == "" {
			return result(Readonly, "git notes "+op+" only reads")
		}
		return ws("git notes " + op + " changes notes")
	case "apply":
		if !has("--apply") && (has("--check", "--stat", "--numstat", "--summary")) {
			return result(Readonly, "git apply --check only reads")
		}
		return ws("git apply changes files")
	case "reset":
		for _, a := range rest {
			if a == "--" {
				break
			}
			if strings.HasPrefix(a, "--") {
				name, _ := longName(a)
				if abbrevOf(name, "hard", 2) || abbrevOf(name, "merge", 2) {
					return result(Destructive, "git reset --"+name+" discards uncommitted changes")
				}
			}
		}
		return ws("git reset moves HEAD or the index")
	case "clean":
		force := has("--force") || gitShortHas(rest, 'f')
		dry := has("--dry-run") || gitShortHas(rest, 'n')
		switch {
		case dry && !force:
			return result(Readonly, "git clean -n only lists files")
		case has("--interactive") || gitShortHas(rest, 'i'):
			return result(Unknown, "git clean -i is interactive")
		}
		return result(Destructive, "git clean -f deletes untracked files")
	case "checkout":
		if has("--force") || gitShortHas(rest, 'f') {
			return result(Destructive, "git checkout --force discards local changes")
		}
		if p, ok := gitAllPathspec(rest); ok {
			return result(Destructive, "git checkout "+p+" discards uncommitted changes")
		}
		return ws("git checkout changes the working tree")
	case "switch":
		if has("--force", "--discard-changes") || gitShortHas(rest, 'f') {
			return result(Destructive, "git switch --discard-changes discards local changes")
		}
		return ws("git switch changes the working tree")
	case "restore":
		staged := has("--staged") || gitShortHas(rest, 'S')
		worktree := has("--worktree") || gitShortHas(rest, 'W')
		if p, ok := gitAllPathspec(rest); ok && (!staged || worktree) {
			return result(Destructive, "git restore "+p+" discards uncommitted changes")
		}
		return ws("git restore changes files")
	case "rm":
		if (has("--force") || gitShortHas(rest, 'f')) && !has("--cached") {
			return result(Destructive, "git rm --force discards uncommitted changes")
		}
		return ws("git rm removes files")
	case "rebase":
		for _, a := range rest {
			if a == "-x" || strings.HasPrefix(a, "-x") && !strings.HasPrefix(a, "--") {
				return result(Unknown, "git rebase -x runs commands")
			}
		}
		if has("-i", "--interactive") {
			return result(Unknown, "git rebase -i runs an editor")
		}
		return ws("git rebase rewrites commits")
	case "bisect":
		if op, _ := firstOperand(rest); op == "run" {
			return result(Unknown, "git bisect run runs commands")
		}
		return ws("git bisect changes the working tree")
	case "gc":
		for _, a := range rest {
			if a == "--prune=now" || a == "--prune=all" {
				return result(Destructive, "git gc "+a+" deletes unreachable objects")
			}
		}
		return ws("git gc repacks the repository")
	case "prune":
		if has("-n", "--dry-run") {
			return result(Readonly, "git prune -n only lists objects")
		}
		return result(Destructive, "git prune deletes unreachable objects")
	case "update-ref":
		if has("-d") {
			return result(Destructive, "git update-ref -d deletes a ref")
		}
		if has("--stdin") {
			return result(Unknown, "git update-ref --stdin reads ref updates from its input")
		}
		return ws("git update-ref updates a ref")
	case "filter-branch", "filter-repo":
		return result(Destructive, "git "+sub+" rewrites history")
	case "difftool", "mergetool", "instaweb", "daemon", "web--browse", "credential", "shell":
		return result(Unknown, "git "+sub+" runs other programs")
	case "add", "commit", "merge", "cherry-pick", "revert", "am", "init", "mv", "format-patch",
		"update-index", "read-tree", "write-tree", "commit-tree", "mktag", "mktree", "replace",
		"sparse-checkout", "maintenance", "pack-refs", "repack", "checkout-index", "merge-file",
		"rerere", "unpack-objects", "index-pack", "prune-packed", "multi-pack-index", "commit-graph":
		return ws("git " + sub + " changes the repository")
	}
	return result(Unknown, "git "+strconv.Quote(sub)+" is not a known subcommand")
}

// gitHas reports whether any argument before "--" is exactly one of names.
func gitHas(args []string, names ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		for _, n := range names {
			if a == n {
				return true
			}
		}
	}
	return false
}

func gitHasPrefix(args []string, prefix string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

// gitShortHas reports whether a short-option cluster before "--" holds c.
func gitShortHas(args []string, c byte) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isShort(a) && strings.IndexByte(a[1:], c) >= 0 {
			return true
		}
	}
	return false
}

// gitOperands counts non-option arguments; withArg lists short options that
// take the next argument.
func gitOperands(args []string, withArg string) int {
	n := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return n + len(args) - i - 1
		}
		if isShort(a) {
			if _, next := scanShort(a, withArg); next {
				i++
			}
			continue
		}
		if strings.HasPrefix(a, "--") {
			continue
		}
		n++
	}
	return n
}

// gitAllPathspec finds a pathspec that covers the whole tree ("." and friends).
func gitAllPathspec(args []string) (string, bool) {
	for _, a := range args {
		switch a {
		case ".", "./", ":/", ":/.", ":(top)", "*", "..", "../", ":", ":/*", "./*":
			return a, true
		}
	}
	return "", false
}

func gitBranch(args []string) Result {
	list, del, force, create := false, false, false, false
	n := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			n += len(args) - i - 1
			break
		}
		if strings.HasPrefix(a, "--") {
			name, attached := longName(a)
			switch name {
			case "list", "verbose", "show-current", "all", "remotes":
				list = list || name != "all" && name != "remotes"
			case "contains", "no-contains", "merged", "no-merged", "points-at":
				list = true
				if !attached && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					i++
				}
			case "delete":
				del = true
			case "force":
				force = true
			case "move", "copy", "set-upstream-to", "unset-upstream", "track", "no-track", "create-reflog":
				create = true
				if name == "set-upstream-to" && !attached {
					i++
				}
			case "edit-description":
				return result(Unknown, "git branch --edit-description runs an editor")
			case "sort", "format", "column", "color", "abbrev":
				if (name == "sort" || name == "format") && !attached {
					i++
				}
			}
			continue
		}
		if isShort(a) {
			letters, next := scanShort(a, "u")
			for k := 0; k < len(letters); k++ {
				switch letters[k] {
				case 'l', 'v':
					list = true
				case 'd':
					del = true
				case 'D':
					del, force = true, true
				case 'f':
					force = true
				case 'M', 'C':
					create, force = true, true
				case 'm', 'c', 'u', 't':
					create = true
				}
			}
			if next {
				i++
			}
			continue
		}
		n++
	}
	switch {
	case del && force:
		return result(Destructive, "git branch -D deletes unmerged branches")
	case del:
		return result(WorkspaceWrite, "git branch -d deletes a merged branch")
	case force && (n > 0 || create):
		return result(Destructive, "git branch --force overwrites an existing branch")
	case create:
		return result(WorkspaceWrite, "git branch changes branches")
	case n == 0 || list:
		return result(Readonly, "git branch lists branches")
	}
	return result(WorkspaceWrite, "git branch NAME creates a branch")
}

func gitTag(args []string) Result {
	list, write, force, del := false, false, false, false
	n := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			n += len(args) - i - 1
			break
		}
		if strings.HasPrefix(a, "--") {
			name, attached := longName(a)
			switch name {
			case "list":
				list = true
			case "contains", "no-contains", "merged", "no-merged", "points-at":
				if !attached && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					i++
				}
			case "delete":
				del = true
			case "force":
				force = true
			case "verify":
				return result(Unknown, "git tag --verify runs gpg")
			case "annotate", "sign", "message", "file", "local-user", "edit", "create-reflog":
				write = true
				if (name == "message" || name == "file" || name == "local-user") && !attached {
					i++
				}
			case "sort", "format", "column", "color":
				if (name == "sort" || name == "format") && !attached {
					i++
				}
			}
			continue
		}
		if isShort(a) {
			letters, next := scanShort(a, "mFu")
			for k := 0; k < len(letters); k++ {
				switch letters[k] {
				case 'l':
					list = true
				case 'd':
					del = true
				case 'f':
					force = true
				case 'v':
					return result(Unknown, "git tag -v runs gpg")
				case 'a', 's', 'm', 'F', 'u', 'e':
					write = true
				}
			}
			if next {
				i++
			}
			continue
		}
		n++
	}
	switch {
	case del:
		return result(WorkspaceWrite, "git tag -d deletes a tag")
	case force && n > 0:
		return result(Destructive, "git tag --force overwrites an existing tag")
	case write:
		return result(WorkspaceWrite, "git tag creates a tag")
	case list || n == 0:
		return result(Readonly, "git tag lists tags")
	}
	return result(WorkspaceWrite, "git tag NAME creates a tag")
}

func gitRemote(args []string) Result {
	op, rest := firstOperand(args)
	switch op {
	case "":
		return result(Readonly, "git remote lists remotes")
	case "get-url":
		return result(Readonly, "git remote get-url only reads")
	case "show":
		if gitHas(rest, "-n") {
			return result(Readonly, "git remote show -n only reads")
		}
		return remote("git remote show queries the remote")
	case "update", "prune":
		return remote("git remote " + op + " uses the network")
	case "add", "rename", "remove", "rm", "set-head", "set-branches", "set-url":
		return result(WorkspaceWrite, "git remote "+op+" changes the repository configuration")
	}
	return result(Unknown, "git remote "+strconv.Quote(op)+" is not a known subcommand")
}

// gitConfig allows the reading forms; a write of a key that makes git run a
// program (core.pager, alias.*, filter.*, ...) is destructive, since it would
// turn later readonly git commands into arbitrary code.
func gitConfig(args []string) Result {
	var operands []string
	read, write := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--get" || a == "--get-all" || a == "--get-regexp" || a == "--get-urlmatch" ||
			a == "--list" || a == "-l" || a == "--get-color" || a == "--get-colorbool":
			read = true
		case a == "--unset" || a == "--unset-all" || a == "--add" || a == "--replace-all" ||
			a == "--rename-section" || a == "--remove-section":
			write = true
		case a == "--edit" || a == "-e":
			return result(Unknown, "git config --edit runs an editor")
		case a == "-f" || a == "--file" || a == "--blob" || a == "--type" || a == "--default" || a == "--comment":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) > 0 && !read && !write {
		switch operands[0] {
		case "get", "list":
			return result(Readonly, "git config "+operands[0]+" only reads")
		case "set", "unset", "rename-section", "remove-section":
			write = true
			operands = operands[1:]
		case "edit":
			return result(Unknown, "git config edit runs an editor")
		default:
			write = len(operands) >= 2
		}
	}
	if !write {
		return result(Readonly, "git config only reads")
	}
	if len(operands) > 0 && gitExecKey(operands[0]) {
		return result(Destructive, "git config "+operands[0]+" makes git run a program")
	}
	return result(WorkspaceWrite, "git config changes the repository configuration")
}

func gitExecKey(key string) bool {
	k := strings.ToLower(key)
	section := k
	if i := strings.IndexByte(k, '.'); i >= 0 {
		section = k[:i]
	}
	switch section {
	case "alias", "filter", "include", "includeif", "pager", "core", "safe":
		if section != "core" {
			return true
		}
	}
	last := k
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		last = k[i+1:]
	}
	switch last {
	case "pager", "editor", "fsmonitor", "hookspath", "sshcommand", "askpass", "gitproxy",
		"textconv", "command", "cmd", "driver", "helper", "program", "external", "uploadpack",
		"receivepack", "difffilter", "packobjectshook", "worktree", "attributesfile", "excludesfile":
		return true
	}
	return false
}

func gitPush(args []string) Result {
	operands := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			continue
		}
		if strings.HasPrefix(a, "--") {
			name, attached := longName(a)
			for _, d := range []string{"force", "force-with-lease", "force-if-includes", "mirror", "delete", "prune"} {
				if abbrevOf(name, d, 3) || (name == "f" || name == "fo") {
					return result(Destructive, "git push --"+name+" can overwrite or delete remote history")
				}
			}
			if (name == "repo" || name == "push-option" || name == "receive-pack" || name == "exec") && !attached {
				i++
			}
			continue
		}
		if isShort(a) {
			letters, next := scanShort(a, "o")
			if strings.ContainsAny(letters, "fd") {
				return result(Destructive, "git push "+a+" can overwrite or delete remote history")
			}
			if next {
				i++
			}
			continue
		}
		operands++
		if operands > 1 && (strings.HasPrefix(a, "+") || strings.HasPrefix(a, ":")) {
			return result(Destructive, "git push refspec "+strconv.Quote(a)+" force-updates or deletes a remote branch")
		}
	}
	return remote("git push writes to a remote repository")
}
