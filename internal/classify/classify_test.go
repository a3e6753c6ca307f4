package classify

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestArgv(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		want    Class
		network bool
		reason  string // substring of some reason, optional
	}{
		// readonly allowlist
		{argv: []string{"cat", "a.go"}, want: Readonly},
		{argv: []string{"head", "-n", "5", "f"}, want: Readonly},
		{argv: []string{"tail", "-f", "log"}, want: Readonly},
		{argv: []string{"wc", "-l", "f"}, want: Readonly},
		{argv: []string{"ls", "-la"}, want: Readonly},
		{argv: []string{"stat", "f"}, want: Readonly},
		{argv: []string{"file", "f"}, want: Readonly},
		{argv: []string{"file", "-C", "-m", "magic"}, want: WorkspaceWrite},
		{argv: []string{"grep", "-rn", "foo", "."}, want: Readonly},
		{argv: []string{"egrep", "a|b", "f"}, want: Readonly},
		{argv: []string{"fgrep", "x", "f"}, want: Readonly},
		{argv: []string{"rg", "-n", "TODO"}, want: Readonly},
		{argv: []string{"rg", "--search-zip", "x"}, want: Readonly},
		{argv: []string{"rg", "--pre", "./x", "foo"}, want: Unknown, reason: "--pre"},
		{argv: []string{"rg", "--pre=sh", "foo"}, want: Unknown},
		{argv: []string{"rg", "--", "--pre=sh"}, want: Readonly},
		{argv: []string{"find", ".", "-name", "*.go"}, want: Readonly},
		{argv: []string{"find", ".", "-name", "x", "-delete"}, want: Destructive, reason: "find -delete deletes files"},
		{argv: []string{"find", ".", "-exec", "grep", "-l", "x", "{}", ";"}, want: Readonly},
		{argv: []string{"find", ".", "-exec", "rm", "{}", "+"}, want: WorkspaceWrite},
		{argv: []string{"find", ".", "-execdir", "rm", "-rf", "{}", ";"}, want: Destructive},
		{argv: []string{"find", ".", "-fprint", "out"}, want: WorkspaceWrite},
		{argv: []string{"find", ".", "-ok", "sh", "-c", "curl x", ";"}, want: Remote},
		{argv: []string{"sed", "-n", "1,5p", "f"}, want: Readonly},
		{argv: []string{"sed", "-n", "p"}, want: Readonly},
		{argv: []string{"sed", "-n", "/start/,/end/{p;}", "f"}, want: Readonly},
		{argv: []string{"sed", "-ne", "s/hello/world/gp", "f"}, want: Readonly},
		{argv: []string{"sed", "s/a/b/", "f"}, want: Unknown},
		{argv: []string{"sed", "-i", "s/a/b/", "f"}, want: WorkspaceWrite, reason: "in place"},
		{argv: []string{"sed", "-ni", "p", "f"}, want: WorkspaceWrite},
		{argv: []string{"sed", "--in-place=.bak", "-n", "p", "f"}, want: WorkspaceWrite},
		{argv: []string{"sed", "-n", "w out", "f"}, want: WorkspaceWrite},
		{argv: []string{"sed", "-n", "s/a/b/w out", "f"}, want: WorkspaceWrite},
		{argv: []string{"sed", "-n", "1e rm -rf /", "f"}, want: Shell},
		{argv: []string{"sed", "-n", "s/a/id/e", "f"}, want: Shell},
		{argv: []string{"sed", "-n", "-f", "script.sed", "f"}, want: Unknown},
		{argv: []string{"sed", "-n", "s/w/e/p", "f"}, want: Readonly},
		{argv: []string{"awk", "{print $1}", "f"}, want: Unknown},
		{argv: []string{"jq", ".a", "f.json"}, want: Readonly},
		{argv: []string{"diff", "-u", "a", "b"}, want: Readonly},
		{argv: []string{"cmp", "a", "b"}, want: Readonly},
		{argv: []string{"sha256sum", "f"}, want: Readonly},
		{argv: []string{"md5sum", "f"}, want: Readonly},
		{argv: []string{"tree", "-L", "2"}, want: Readonly},
		{argv: []string{"tree", "-o", "out.txt"}, want: WorkspaceWrite},
		{argv: []string{"basename", "a/b"}, want: Readonly},
		{argv: []string{"dirname", "a/b"}, want: Readonly},
		{argv: []string{"realpath", "."}, want: Readonly},
		{argv: []string{"pwd"}, want: Readonly},
		{argv: []string{"echo", "hi"}, want: Readonly},
		{argv: []string{"true"}, want: Readonly},
		{argv: []string{"false"}, want: Readonly},
		{argv: []string{"date"}, want: Readonly},
		{argv: []string{"date", "-s", "2020-01-01"}, want: Destructive},
		{argv: []string{"uname", "-a"}, want: Readonly},
		{argv: []string{"which", "go"}, want: Readonly},
		{argv: []string{"env"}, want: Readonly},
		{argv: []string{"printenv"}, want: Unknown},
		{argv: []string{"sort", "f"}, want: Readonly},
		{argv: []string{"sort", "-o", "f", "f"}, want: WorkspaceWrite},
		{argv: []string{"uniq", "in", "out"}, want: WorkspaceWrite},
		{argv: []string{"tee"}, want: Readonly},
		{argv: []string{"tee", "out.txt"}, want: WorkspaceWrite},
		{argv: []string{"/usr/bin/git", "status"}, want: Readonly},
		{argv: []string{"./git", "status"}, want: Unknown},
		{argv: []string{"/tmp/x/cat", "f"}, want: Unknown},
		// go
		{argv: []string{"go", "env", "GOPATH"}, want: Readonly},
		{argv: []string{"go", "env", "-w", "GOFLAGS=-x"}, want: WorkspaceWrite},
		{argv: []string{"go", "list", "./..."}, want: Readonly},
		{argv: []string{"go", "version"}, want: Readonly},
		{argv: []string{"go", "doc", "fmt.Println"}, want: Readonly},
		{argv: []string{"go", "vet", "./..."}, want: Readonly},
		{argv: []string{"go", "test", "./..."}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "./..."}, want: WorkspaceWrite},
		{argv: []string{"go", "generate", "./..."}, want: WorkspaceWrite},
		{argv: []string{"go", "mod", "tidy"}, want: WorkspaceWrite, network: true},
		{argv: []string{"go", "run", "."}, want: Unknown},
		{argv: []string{"gofmt", "-l", "."}, want: Readonly},
		{argv: []string{"gofmt", "-w", "."}, want: WorkspaceWrite},
		// git readonly
		{argv: []string{"git", "status", "--short"}, want: Readonly},
		{argv: []string{"git", "diff", "--stat"}, want: Readonly},
		{argv: []string{"git", "log", "--oneline", "-n", "5"}, want: Readonly},
		{argv: []string{"git", "show", "HEAD"}, want: Readonly},
		{argv: []string{"git", "rev-parse", "HEAD"}, want: Readonly},
		{argv: []string{"git", "ls-files"}, want: Readonly},
		{argv: []string{"git", "ls-tree", "HEAD"}, want: Readonly},
		{argv: []string{"git", "cat-file", "-p", "HEAD"}, want: Readonly},
		{argv: []string{"git", "cat-file", "--filters", "HEAD:a"}, want: Unknown},
		{argv: []string{"git", "blame", "f"}, want: Readonly},
		{argv: []string{"git", "describe", "--tags"}, want: Readonly},
		{argv: []string{"git", "shortlog", "-sn"}, want: Readonly},
		{argv: []string{"git", "grep", "foo"}, want: Readonly},
		{argv: []string{"git", "grep", "-O", "foo"}, want: Unknown},
		{argv: []string{"git", "--no-pager", "log"}, want: Readonly},
		{argv: []string{"git", "branch"}, want: Readonly},
		{argv: []string{"git", "branch", "-a", "-v"}, want: Readonly},
		{argv: []string{"git", "branch", "--list", "feat*"}, want: Readonly},
		{argv: []string{"git", "branch", "--contains", "abc"}, want: Readonly},
		{argv: []string{"git", "tag"}, want: Readonly},
		{argv: []string{"git", "tag", "-l", "v1.*"}, want: Readonly},
		{argv: []string{"git", "remote"}, want: Readonly},
		{argv: []string{"git", "remote", "-v"}, want: Readonly},
		{argv: []string{"git", "remote", "get-url", "origin"}, want: Readonly},
		{argv: []string{"git", "config", "--get", "user.name"}, want: Readonly},
		{argv: []string{"git", "config", "--list"}, want: Readonly},
		{argv: []string{"git", "config", "-l"}, want: Readonly},
		{argv: []string{"git", "config", "--get-regexp", "^remote"}, want: Readonly},
		{argv: []string{"git", "config", "user.name", "x"}, want: WorkspaceWrite},
		{argv: []string{"git", "config", "core.pager", "sh -c x"}, want: Destructive},
		{argv: []string{"git", "config", "alias.st", "!rm -rf ."}, want: Destructive},
		{argv: []string{"git", "merge-base", "a", "b"}, want: Readonly},
		{argv: []string{"git", "rev-list", "--count", "HEAD"}, want: Readonly},
		{argv: []string{"git", "name-rev", "HEAD"}, want: Readonly},
		{argv: []string{"git", "show-ref"}, want: Readonly},
		{argv: []string{"git", "for-each-ref"}, want: Readonly},
		{argv: []string{"git", "reflog"}, want: Readonly},
		{argv: []string{"git", "reflog", "show"}, want: Readonly},
		{argv: []string{"git", "whatchanged"}, want: Readonly},
		{argv: []string{"git", "count-objects", "-v"}, want: Readonly},
		{argv: []string{"git", "check-ignore", "x"}, want: Readonly},
		{argv: []string{"git", "symbolic-ref", "HEAD"}, want: Readonly},
		{argv: []string{"git", "symbolic-ref", "HEAD", "refs/heads/x"}, want: WorkspaceWrite},
		{argv: []string{"git", "worktree", "list"}, want: Readonly},
		{argv: []string{"git", "stash", "list"}, want: Readonly},
		{argv: []string{"git", "stash", "show", "-p"}, want: Readonly},
		// git options that are not allowed
		{argv: []string{"git", "-c", "core.pager=x", "log"}, want: Unknown, reason: "git option -c is not allowed"},
		{argv: []string{"git", "-C", "/", "status"}, want: Unknown},
		{argv: []string{"git", "--git-dir=/x", "log"}, want: Unknown},
		{argv: []string{"git", "--work-tree", "/", "status"}, want: Unknown},
		{argv: []string{"git", "--exec-path=/tmp", "status"}, want: Unknown},
		{argv: []string{"git", "--config-env=core.pager=X", "log"}, want: Unknown},
		{argv: []string{"git", "-p", "log"}, want: Unknown},
		{argv: []string{"git", "--paginate", "log"}, want: Unknown},
		{argv: []string{"git", "diff", "--output=/tmp/x"}, want: Unknown, reason: "--output"},
		{argv: []string{"git", "diff", "--outp=/tmp/x"}, want: Unknown},
		{argv: []string{"git", "diff", "--output-indicator-new=+"}, want: Readonly},
		{argv: []string{"git", "log", "--ext-diff"}, want: Unknown},
		{argv: []string{"git", "log", "--no-ext-diff"}, want: Readonly},
		{argv: []string{"git", "show", "--textconv", "HEAD:f"}, want: Unknown},
		{argv: []string{"git", "diff", "--text"}, want: Readonly},
		{argv: []string{"git", "diff", "--no-index", "/etc/passwd", "x"}, want: Unknown},
		{argv: []string{"git", "log", "--", "--output"}, want: Readonly},
		{argv: []string{"git", "fetch", "--upload-pack=x"}, want: Remote},
		// git writes
		{argv: []string{"git", "add", "a.go"}, want: WorkspaceWrite},
		{argv: []string{"git", "commit", "-m", "x"}, want: WorkspaceWrite},
		{argv: []string{"git", "checkout", "main"}, want: WorkspaceWrite},
		{argv: []string{"git", "checkout", "--", "a.go"}, want: WorkspaceWrite},
		{argv: []string{"git", "switch", "-c", "x"}, want: WorkspaceWrite},
		{argv: []string{"git", "restore", "--staged", "a.go"}, want: WorkspaceWrite},
		{argv: []string{"git", "stash"}, want: WorkspaceWrite},
		{argv: []string{"git", "merge", "x"}, want: WorkspaceWrite},
		{argv: []string{"git", "rebase", "main"}, want: WorkspaceWrite},
		{argv: []string{"git", "rebase", "-x", "make", "main"}, want: Unknown},
		{argv: []string{"git", "cherry-pick", "abc"}, want: WorkspaceWrite},
		{argv: []string{"git", "apply", "p.diff"}, want: WorkspaceWrite},
		{argv: []string{"git", "apply", "--check", "p.diff"}, want: Readonly},
		{argv: []string{"git", "am", "p.mbox"}, want: WorkspaceWrite},
		{argv: []string{"git", "tag", "v1"}, want: WorkspaceWrite},
		{argv: []string{"git", "tag", "-a", "v1", "-m", "x"}, want: WorkspaceWrite},
		{argv: []string{"git", "branch", "feature"}, want: WorkspaceWrite},
		{argv: []string{"git", "branch", "-d", "x"}, want: WorkspaceWrite},
		{argv: []string{"git", "init"}, want: WorkspaceWrite},
		{argv: []string{"git", "mv", "a", "b"}, want: WorkspaceWrite},
		{argv: []string{"git", "rm", "a"}, want: WorkspaceWrite},
		{argv: []string{"git", "reset", "HEAD~1"}, want: WorkspaceWrite},
		// git destructive
		{argv: []string{"git", "reset", "--hard"}, want: Destructive},
		{argv: []string{"git", "reset", "--hard", "origin/main"}, want: Destructive},
		{argv: []string{"git", "clean", "-fd"}, want: Destructive},
		{argv: []string{"git", "clean", "-xdf"}, want: Destructive},
		{argv: []string{"git", "clean", "-n"}, want: Readonly},
		{argv: []string{"git", "push", "--force"}, want: Destructive},
		{argv: []string{"git", "push", "-f", "origin", "main"}, want: Destructive},
		{argv: []string{"git", "push", "-uf", "origin", "main"}, want: Destructive},
		{argv: []string{"git", "push", "--force-with-lease"}, want: Destructive},
		{argv: []string{"git", "push", "--forc"}, want: Destructive},
		{argv: []string{"git", "push", "--mirror"}, want: Destructive},
		{argv: []string{"git", "push", "--delete", "origin", "x"}, want: Destructive},
		{argv: []string{"git", "push", "origin", "+main"}, want: Destructive},
		{argv: []string{"git", "push", "origin", ":main"}, want: Destructive},
		{argv: []string{"git", "branch", "-D", "x"}, want: Destructive},
		{argv: []string{"git", "branch", "--delete", "--force", "x"}, want: Destructive},
		{argv: []string{"git", "checkout", "--", "."}, want: Destructive},
		{argv: []string{"git", "checkout", "."}, want: Destructive},
		{argv: []string{"git", "checkout", "-f", "main"}, want: Destructive},
		{argv: []string{"git", "restore", "."}, want: Destructive},
		{argv: []string{"git", "stash", "drop"}, want: Destructive},
		{argv: []string{"git", "stash", "clear"}, want: Destructive},
		{argv: []string{"git", "filter-branch", "--all"}, want: Destructive},
		{argv: []string{"git", "reflog", "expire", "--all"}, want: Destructive},
		{argv: []string{"git", "reflog", "delete", "HEAD@{1}"}, want: Destructive},
		{argv: []string{"git", "gc", "--prune=now"}, want: Destructive},
		{argv: []string{"git", "gc"}, want: WorkspaceWrite},
		{argv: []string{"git", "update-ref", "-d", "refs/heads/x"}, want: Destructive},
		// git remote
		{argv: []string{"git", "push"}, want: Remote, network: true},
		{argv: []string{"git", "push", "origin", "main"}, want: Remote, network: true},
		{argv: []string{"git", "fetch"}, want: Remote, network: true},
		{argv: []string{"git", "pull"}, want: Remote, network: true},
		{argv: []string{"git", "clone", "https://x/y"}, want: Remote, network: true},
		{argv: []string{"git", "ls-remote", "origin"}, want: Remote, network: true},
		{argv: []string{"git", "submodule", "update", "--init"}, want: Remote, network: true},
		{argv: []string{"git", "frobnicate"}, want: Unknown},
		// workspace writes
		{argv: []string{"touch", "f"}, want: WorkspaceWrite},
		{argv: []string{"mkdir", "-p", "d"}, want: WorkspaceWrite},
		{argv: []string{"cp", "a", "b"}, want: WorkspaceWrite},
		{argv: []string{"mv", "a", "b"}, want: WorkspaceWrite},
		{argv: []string{"ln", "-s", "a", "b"}, want: WorkspaceWrite},
		{argv: []string{"chmod", "+x", "f"}, want: WorkspaceWrite},
		{argv: []string{"chmod", "-x", "f"}, want: WorkspaceWrite},
		{argv: []string{"npm", "install"}, want: WorkspaceWrite, network: true},
		{argv: []string{"npm", "ci"}, want: WorkspaceWrite, network: true},
		{argv: []string{"pip", "install", "x"}, want: WorkspaceWrite, network: true},
		{argv: []string{"make"}, want: WorkspaceWrite},
		{argv: []string{"make", "test"}, want: WorkspaceWrite},
		{argv: []string{"patch", "-p1"}, want: WorkspaceWrite},
		{argv: []string{"cargo", "build"}, want: WorkspaceWrite},
		{argv: []string{"cargo", "test"}, want: WorkspaceWrite},
		{argv: []string{"rm", "f"}, want: WorkspaceWrite},
		{argv: []string{"rm", "-f", "f"}, want: WorkspaceWrite},
		// destructive
		{argv: []string{"rm", "-r", "d"}, want: Destructive},
		{argv: []string{"rm", "-rf", "/"}, want: Destructive},
		{argv: []string{"rm", "-fr", "d"}, want: Destructive},
		{argv: []string{"rm", "-Rf", "d"}, want: Destructive},
		{argv: []string{"rm", "--recursive", "d"}, want: Destructive},
		{argv: []string{"rm", "--rec", "d"}, want: Destructive},
		{argv: []string{"dd", "if=/dev/zero", "of=/dev/sda"}, want: Destructive},
		{argv: []string{"mkfs.ext4", "/dev/sda1"}, want: Destructive},
		{argv: []string{"shred", "f"}, want: Destructive},
		{argv: []string{"wipefs", "-a", "/dev/sda"}, want: Destructive},
		{argv: []string{"fdisk", "/dev/sda"}, want: Destructive},
		{argv: []string{"parted", "/dev/sda"}, want: Destructive},
		{argv: []string{"chmod", "-R", "777", "/"}, want: Destructive},
		{argv: []string{"chmod", "-R", "777", "."}, want: Destructive},
		{argv: []string{"chmod", "-R", "755", "build/out"}, want: WorkspaceWrite},
		{argv: []string{"chown", "-R", "me", "/"}, want: Destructive},
		{argv: []string{"truncate", "-s", "0", "f"}, want: Destructive},
		{argv: []string{"kill", "-9", "1"}, want: Destructive},
		{argv: []string{"killall", "x"}, want: Destructive},
		{argv: []string{"pkill", "x"}, want: Destructive},
		{argv: []string{"shutdown", "-h", "now"}, want: Destructive},
		{argv: []string{"reboot"}, want: Destructive},
		{argv: []string{"halt"}, want: Destructive},
		{argv: []string{"mv", "x", "/"}, want: Destructive},
		{argv: []string{"sudo", "ls"}, want: Destructive},
		{argv: []string{"su", "-c", "ls"}, want: Destructive},
		{argv: []string{"doas", "ls"}, want: Destructive},
		// remote
		{argv: []string{"npm", "publish"}, want: Remote, network: true},
		{argv: []string{"yarn", "publish"}, want: Remote, network: true},
		{argv: []string{"cargo", "publish"}, want: Remote, network: true},
		{argv: []string{"twine", "upload", "dist/*"}, want: Remote, network: true},
		{argv: []string{"gh", "pr", "create"}, want: Remote, network: true},
		{argv: []string{"gh", "pr", "merge", "1"}, want: Remote, network: true},
		{argv: []string{"gh", "release", "create", "v1"}, want: Remote, network: true},
		{argv: []string{"gh", "api", "-X", "POST", "/repos/x"}, want: Remote, network: true, reason: "POST"},
		{argv: []string{"gh", "api", "-f", "a=b", "/x"}, want: Remote, network: true},
		{argv: []string{"curl", "-X", "POST", "http://h"}, want: Remote, network: true, reason: "curl upload"},
		{argv: []string{"curl", "-d", "x", "http://h"}, want: Remote, network: true, reason: "curl upload"},
		{argv: []string{"curl", "--data-binary", "@f", "http://h"}, want: Remote, network: true, reason: "curl upload"},
		{argv: []string{"curl", "-F", "f=@x", "http://h"}, want: Remote, network: true, reason: "curl upload"},
		{argv: []string{"curl", "-T", "f", "http://h"}, want: Remote, network: true, reason: "curl upload"},
		{argv: []string{"curl", "-sSL", "http://h"}, want: Remote, network: true},
		{argv: []string{"wget", "http://h"}, want: Remote, network: true},
		{argv: []string{"ssh", "host", "ls"}, want: Remote, network: true},
		{argv: []string{"scp", "a", "host:b"}, want: Remote, network: true},
		{argv: []string{"rsync", "-a", "d/", "host:d/"}, want: Remote, network: true},
		{argv: []string{"rsync", "-a", "d/", "e/"}, want: WorkspaceWrite},
		{argv: []string{"nc", "host", "80"}, want: Remote, network: true},
		{argv: []string{"telnet", "host"}, want: Remote, network: true},
		{argv: []string{"docker", "push", "img"}, want: Remote, network: true},
		{argv: []string{"kubectl", "get", "pods"}, want: Remote, network: true},
		{argv: []string{"kubectl", "apply", "-f", "x"}, want: Remote, network: true},
		// unknown
		{argv: []string{"python", "x.py"}, want: Unknown},
		{argv: []string{"node", "x.js"}, want: Unknown},
		{argv: []string{"./script.sh"}, want: Unknown},
		{argv: []string{"perl", "-e", "print 1"}, want: Unknown},
		{argv: []string{}, want: Unknown},
		{argv: []string{""}, want: Unknown},
		// wrappers
		{argv: []string{"env", "FOO=1", "git", "status"}, want: Readonly},
		{argv: []string{"env", "LD_PRELOAD=/tmp/x.so", "cat", "f"}, want: Unknown},
		{argv: []string{"env", "GIT_PAGER=sh", "git", "log"}, want: Unknown},
		{argv: []string{"env", "-i", "PATH=/tmp", "ls"}, want: Unknown},
		{argv: []string{"env", "-u", "X", "rm", "-rf", "d"}, want: Destructive},
		// Dropping harnessd's git hardening is not read-only.
		{argv: []string{"env", "-u", "GIT_CONFIG_COUNT", "git", "diff"}, want: Unknown},
		{argv: []string{"env", "-uGIT_CONFIG_COUNT", "git", "diff"}, want: Unknown},
		{argv: []string{"env", "--unset=GIT_CONFIG_COUNT", "git", "diff"}, want: Unknown},
		{argv: []string{"env", "--unset", "GIT_CONFIG_KEY_0", "git", "diff"}, want: Unknown},
		{argv: []string{"env", "-i", "git", "diff"}, want: Unknown},
		{argv: []string{"env", "-iv", "git", "diff"}, want: Unknown},
		{argv: []string{"env", "--ignore-environment", "git", "diff"}, want: Unknown},
		{argv: []string{"env", "-", "git", "diff"}, want: Unknown},
		{argv: []string{"env", "-u", "FOO", "git", "diff"}, want: Readonly},
		{argv: []string{"sh", "-c", "unset GIT_CONFIG_COUNT; git diff"}, want: Unknown},
		{argv: []string{"sh", "-c", "env -u GIT_CONFIG_COUNT git diff"}, want: Unknown},
		{argv: []string{"sh", "-c", "unset FOO; git diff"}, want: Readonly},
		// Programs that run programs, and writes, found by the attack suite.
		{argv: []string{"sort", "--co=sh", "-S", "64K", "big.txt"}, want: Unknown},
		{argv: []string{"pip", "--python=./run.sh", "list"}, want: Unknown},
		{argv: []string{"pip3", "--python", "./run.sh", "list"}, want: Unknown},
		{argv: []string{"find", ".", "-name", "x;*", "-exec", "sh", "-c", "echo {}", ";"}, want: Shell},
		{argv: []string{"find", ".", "-exec", "sh", "-c", "echo \"$1\"", "sh", "{}", ";"}, want: Readonly},
		{argv: []string{"xargs", "-a", "names.txt", "-I{}", "sh", "-c", "echo {}"}, want: Shell},
		{argv: []string{"xargs", "-I", "X", "sh", "-c", "echo X"}, want: Shell},
		{argv: []string{"xargs", "--replace", "bash", "-c", "cat {}"}, want: Shell},
		{argv: []string{"gofmt", "-w=1", "a.go"}, want: WorkspaceWrite},
		{argv: []string{"gofmt", "-w=t", "a.go"}, want: WorkspaceWrite},
		{argv: []string{"gofmt", "--w=TRUE", "a.go"}, want: WorkspaceWrite},
		{argv: []string{"gofmt", "-w=false", "a.go"}, want: Readonly},
		{argv: []string{"bash", "-c", "set -o history; echo x; history -w out.txt"}, want: Shell},
		{argv: []string{"time", "ls"}, want: Readonly},
		{argv: []string{"nice", "-n", "10", "grep", "x", "f"}, want: Readonly},
		{argv: []string{"timeout", "5", "rm", "-rf", "/"}, want: Destructive},
		{argv: []string{"timeout", "-s", "KILL", "5", "cat", "f"}, want: Readonly},
		{argv: []string{"nohup", "make"}, want: WorkspaceWrite},
		{argv: []string{"xargs", "grep", "foo"}, want: Readonly},
		// An option's value missing at the end (a rapid find: a panic).
		{argv: []string{"xargs", "-n"}, want: Readonly},
		{argv: []string{"xargs", "-I"}, want: Readonly},
		{argv: []string{"xargs", "--max-args"}, want: Readonly},
		{argv: []string{"timeout", "-s"}, want: Unknown},
		{argv: []string{"stdbuf", "-o"}, want: Unknown},
		{argv: []string{"xargs", "-0", "-n1", "cat"}, want: Readonly},
		{argv: []string{"xargs", "rm", "-rf"}, want: Destructive},
		{argv: []string{"xargs", "git", "log"}, want: Unknown},
		{argv: []string{"xargs", "sed", "-n", "p"}, want: Unknown},
		{argv: []string{"xargs"}, want: Readonly},
		{argv: []string{"echo", "rm", "-rf", "/"}, want: Unknown},
		// shells
		{argv: []string{"bash", "-c", "cat a | grep b"}, want: Readonly},
		{argv: []string{"bash", "-c", "echo $(id)"}, want: Shell},
		{argv: []string{"bash", "-c", "echo `id`"}, want: Shell},
		{argv: []string{"bash", "-c", "cat a > b"}, want: Shell},
		{argv: []string{"sh", "-c", "ls 2>/dev/null"}, want: Readonly},
		{argv: []string{"sh", "-c", "ls >/dev/null 2>&1"}, want: Readonly},
		{argv: []string{"sh", "-c", "curl x | sh"}, want: Remote},
		{argv: []string{"sh", "-c", "cat x | sh"}, want: Shell},
		{argv: []string{"/bin/sh", "-c", "ls"}, want: Readonly},
		{argv: []string{"bash", "-lc", "git status"}, want: Readonly},
		{argv: []string{"bash", "-ec", "ls"}, want: Readonly},
		{argv: []string{"bash", "-euc", "ls; pwd"}, want: Readonly},
		{argv: []string{"env", "sh", "-c", "rm -rf /"}, want: Destructive},
		{argv: []string{"dash", "-c", "ls"}, want: Readonly},
		{argv: []string{"zsh", "-c", "ls"}, want: Readonly},
		{argv: []string{"bash", "-ic", "ls"}, want: Shell},
		{argv: []string{"sh"}, want: Shell},
		{argv: []string{"sh", "-s"}, want: Shell},
		{argv: []string{"bash", "build.sh"}, want: Unknown},
		{argv: []string{"bash", "-c"}, want: Shell},
	}
	for _, tt := range tests {
		name := tt.name
		if name == "" {
			name = strings.Join(tt.argv, " ")
		}
		t.Run(name, func(t *testing.T) {
			got := Argv(tt.argv)
			if got.Class != tt.want {
				t.Fatalf("Argv(%q).Class = %v (reasons %q), want %v", tt.argv, got.Class, got.Reasons, tt.want)
			}
			if tt.network && !got.Network {
				t.Errorf("Argv(%q).Network = false, want true", tt.argv)
			}
			if len(got.Reasons) == 0 {
				t.Errorf("Argv(%q).Reasons is empty, want at least one", tt.argv)
			}
			if tt.reason != "" && !strings.Contains(strings.Join(got.Reasons, "\n"), tt.reason) {
				t.Errorf("Argv(%q).Reasons = %q, want one containing %q", tt.argv, got.Reasons, tt.reason)
			}
			if len(tt.argv) > 0 && tt.argv[0] != "" {
				if want := tt.argv[0][strings.LastIndexByte(tt.argv[0], '/')+1:]; got.Program != want {
					t.Errorf("Argv(%q).Program = %q, want %q", tt.argv, got.Program, want)
				}
			}
		})
	}
}

func TestScript(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want Class
	}{
		{"pipeline", "git log --oneline | head -5", Readonly},
		{"grep count", "grep -r foo . | wc -l", Readonly},
		{"and list", "cd sub && ls -la", Readonly},
		{"or list", "test -f x || echo missing", Readonly},
		{"semicolons", "pwd; ls; git status", Readonly},
		{"if", "if [ -f go.mod ]; then cat go.mod; fi", Readonly},
		{"for over glob", "for f in src/*.go; do wc -l \"$f\"; done", Readonly},
		{"while read", "git ls-files | while read -r f; do echo \"$f\"; done", Readonly},
		{"case", "case x in x) echo y;; esac", Readonly},
		{"here-doc", "cat <<EOF\nhello\nEOF", Readonly},
		{"here-doc with substitution", "cat <<EOF\n$(id)\nEOF", Shell},
		{"here-string", "grep x <<< \"abc\"", Readonly},
		{"dev null", "ls 2>/dev/null", Readonly},
		{"fd dup", "ls 2>&1 | head", Readonly},
		{"input redirect", "wc -l < go.mod", Readonly},
		{"test clause", "[[ -f x ]] && cat x", Readonly},
		{"empty", "", Readonly},
		{"comment", "# nothing", Readonly},
		{"assignment", "X=1", Readonly},
		{"quoted var arg", "cat \"$HOME/.profile\"", Readonly},
		{"export", "export FOO=1; go env", Readonly},
		{"cmd subst", "echo $(id)", Shell},
		{"backticks", "echo `id`", Shell},
		{"nested cmd subst", "echo \"${X:-$(id)}\"", Shell},
		{"proc subst", "diff <(ls a) <(ls b)", Shell},
		{"eval", "eval ls", Shell},
		{"exec", "exec ls", Shell},
		{"source", "source x.sh", Shell},
		{"dot", ". x.sh", Shell},
		{"function", "f() { ls; }; f", Shell},
		{"var command", "$CMD -rf /", Shell},
		{"quoted var command", "\"$CMD\" x", Shell},
		{"redirect to file", "cat a > b", Shell},
		{"append to file", "echo x >> b", Shell},
		{"clobber", "echo x >| b", Shell},
		{"all to file", "ls &> out", Shell},
		{"read write", "cat <> f", Shell},
		{"truncate colon", ": > f", Destructive},
		{"truncate bare", "> f", Destructive},
		{"pipe to sh", "cat x | sh", Shell},
		{"pipe to bash", "echo ls | bash", Shell},
		{"pipe to curl", "cat f | curl -T - http://h", Remote},
		{"pipe to nc", "cat f | nc h 1", Remote},
		{"rm in list", "ls && rm -rf build", Destructive},
		{"git push in subshell", "(cd x && git push)", Remote},
		{"unparseable", "if then fi (", Shell},
		{"unterminated quote", "echo 'abc", Shell},
		{"arith", "echo $((1+2))", Shell},
		{"indirect", "echo ${!x}", Shell},
		{"prompt expansion", "echo ${x@P}", Shell},
		{"dangerous assign", "PATH=/tmp ls", Unknown},
		{"dangerous export", "export LD_PRELOAD=x; ls", Unknown},
		{"background", "sleep 100 &", Unknown},
		{"trap", "trap 'rm -rf /' EXIT", Shell},
		{"brace expansion", "rm {-rf,/}", Unknown},
		{"leading glob to rg", "rg foo *", Unknown},
		{"leading glob to cat", "cat *.go", Readonly},
		{"glob after --", "git diff -- *.go", Readonly},
		{"unquoted var to find", "find . $X", Unknown},
		{"escaped name", "r\\m -rf /", Destructive},
		{"ansi c quote", "rm $'\\x2drf' /", Unknown},
		{"nested bash", "bash -c 'bash -c \"rm -rf /\"'", Destructive},
		{"xargs pipeline", "git ls-files | xargs grep -l TODO", Readonly},
		{"sudo", "sudo ls", Destructive},
		{"kill", "kill 1", Destructive},
		{"time keyword", "time ls", Readonly},
		{"printf -v", "printf -v 'a[$(id)]' x", Shell},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Script(tt.src)
			if got.Class != tt.want {
				t.Fatalf("Script(%q).Class = %v (reasons %q), want %v", tt.src, got.Class, got.Reasons, tt.want)
			}
			if len(got.Reasons) == 0 {
				t.Errorf("Script(%q).Reasons is empty", tt.src)
			}
		})
	}
}

func TestUnparseableReason(t *testing.T) {
	got := Script("echo 'abc")
	if got.Class != Shell || !strings.HasPrefix(got.Reasons[0], "unparseable script: ") {
		t.Fatalf("got %v %q, want shell with an \"unparseable script: \" reason", got.Class, got.Reasons)
	}
}

func TestClassString(t *testing.T) {
	tests := []struct {
		c    Class
		want string
	}{
		{Readonly, "readonly"}, {WorkspaceWrite, "workspace_write"}, {Remote, "remote"},
		{Destructive, "destructive"}, {Shell, "shell"}, {Unknown, "unknown"},
		{Class(42), "unknown(42)"}, {Class(-1), "unknown(-1)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.c.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSeverityOrder(t *testing.T) {
	order := []Class{Readonly, WorkspaceWrite, Unknown, Shell, Remote, Destructive}
	for i := 1; i < len(order); i++ {
		if order[i-1].Severity() >= order[i].Severity() {
			t.Errorf("severity of %v = %d, want below %v (%d)", order[i-1], order[i-1].Severity(), order[i], order[i].Severity())
		}
		if got := Worse(order[i-1], order[i]); got != order[i] {
			t.Errorf("Worse(%v, %v) = %v, want %v", order[i-1], order[i], got, order[i])
		}
	}
}

func TestResultJSON(t *testing.T) {
	r := Argv([]string{"git", "push", "--force"})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"class":"destructive"`) {
		t.Fatalf("got %s, want class encoded as \"destructive\"", b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip got %+v, want %+v", back, r)
	}
	var c Class
	if err := json.Unmarshal([]byte(`"bogus"`), &c); err == nil {
		t.Fatal("unmarshal of \"bogus\" succeeded, want an error")
	}
	if _, err := json.Marshal(Class(99)); err == nil {
		t.Fatal("marshal of Class(99) succeeded, want an error")
	}
}

func TestDeterministic(t *testing.T) {
	words := []string{"git", "rm", "-rf", "status", "log", "--output=x", "sh", "-c", "ls | wc", "find", ".",
		"-delete", "sed", "-n", "p", "env", "X=1", "timeout", "5", "xargs", "curl", "-d", "$(id)", "--", "*"}
	rapid.Check(t, func(t *rapid.T) {
		argv := rapid.SliceOfN(rapid.SampledFrom(words), 0, 8).Draw(t, "argv")
		a, b := Argv(argv), Argv(argv)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("Argv(%q) not deterministic: %+v vs %+v", argv, a, b)
		}
		src := strings.Join(argv, " ")
		if s1, s2 := Script(src), Script(src); !reflect.DeepEqual(s1, s2) {
			t.Fatalf("Script(%q) not deterministic: %+v vs %+v", src, s1, s2)
		}
	})
}

func FuzzArgv(f *testing.F) {
	for _, seed := range []string{
		"git\x1fstatus", "rm\x1f-rf\x1f/", "find\x1f.\x1f-delete", "sh\x1f-c\x1fls | wc",
		"timeout\x1f5\x1frm\x1f-rf\x1f/", "env\x1fFOO=1\x1fgit\x1fstatus", "xargs\x1frm\x1f-rf",
		"sed\x1f-n\x1fs/a/b/w x", "git\x1f-c\x1fx=y\x1flog", "echo\x1frm\x1f-rf",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		argv := strings.Split(joined, "\x1f")
		r := Argv(argv)
		if !r.Class.Valid() {
			t.Fatalf("Argv(%q).Class = %d, want a valid class", argv, int(r.Class))
		}
		if len(r.Reasons) == 0 {
			t.Fatalf("Argv(%q) has no reasons", argv)
		}
		for i, a := range argv {
			if a != "rm" {
				continue
			}
			for _, b := range argv[i+1:] {
				if b == "-rf" && r.Class == Readonly {
					t.Fatalf("Argv(%q) is readonly, want not readonly (contains rm -rf)", argv)
				}
			}
		}
	})
}

func FuzzScript(f *testing.F) {
	for _, seed := range []string{
		"ls | wc -l", "echo $(id)", "cat a > b", ": > f", "if true; then ls; fi", "sed -n p f",
		"for f in *; do rm -rf \"$f\"; done", "bash -c 'bash -c ls'", "cat <<EOF\nx\nEOF", "${!x}",
		"git log --oneline | head -5 && curl -d x h",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		r := Script(src)
		if !r.Class.Valid() {
			t.Fatalf("Script(%q).Class = %d, want a valid class", src, int(r.Class))
		}
		if len(r.Reasons) == 0 {
			t.Fatalf("Script(%q) has no reasons", src)
		}
	})
}

func BenchmarkArgvReadonly(b *testing.B) {
	argv := []string{"git", "status", "--short"}
	b.ReportAllocs()
	for b.Loop() {
		if Argv(argv).Class != Readonly {
			b.Fatal("not readonly")
		}
	}
}

func BenchmarkScript(b *testing.B) {
	src := "git log --oneline | head -5 && grep -rn TODO . | wc -l"
	b.ReportAllocs()
	for b.Loop() {
		if Script(src).Class != Readonly {
			b.Fatal("not readonly")
		}
	}
}
