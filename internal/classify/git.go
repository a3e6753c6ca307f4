package classify

import (
	"slices"
	"strconv"
	"strings"
)

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

func classifyGit(_ string, args []string, _ int) Result {
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
		case a == "-c" && i+1 < len(args) && gitImplicitKey(args[i+1]):
			key, _, _ := strings.Cut(args[i+1], "=") // the value is the agent's program: never echoed
			return result(Destructive, "git -c "+key+"=… makes git run another command, or push more than it names, without saying so")
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
	r := gitSubcommand(sub, rest)
	if r.Class == Destructive && r.Effect == nil && sub != "push" {
		r.Effect = gitWorkspaceEffect(sub, rest)
	}
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

// gitSubcommand classifies a git subcommand by its row in gitSubcommands.
func gitSubcommand(sub string, rest []string) Result {
	s, ok := gitSubcommands[sub]
	if !ok {
		return result(Unknown, "git "+strconv.Quote(sub)+" is not a known subcommand")
	}
	if s.parse != nil {
		return s.parse(rest)
	}
	op := ""
	if s.needsOp {
		op, _ = firstOperand(rest)
	}
	for i := range s.rules {
		if arg, ok := s.rules[i].holds(rest, op); ok {
			return s.rules[i].then.result(op, arg)
		}
	}
	return s.otherwise.result(op, "")
}

// The git subcommands are data, as git's own parse-options tables are: each
// row names the subcommands it describes, the rules tried in order (every
// condition of a rule holds: its verdict decides) and the verdict when no
// rule holds. The five whose options need a parser of their own (branch, tag,
// remote, config, push) name it instead. One interpreter (gitSubcommand,
// gitRule.holds, gitCond.match) reads every row.
var gitSubcommands = gitTable(
	// Subcommands that only read. Their options are still checked against
	// gitDenied.
	gitSub{names: []string{
		"status", "rev-parse", "ls-files", "ls-tree", "cat-file", "blame",
		"annotate", "describe", "shortlog", "merge-base", "rev-list", "name-rev",
		"show-ref", "for-each-ref", "count-objects", "check-ignore", "check-attr",
		"check-mailmap", "check-ref-format", "show-branch", "cherry", "range-diff",
		"var", "version", "verify-pack", "patch-id", "merge-tree",
		"show-index", "get-tar-commit-id", "column", "stripspace",
	}, otherwise: readonly("git $sub only reads")},
	gitSub{names: []string{"grep"}, rules: []gitRule{
		when(unknown("git grep -O opens files in a pager program"), flag("O")),
	}, otherwise: readonly("git $sub only reads")},
	gitSub{names: []string{"diff", "log", "show", "whatchanged", "diff-tree", "diff-index", "diff-files"}, rules: []gitRule{
		when(unknown(gitOptionNotAllowed("-o")), prefix("-o")),
	}, otherwise: readonly("git $sub only reads")},

	gitSub{names: []string{"branch"}, parse: gitBranch},
	gitSub{names: []string{"tag"}, parse: gitTag},
	gitSub{names: []string{"remote"}, parse: gitRemote},
	gitSub{names: []string{"config"}, parse: gitConfig},
	gitSub{names: []string{"push"}, parse: gitPush},

	gitSub{names: []string{"reflog"}, rules: []gitRule{
		when(destroys("git reflog $op deletes reflog entries"), operand("expire", "delete", "drop")),
	}, otherwise: readonly("git reflog only reads")},
	gitSub{names: []string{"symbolic-ref"}, rules: []gitRule{
		when(destroys("git symbolic-ref --delete deletes a symbolic ref"), arg("-d", "--delete")),
		when(writes("git symbolic-ref with two arguments updates a ref"), operands("m", 2)),
	}, otherwise: readonly("git symbolic-ref only reads")},
	gitSub{names: []string{"worktree"}, rules: []gitRule{
		when(readonly("git worktree list only reads"), operand("list")),
		when(destroys("git worktree remove --force discards changes"), operand("remove"), flag("f", "--force")),
	}, otherwise: writes("git worktree $op changes worktrees")},
	gitSub{names: []string{"stash"}, rules: []gitRule{
		when(readonly("git stash $op only reads"), operand("list", "show")),
		when(destroys("git stash $op deletes stashed changes"), operand("drop", "clear")),
	}, otherwise: writes("git stash changes the working tree")},
	gitSub{names: []string{
		"fetch", "pull", "clone", "ls-remote", "send-email", "request-pull", "fetch-pack",
		"send-pack", "svn", "p4",
	}, otherwise: network("git $sub uses the network")},
	gitSub{names: []string{"submodule"}, rules: []gitRule{
		when(readonly("git submodule $op only reads"), operand("", "status", "summary")),
		when(shell("git submodule foreach runs shell commands"), operand("foreach")),
		when(network("git submodule $op uses the network"), operand("update", "add")),
	}, otherwise: writes("git submodule $op changes submodules")},
	gitSub{names: []string{"lfs"}, rules: []gitRule{
		when(readonly("git lfs $op only reads"), operand("ls-files", "status", "env", "version")),
		when(network("git lfs $op uses the network"), operand("push", "pull", "fetch", "clone")),
	}, otherwise: writes("git lfs $op changes the repository")},
	gitSub{names: []string{"archive"}, rules: []gitRule{
		when(network("git archive --remote uses the network"), prefix("--remote")),
		when(writes("git archive -o writes a file"), arg("-o")),
	}, otherwise: readonly("git archive writes the archive to standard output")},
	gitSub{names: []string{"help"}, rules: []gitRule{
		when(unknown("git help opens a manual page viewer"), outside("-a", "--all", "-g", "--guides", "-c", "--config", "--verbose")),
	}, otherwise: readonly("git help only prints")},
	gitSub{names: []string{"fsck"}, rules: []gitRule{
		when(writes("git fsck --lost-found writes files"), prefix("--lost-found")),
	}, otherwise: readonly("git fsck only reads")},
	gitSub{names: []string{"hash-object"}, rules: []gitRule{
		when(writes("git hash-object -w writes objects"), flag("w")),
	}, otherwise: readonly("git hash-object only reads")},
	gitSub{names: []string{"notes"}, rules: []gitRule{
		when(readonly("git notes $op only reads"), operand("list", "show", "")),
	}, otherwise: writes("git notes $op changes notes")},
	gitSub{names: []string{"apply"}, rules: []gitRule{
		when(readonly("git apply --check only reads"), not(arg("--apply")), arg("--check", "--stat", "--numstat", "--summary")),
	}, otherwise: writes("git apply changes files")},
	gitSub{names: []string{"reset"}, rules: []gitRule{
		when(destroys("git reset $arg discards uncommitted changes"), abbrev(2, "hard", "merge")),
	}, otherwise: writes("git reset moves HEAD or the index")},
	gitSub{names: []string{"clean"}, rules: []gitRule{
		when(readonly("git clean -n only lists files"), flag("n", "--dry-run"), not(flag("f", "--force"))),
		when(unknown("git clean -i is interactive"), flag("i", "--interactive")),
	}, otherwise: destroys("git clean -f deletes untracked files")},
	gitSub{names: []string{"checkout"}, rules: []gitRule{
		when(destroys("git checkout --force discards local changes"), flag("f", "--force")),
		when(destroys("git checkout $arg discards uncommitted changes"), wholeTree()),
	}, otherwise: writes("git checkout changes the working tree")},
	gitSub{names: []string{"switch"}, rules: []gitRule{
		when(destroys("git switch --discard-changes discards local changes"), flag("f", "--force", "--discard-changes")),
	}, otherwise: writes("git switch changes the working tree")},
	gitSub{names: []string{"restore"}, rules: []gitRule{
		when(destroys("git restore $arg discards uncommitted changes"), wholeTree(), not(flag("S", "--staged"))),
		when(destroys("git restore $arg discards uncommitted changes"), wholeTree(), flag("W", "--worktree")),
	}, otherwise: writes("git restore changes files")},
	gitSub{names: []string{"rm"}, rules: []gitRule{
		when(destroys("git rm --force discards uncommitted changes"), flag("f", "--force"), not(arg("--cached"))),
	}, otherwise: writes("git rm removes files")},
	gitSub{names: []string{"rebase"}, rules: []gitRule{
		when(unknown("git rebase -x runs commands"), anywhere(prefix("-x"))),
		when(unknown("git rebase -i runs an editor"), arg("-i", "--interactive")),
	}, otherwise: writes("git rebase rewrites commits")},
	gitSub{names: []string{"bisect"}, rules: []gitRule{
		when(unknown("git bisect run runs commands"), operand("run")),
	}, otherwise: writes("git bisect changes the working tree")},
	gitSub{names: []string{"gc"}, rules: []gitRule{
		when(destroys("git gc $arg deletes unreachable objects"), anywhere(arg("--prune=now", "--prune=all"))),
	}, otherwise: writes("git gc repacks the repository")},
	gitSub{names: []string{"prune"}, rules: []gitRule{
		when(readonly("git prune -n only lists objects"), arg("-n", "--dry-run")),
	}, otherwise: destroys("git prune deletes unreachable objects")},
	gitSub{names: []string{"update-ref"}, rules: []gitRule{
		when(destroys("git update-ref -d deletes a ref"), arg("-d")),
		when(unknown("git update-ref --stdin reads ref updates from its input"), arg("--stdin")),
	}, otherwise: writes("git update-ref updates a ref")},
	gitSub{names: []string{"filter-branch", "filter-repo"}, otherwise: destroys("git $sub rewrites history")},
	gitSub{names: []string{"difftool", "mergetool", "instaweb", "daemon", "web--browse", "credential", "shell"},
		otherwise: unknown("git $sub runs other programs")},
	gitSub{names: []string{
		"add", "commit", "merge", "cherry-pick", "revert", "am", "init", "mv", "format-patch",
		"update-index", "read-tree", "write-tree", "commit-tree", "mktag", "mktree", "replace",
		"sparse-checkout", "maintenance", "pack-refs", "repack", "checkout-index", "merge-file",
		"rerere", "unpack-objects", "index-pack", "prune-packed", "multi-pack-index", "commit-graph",
	}, otherwise: writes("git $sub changes the repository")},
)

// gitSub is one row of gitSubcommands.
type gitSub struct {
	names     []string
	rules     []gitRule             // the first that holds decides
	otherwise gitVerdict            // when none holds
	parse     func([]string) Result // a parser of its own instead of rules
	needsOp   bool                  // a rule or reason reads the first operand (set by gitTable)
}

// gitRule decides with then when every condition in all holds.
type gitRule struct {
	all  []gitCond
	then gitVerdict
}

func when(then gitVerdict, all ...gitCond) gitRule { return gitRule{all: all, then: then} }

// holds reports whether every condition holds, and the argument the first
// one that names an argument matched ("$arg" in the verdict's reason).
func (r *gitRule) holds(args []string, op string) (string, bool) {
	matched := ""
	for i := range r.all {
		a, ok := r.all[i].match(args, op)
		if !ok {
			return "", false
		}
		if matched == "" {
			matched = a
		}
	}
	return matched, true
}

// gitVerdict is a class and its reason. In the reason "$sub" is the
// subcommand, filled in by gitTable, and at most one of "$op" (the first
// operand) and "$arg" (the argument the rule matched) is filled in per
// call: gitTable splits the reason around it (pre, slot, post).
type gitVerdict struct {
	class     Class
	why       string
	pre, post string
	slot      string // "", "$op" or "$arg"
}

func readonly(why string) gitVerdict { return gitVerdict{class: Readonly, why: why} }
func writes(why string) gitVerdict   { return gitVerdict{class: WorkspaceWrite, why: why} }
func destroys(why string) gitVerdict { return gitVerdict{class: Destructive, why: why} }
func network(why string) gitVerdict  { return gitVerdict{class: Remote, why: why} }
func shell(why string) gitVerdict    { return gitVerdict{class: Shell, why: why} }
func unknown(why string) gitVerdict  { return gitVerdict{class: Unknown, why: why} }

// compile fills in sub and splits the reason around its slot. A reason
// with another "$" word, or two slots, is a broken table: it panics.
func (v gitVerdict) compile(sub string) gitVerdict {
	v.why = strings.ReplaceAll(v.why, "$sub", sub)
	v.pre, v.slot, v.post = v.why, "", ""
	if i := strings.IndexByte(v.why, '$'); i >= 0 {
		rest := v.why[i:]
		switch {
		case strings.HasPrefix(rest, "$op"):
			v.slot = "$op"
		case strings.HasPrefix(rest, "$arg"):
			v.slot = "$arg"
		default:
			panic("classify: git subcommand " + sub + ": unknown placeholder in " + strconv.Quote(v.why))
		}
		v.pre, v.post = v.why[:i], rest[len(v.slot):]
		if strings.IndexByte(v.post, '$') >= 0 {
			panic("classify: git subcommand " + sub + ": two placeholders in " + strconv.Quote(v.why))
		}
	}
	return v
}

func (v *gitVerdict) result(op, arg string) Result {
	why := v.pre
	switch v.slot {
	case "$op":
		why = v.pre + op + v.post
	case "$arg":
		why = v.pre + arg + v.post
	}
	if v.class == Remote {
		return remote(why)
	}
	return result(v.class, why)
}

// gitTable indexes the rows by subcommand, with "$sub" in their reasons
// filled in. A subcommand in two rows is a broken table: it panics.
func gitTable(rows ...gitSub) map[string]*gitSub {
	m := make(map[string]*gitSub)
	for _, row := range rows {
		for _, name := range row.names {
			if _, dup := m[name]; dup {
				panic("classify: git subcommand " + name + " is in two rows of gitSubcommands")
			}
			s := row
			s.names = []string{name}
			s.otherwise = s.otherwise.compile(name)
			s.needsOp = s.otherwise.slot == "$op"
			s.rules = make([]gitRule, len(row.rules))
			for i, r := range row.rules {
				r.then = r.then.compile(name)
				s.needsOp = s.needsOp || r.then.slot == "$op" ||
					slices.ContainsFunc(r.all, func(c gitCond) bool { return c.kind == condOperand })
				s.rules[i] = r
			}
			m[name] = &s
		}
	}
	return m
}

// gitCond is a condition on a subcommand's arguments. Unless it is
// everywhere, only the arguments before "--" count.
type gitCond struct {
	kind       gitCondKind
	words      []string
	letters    string // flag: the short options; operands: the short options that take a value
	min        int    // abbrev: the shortest abbreviation; operands: the count
	everywhere bool   // past "--" too
	negate     bool
}

type gitCondKind uint8

const (
	condArg       gitCondKind = iota // an argument is one of words
	condFlag                         // an argument is one of words, or a short-option cluster holds one of letters
	condPrefix                       // an argument starts with one of words
	condAbbrev                       // a long option abbreviates one of words, at least min letters ("$arg" is --name)
	condOperand                      // the first operand is one of words ("" when there is none)
	condOperands                     // at least min operands
	condWholeTree                    // a pathspec covers the whole tree
	condOutside                      // an argument is none of words
)

func arg(words ...string) gitCond { return gitCond{kind: condArg, words: words} }
func flag(letters string, words ...string) gitCond {
	return gitCond{kind: condFlag, letters: letters, words: words}
}
func prefix(words ...string) gitCond { return gitCond{kind: condPrefix, words: words} }
func abbrev(min int, words ...string) gitCond {
	return gitCond{kind: condAbbrev, min: min, words: words}
}
func operand(words ...string) gitCond { return gitCond{kind: condOperand, words: words} }
func operands(withArg string, n int) gitCond {
	return gitCond{kind: condOperands, letters: withArg, min: n}
}
func wholeTree() gitCond { return gitCond{kind: condWholeTree, everywhere: true} }
func outside(words ...string) gitCond {
	return gitCond{kind: condOutside, words: words, everywhere: true}
}
func anywhere(c gitCond) gitCond { c.everywhere = true; return c }
func not(c gitCond) gitCond      { c.negate = !c.negate; return c }

// gitWholeTree lists the pathspecs that cover the whole tree.
var gitWholeTree = []string{".", "./", ":/", ":/.", ":(top)", "*", "..", "../", ":", ":/*", "./*"}

// match reports whether c holds for args, and the argument it matched.
func (c *gitCond) match(args []string, op string) (string, bool) {
	a, ok := c.find(args, op)
	if c.negate {
		return "", !ok
	}
	return a, ok
}

func (c *gitCond) find(args []string, op string) (string, bool) {
	switch c.kind {
	case condOperand:
		return op, slices.Contains(c.words, op)
	case condOperands:
		return "", gitOperands(args, c.letters) >= c.min
	}
	for _, a := range args {
		if a == "--" && !c.everywhere {
			break
		}
		if m, ok := c.one(a); ok {
			return m, true
		}
	}
	return "", false
}

// one tests a single argument.
func (c *gitCond) one(a string) (string, bool) {
	switch c.kind {
	case condArg:
		return a, slices.Contains(c.words, a)
	case condFlag:
		return a, slices.Contains(c.words, a) || isShort(a) && strings.ContainsAny(a[1:], c.letters)
	case condPrefix:
		return a, slices.ContainsFunc(c.words, func(w string) bool { return strings.HasPrefix(a, w) })
	case condAbbrev:
		if !strings.HasPrefix(a, "--") {
			return "", false
		}
		name, _ := longName(a)
		return "--" + name, slices.ContainsFunc(c.words, func(w string) bool { return abbrevOf(name, w, c.min) })
	case condWholeTree:
		return a, slices.Contains(gitWholeTree, a)
	case condOutside:
		return a, !slices.Contains(c.words, a)
	}
	return "", false
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
		for _, a := range rest {
			if strings.HasPrefix(a, "--mirror") || a == "--push" {
				return remote("git remote " + op + " " + a + " makes a later push write more, or elsewhere, than it names (an implicit remote write)")
			}
		}
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
	if len(operands) > 0 && gitRemoteWriteKey(operands[0]) {
		return remote("git config " + operands[0] + " makes a later push write more, or elsewhere, than it names (an implicit remote write)")
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
	e, why := gitPushEffect(args)
	switch {
	case e == nil:
		return result(Destructive, why+": push with git_push {remote, refspec, force}")
	case e.Force:
		r := result(Destructive, "git push with force can overwrite remote history")
		r.Network, r.Effect = true, e
		return r
	}
	r := remote("git push writes to a remote repository")
	r.Effect = e
	return r
}

// gitImplicitKey reports whether a `git -c KEY=VALUE` defines an alias
// (a command under another name: it could push or delete without saying
// so) or makes a push write more than it names.
func gitImplicitKey(kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	return strings.HasPrefix(strings.ToLower(k), "alias.") || gitRemoteWriteKey(k)
}
