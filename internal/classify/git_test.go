package classify

import (
	"reflect"
	"strings"
	"testing"
)

// TestGitSubcommandVerdicts pins the table's interpreter: each kind of
// condition, the order of rules, negation, conditions that look past "--",
// and the reasons with the subcommand, operand and matched argument filled
// in.
func TestGitSubcommandVerdicts(t *testing.T) {
	tests := []struct {
		sub  string
		rest []string
		want Result
	}{
		// A row of several subcommands: "$sub" is each one's name.
		{"count-objects", nil, result(Readonly, "git count-objects only reads")},
		{"filter-repo", []string{"--force"}, result(Destructive, "git filter-repo rewrites history")},
		{"pull", nil, remote("git pull uses the network")},
		// flag: a word, or a letter in a short-option cluster, before "--".
		{"grep", []string{"-nO", "x"}, result(Unknown, "git grep -O opens files in a pager program")},
		{"grep", []string{"--", "-O"}, result(Readonly, "git grep only reads")},
		{"hash-object", []string{"-tw", "f"}, result(WorkspaceWrite, "git hash-object -w writes objects")},
		// prefix, before "--" only, and anywhere.
		{"log", []string{"-ofile"}, result(Unknown, "git option -o is not allowed")},
		{"log", []string{"--", "-ofile"}, result(Readonly, "git log only reads")},
		{"rebase", []string{"--", "-xmake"}, result(Unknown, "git rebase -x runs commands")},
		// arg anywhere, with "$arg" the argument matched.
		{"gc", []string{"--", "--prune=all"}, result(Destructive, "git gc --prune=all deletes unreachable objects")},
		// abbrev: "$arg" is the long option as typed, without its value.
		{"reset", []string{"--me=x"}, result(Destructive, "git reset --me discards uncommitted changes")},
		{"reset", []string{"--h"}, result(WorkspaceWrite, "git reset moves HEAD or the index")},
		// operand, with "$op" the first operand (empty when there is none).
		{"stash", []string{"drop", "stash@{1}"}, result(Destructive, "git stash drop deletes stashed changes")},
		{"submodule", []string{"foreach", "rm -rf ."}, result(Shell, "git submodule foreach runs shell commands")},
		{"lfs", []string{"pull"}, remote("git lfs pull uses the network")},
		{"notes", []string{"add"}, result(WorkspaceWrite, "git notes add changes notes")},
		{"worktree", []string{"remove", "-f", "w"}, result(Destructive, "git worktree remove --force discards changes")},
		{"worktree", []string{"add", "-f", "w"}, result(WorkspaceWrite, "git worktree add changes worktrees")},
		// operands: -m takes a value, so only two operands write.
		{"symbolic-ref", []string{"-m", "why", "HEAD"}, result(Readonly, "git symbolic-ref only reads")},
		{"symbolic-ref", []string{"-m", "why", "HEAD", "refs/heads/x"}, result(WorkspaceWrite, "git symbolic-ref with two arguments updates a ref")},
		// Rules in order; every condition of a rule holds; not.
		{"clean", []string{"-n"}, result(Readonly, "git clean -n only lists files")},
		{"clean", []string{"-nf"}, result(Destructive, "git clean -f deletes untracked files")},
		{"clean", []string{"-ni", "-f"}, result(Unknown, "git clean -i is interactive")},
		{"apply", []string{"--check", "--apply"}, result(WorkspaceWrite, "git apply changes files")},
		{"rm", []string{"-rf", "--cached", "x"}, result(WorkspaceWrite, "git rm removes files")},
		// wholeTree looks past "--"; "$arg" is the pathspec.
		{"checkout", []string{"--", ":/"}, result(Destructive, "git checkout :/ discards uncommitted changes")},
		{"restore", []string{"--staged", "."}, result(WorkspaceWrite, "git restore changes files")},
		{"restore", []string{"-SW", "."}, result(Destructive, "git restore . discards uncommitted changes")},
		// outside: any argument not listed, "--" included.
		{"help", []string{"-a", "--verbose"}, result(Readonly, "git help only prints")},
		{"help", []string{"--", "-a"}, result(Unknown, "git help opens a manual page viewer")},
		// Rows with a parser of their own.
		{"branch", []string{"-D", "x"}, result(Destructive, "git branch -D deletes unmerged branches")},
		{"push", []string{"origin", ":main"}, result(Destructive, `git push refspec ":main" deletes a remote branch: push with git_push {remote, refspec, force}`)},
		{"frobnicate", nil, result(Unknown, `git "frobnicate" is not a known subcommand`)},
	}
	for _, tt := range tests {
		t.Run(tt.sub+" "+strings.Join(tt.rest, " "), func(t *testing.T) {
			if got := gitSubcommand(tt.sub, tt.rest); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("gitSubcommand(%q, %q) = %+v, want %+v", tt.sub, tt.rest, got, tt.want)
			}
		})
	}
}

// Every row of the table is reached: no subcommand is shadowed by another
// row, and the table knows each once.
func TestGitTableRows(t *testing.T) {
	n := 0
	for _, s := range gitSubcommands {
		if len(s.names) != 1 {
			t.Errorf("indexed row has names %q, want one", s.names)
		}
		if strings.Contains(s.otherwise.why, "$sub") {
			t.Errorf("%s: $sub left in %q", s.names[0], s.otherwise.why)
		}
		if s.parse == nil && s.otherwise.why == "" {
			t.Errorf("%s: no verdict when no rule holds", s.names[0])
		}
		n++
	}
	if n < 100 {
		t.Errorf("the table knows %d subcommands, want every one git.go lists (over 100)", n)
	}
	for _, c := range []struct {
		name string
		rows []gitSub
		want string
	}{
		{"duplicate", []gitSub{{names: []string{"status"}, otherwise: readonly("a")}, {names: []string{"log", "status"}, otherwise: readonly("b")}},
			"git subcommand status is in two rows"},
		{"unknown placeholder", []gitSub{{names: []string{"x"}, otherwise: readonly("git x $path")}}, `git subcommand x: unknown placeholder in "git x $path"`},
		{"two placeholders", []gitSub{{names: []string{"x"}, rules: []gitRule{when(writes("git $sub $op $arg"), arg("-f"))}}}, `git subcommand x: two placeholders in "git x $op $arg"`},
	} {
		func() {
			defer func() {
				if v, _ := recover().(string); !strings.Contains(v, c.want) {
					t.Errorf("%s: recovered %q, want a panic containing %q", c.name, v, c.want)
				}
			}()
			gitTable(c.rows...)
		}()
	}
}
