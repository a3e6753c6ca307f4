package classify

import (
	"reflect"
	"strings"
	"testing"
)

// Every destructive or remote command either states its effect (work a
// person may approve as a durable job) or states none (rejected): argv ->
// class, effect kind, what it removes or where it writes.
func TestEffects(t *testing.T) {
	ws := func(removes ...string) *Effect { return &Effect{Kind: WorkspaceDelete, Removes: removes} }
	tests := []struct {
		argv   []string
		class  Class
		effect *Effect // nil: no effect (rejected)
		kind   EffectKind
		remote string // for remote writes: Effect.Remote
		target string
		reason string // substring of a reason
	}{
		// Destructive work inside the checkout.
		{argv: []string{"rm", "-rf", "pkg"}, class: Destructive, effect: ws("pkg"), reason: "pkg"},
		{argv: []string{"rm", "-r", "-f", "pkg", "build/out"}, class: Destructive, effect: ws("pkg", "build/out")},
		{argv: []string{"rm", "-rf", "--", "-odd"}, class: Destructive, effect: ws("-odd")},
		{argv: []string{"git", "clean", "-fdx"}, class: Destructive, effect: ws("untracked and ignored files and directories in the whole checkout")},
		{argv: []string{"git", "clean", "-f", "--", "gen"}, class: Destructive, effect: ws("untracked files in gen")},
		{argv: []string{"git", "reset", "--hard"}, class: Destructive, effect: ws("uncommitted changes to tracked files")},
		{argv: []string{"git", "reset", "--hard", "origin/main"}, class: Destructive, effect: ws("uncommitted changes to tracked files (HEAD moves to origin/main)")},
		{argv: []string{"git", "checkout", "--", "."}, class: Destructive, effect: ws("uncommitted changes in .")},
		{argv: []string{"git", "restore", "."}, class: Destructive, effect: ws("uncommitted changes in .")},
		{argv: []string{"git", "branch", "-D", "topic"}, class: Destructive, effect: ws("branch topic (unmerged commits too)")},
		{argv: []string{"git", "tag", "-f", "v1"}, class: Destructive, effect: ws("tag v1 (overwritten)")},
		{argv: []string{"find", "build", "-name", "*.o", "-delete"}, class: Destructive, effect: ws("files under build matching -name *.o")},
		{argv: []string{"find", ".", "-name", "*.pyc", "-delete"}, class: Destructive, effect: ws("files under . matching -name *.pyc")},
		{argv: []string{"rsync", "-a", "--delete", "src/", "dst/"}, class: Destructive, effect: ws("files in dst/ not in src/")},
		{argv: []string{"timeout", "60", "rm", "-rf", "pkg"}, class: Destructive, effect: ws("pkg")},
		// Catastrophic or outside the checkout: rejected.
		{argv: []string{"rm", "-rf", "/"}, class: Destructive, reason: "absolute path"},
		{argv: []string{"rm", "-rf", "/home/user"}, class: Destructive, reason: "absolute path"},
		{argv: []string{"rm", "-rf", "../x"}, class: Destructive, reason: `"../x" leaves its directory`},
		{argv: []string{"rm", "-rf", "pkg/../../x"}, class: Destructive, reason: "leaves its directory"},
		{argv: []string{"rm", "-rf", "~"}, class: Destructive, reason: "expanded at run time"},
		{argv: []string{"rm", "-rf", "$HOME"}, class: Destructive, reason: "expanded at run time"},
		{argv: []string{"rm", "-rf", "."}, class: Destructive, reason: "whole tree"},
		{argv: []string{"rm", "-rf", "*"}, class: Destructive, reason: "whole tree"},
		{argv: []string{"rm", "-rf", ".git"}, class: Destructive, reason: "git directory"},
		{argv: []string{"rm", "-rf", "pkg", "/etc"}, class: Destructive, reason: "absolute path"},
		{argv: []string{"rm", "-rf", "--no-preserve-root", "pkg"}, class: Destructive, reason: "no-preserve-root"},
		{argv: []string{"mkfs.ext4", "/dev/sda1"}, class: Destructive},
		{argv: []string{"date", "-s", "2020-01-01"}, class: Destructive},
		{argv: []string{"mv", "x", "/"}, class: Destructive},
		{argv: []string{"chmod", "-R", "777", "/"}, class: Destructive},
		{argv: []string{"dd", "if=/dev/zero", "of=f"}, class: Destructive},
		{argv: []string{"git", "config", "core.hooksPath", "h"}, class: Destructive},
		{argv: []string{"git", "stash", "clear"}, class: Destructive},
		{argv: []string{"git", "reflog", "expire", "--all"}, class: Destructive},
		{argv: []string{"git", "clean", "-f", "../other"}, class: Destructive},
		{argv: []string{"find", "/", "-delete"}, class: Destructive},
		{argv: []string{"find", ".", "-delete", "-exec", "rm", "-rf", "{}", ";"}, class: Destructive},
		{argv: []string{"rsync", "--delete", "src/", "/srv/www"}, class: Destructive, reason: "absolute path"},
		{argv: []string{"rsync", "--remove-source-files", "a", "b"}, class: Destructive},
		{argv: []string{"sh", "-c", "rm -rf pkg"}, class: Destructive},
		{argv: []string{"xargs", "rm", "-rf"}, class: Destructive},
		// Explicit remote writes.
		{argv: []string{"npm", "publish"}, class: Remote, kind: RemoteWrite, remote: "the default npm registry", target: "the package in the working directory"},
		{argv: []string{"npm", "publish", "--registry", "http://127.0.0.1:4873/", "--tag", "next", "pkg.tgz"}, class: Remote, kind: RemoteWrite, remote: "http://127.0.0.1:4873/", target: "pkg.tgz"},
		{argv: []string{"pnpm", "publish"}, class: Remote, kind: RemoteWrite},
		{argv: []string{"yarn", "npm", "publish"}, class: Remote, kind: RemoteWrite},
		{argv: []string{"cargo", "publish", "-p", "mycrate"}, class: Remote, kind: RemoteWrite, remote: "crates.io", target: "mycrate"},
		{argv: []string{"twine", "upload", "dist/x.whl"}, class: Remote, kind: RemoteWrite, remote: "PyPI", target: "dist/x.whl"},
		{argv: []string{"gh", "pr", "create", "--fill"}, class: Remote, kind: RemoteWrite, remote: "the checkout's GitHub repository", target: "pr create"},
		{argv: []string{"gh", "pr", "merge", "12", "-R", "acme/tool"}, class: Remote, kind: RemoteWrite, remote: "acme/tool", target: "pr merge 12"},
		{argv: []string{"gh", "pr", "close", "12"}, class: Remote, kind: RemoteWrite, target: "pr close 12"},
		{argv: []string{"gh", "release", "create", "v1.0.0"}, class: Remote, kind: RemoteWrite, target: "release create v1.0.0"},
		{argv: []string{"docker", "push", "ghcr.io/acme/tool:1"}, class: Remote, kind: RemoteWrite, remote: "ghcr.io", target: "ghcr.io/acme/tool:1"},
		{argv: []string{"vercel", "deploy", "--prod"}, class: Remote, kind: RemoteWrite, remote: "Vercel"},
		{argv: []string{"wrangler", "deploy"}, class: Remote, kind: RemoteWrite, remote: "Cloudflare Workers"},
		{argv: []string{"git", "push", "origin", "main"}, class: Remote, kind: GitPush, remote: "origin", target: "main"},
		{argv: []string{"git", "push", "-f", "origin", "main"}, class: Destructive, kind: GitPush, remote: "origin", target: "main"},
		{argv: []string{"git", "push", "origin", "+main"}, class: Destructive, kind: GitPush, target: "+main"},
		// Implicit or unbounded remote work: rejected.
		{argv: []string{"git", "push", "--mirror"}, class: Destructive},
		{argv: []string{"git", "push", "--all", "origin"}, class: Destructive},
		{argv: []string{"git", "push", "--tags"}, class: Destructive},
		{argv: []string{"git", "push", "origin", ":main"}, class: Destructive},
		{argv: []string{"git", "push", "--receive-pack=x", "origin"}, class: Destructive},
		{argv: []string{"git", "-c", "alias.p=push", "p"}, class: Destructive, reason: "alias.p="},
		{argv: []string{"git", "-c", "remote.origin.mirror=true", "push"}, class: Destructive},
		{argv: []string{"git", "config", "remote.origin.mirror", "true"}, class: Remote, reason: "implicit remote write"},
		{argv: []string{"git", "config", "remote.origin.pushurl", "https://x"}, class: Remote},
		{argv: []string{"git", "remote", "add", "--mirror=push", "m", "https://x"}, class: Remote},
		{argv: []string{"sh", "-c", "make && git push origin main"}, class: Remote},
		{argv: []string{"npm", "login"}, class: Remote},
		{argv: []string{"npm", "owner", "add", "x"}, class: Remote},
		{argv: []string{"gh", "api", "-X", "POST", "/repos/x"}, class: Remote},
		{argv: []string{"gh", "release", "delete", "v1"}, class: Remote},
		{argv: []string{"curl", "-d", "x", "http://h"}, class: Remote},
		{argv: []string{"ssh", "host"}, class: Remote},
		// Benign: unchanged.
		{argv: []string{"rm", "-f", "out.txt"}, class: WorkspaceWrite},
		{argv: []string{"git", "-c", "color.ui=false", "log"}, class: Unknown},
		{argv: []string{"vercel", "--version"}, class: Readonly},
		{argv: []string{"git", "config", "remote.origin.url", "https://x"}, class: WorkspaceWrite},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			got := Argv(tt.argv)
			if got.Class != tt.class {
				t.Fatalf("class = %v (reasons %q), want %v", got.Class, got.Reasons, tt.class)
			}
			if tt.reason != "" && !strings.Contains(strings.Join(got.Reasons, "\n"), tt.reason) {
				t.Errorf("reasons %q, want one containing %q", got.Reasons, tt.reason)
			}
			switch {
			case tt.effect != nil:
				if !reflect.DeepEqual(got.Effect, tt.effect) {
					t.Errorf("effect = %+v, want %+v", got.Effect, tt.effect)
				}
			case tt.kind != "":
				if got.Effect == nil || got.Effect.Kind != tt.kind {
					t.Fatalf("effect = %+v, want kind %s", got.Effect, tt.kind)
				}
				if tt.remote != "" && got.Effect.Remote != tt.remote {
					t.Errorf("remote = %q, want %q", got.Effect.Remote, tt.remote)
				}
				if tt.target != "" && got.Effect.Target != tt.target {
					t.Errorf("target = %q, want %q", got.Effect.Target, tt.target)
				}
				if !got.Network {
					t.Errorf("network = false, want true")
				}
			default:
				if got.Effect != nil {
					t.Errorf("effect = %+v, want none (rejected)", got.Effect)
				}
			}
		})
	}
}

func TestPortsOf(t *testing.T) {
	tests := []struct {
		args []string
		want []int
	}{
		{nil, []int{22, 80, 443}},
		{[]string{"--registry", "http://127.0.0.1:4873/"}, []int{22, 80, 443, 4873}},
		{[]string{"--registry=https://r.example:8443/x"}, []int{22, 80, 443, 8443}},
		{[]string{"https://r.example/x", "pkg"}, []int{22, 80, 443}},
		{[]string{"http://h:99999/"}, []int{22, 80, 443}},
	}
	for _, tt := range tests {
		if got := portsOf(tt.args); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("portsOf(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestEffectDescribe(t *testing.T) {
	tests := []struct {
		e    *Effect
		want string
	}{
		{nil, ""},
		{&Effect{Kind: WorkspaceDelete, Removes: []string{"pkg", "build"}}, "removes pkg, build"},
		{&Effect{Kind: RemoteWrite, Remote: "PyPI", Target: "dist/x.whl"}, "writes to PyPI: dist/x.whl"},
		{&Effect{Kind: RemoteWrite}, "writes to a remote service"},
		{&Effect{Kind: GitPush}, "pushes the current branch to the default remote"},
		{&Effect{Kind: GitPush, Remote: "origin", Target: "main", Force: true}, "pushes main to origin (force)"},
	}
	for _, tt := range tests {
		if got := tt.e.Describe(); got != tt.want {
			t.Errorf("Describe(%+v) = %q, want %q", tt.e, got, tt.want)
		}
	}
}
