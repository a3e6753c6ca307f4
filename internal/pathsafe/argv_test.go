package pathsafe

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestCheckArgv(t *testing.T) {
	fx := newFixture(t)
	tests := []struct {
		name string
		argv []string // "@" is replaced by the canonical root, "%" by the outside dir
		want errs.Code
	}{
		{"empty argv", nil, errs.InvalidArgument},
		{"empty program", []string{""}, errs.InvalidArgument},
		{"nul", []string{"cat", "a\x00"}, errs.InvalidArgument},
		{"program only", []string{"ls"}, ""},
		{"program outside is fine", []string{"/usr/bin/ls", "-la"}, ""},
		{"relative file", []string{"cat", "a.txt", "sub/b.go"}, ""},
		{"dot slash", []string{"cat", "./sub/b.go"}, ""},
		{"dot", []string{"ls", "."}, ""},
		{"flags", []string{"grep", "-rn", "--color=never", "-e", "x", "--", "."}, ""},
		{"regex with slash", []string{"grep", "-E", "foo|bar/baz", "sub"}, ""},
		{"regex dotdot-like", []string{"grep", "a/..b"}, ""},
		{"absolute inside", []string{"cat", "@/a.txt"}, ""},
		{"dev null", []string{"cp", "a.txt", "/dev/null"}, ""},
		{"dev stdout", []string{"tee", "/dev/stdout"}, ""},
		{"git dir ok", []string{"cat", ".git/config"}, ""},
		{"url", []string{"curl", "https://example.com/x"}, ""},
		{"glob name", []string{"find", ".", "-name", "*.pem"}, ""},
		{"rev path ok", []string{"git", "show", "HEAD:sub/b.go"}, ""},
		{"inside link", []string{"cat", "link_in/b.go"}, ""},

		{"absolute outside", []string{"cat", "/etc/passwd"}, errs.PathOutsideRoot},
		{"absolute outside dir", []string{"ls", "%"}, errs.PathOutsideRoot},
		{"dev other", []string{"cat", "/dev/sda"}, errs.PathOutsideRoot},
		{"dotdot", []string{"cat", "../x"}, errs.PathOutsideRoot},
		{"bare dotdot", []string{"ls", ".."}, errs.PathOutsideRoot},
		{"hidden dotdot", []string{"cat", "sub/../../x"}, errs.PathOutsideRoot},
		{"tilde", []string{"ls", "~"}, errs.PathOutsideRoot},
		{"tilde path", []string{"cat", "~/.bashrc"}, errs.PathOutsideRoot},
		{"tilde user", []string{"cat", "~root/x"}, errs.PathOutsideRoot},
		{"home var", []string{"cat", "$HOME/.bashrc"}, errs.PathOutsideRoot},
		{"home brace", []string{"ls", "${HOME}"}, errs.PathOutsideRoot},
		{"flag value outside", []string{"git", "--git-dir=/etc"}, errs.PathOutsideRoot},
		{"dd if", []string{"dd", "if=/etc/shadow"}, errs.PathOutsideRoot},
		{"flag value dotdot", []string{"tool", "--out=../x"}, errs.PathOutsideRoot},
		{"link out", []string{"cat", "link_out/passwd"}, errs.PathOutsideRoot},
		{"link out new leaf", []string{"touch", "link_out/newfile"}, errs.PathOutsideRoot},
		{"dangling out", []string{"cat", "link_dangling_out"}, errs.PathOutsideRoot},
		{"dot slash link out", []string{"cat", "./link_out_rel/passwd"}, errs.PathOutsideRoot},

		{"env", []string{"cat", ".env"}, errs.SecretPathDenied},
		{"env missing", []string{"cat", "nope/.env"}, errs.SecretPathDenied},
		{"pem", []string{"openssl", "x509", "-in", "notes/server.pem"}, errs.SecretPathDenied},
		{"id_rsa", []string{"cat", "id_rsa"}, errs.SecretPathDenied},
		{"ssh dir", []string{"ls", ".ssh"}, errs.SecretPathDenied},
		{"aws", []string{"cat", "cfg/.aws/config"}, errs.SecretPathDenied},
		{"absolute secret", []string{"cat", "@/.env"}, errs.SecretPathDenied},
		{"secret via link", []string{"cat", "link_secret"}, errs.SecretPathDenied},
		{"flag value secret", []string{"tool", "--config=.env"}, errs.SecretPathDenied},
		{"rev path secret", []string{"git", "show", "HEAD:.env"}, errs.SecretPathDenied},
		{"index path secret", []string{"git", "show", ":sub/.env.local"}, errs.SecretPathDenied},

		// globs the program expands
		{"glob matching a secret", []string{"cat", ".en?"}, errs.SecretPathDenied},
		{"star at the root", []string{"rg", "-uuu", "-g", "*", "TOKEN"}, errs.SecretPathDenied},
		{"glued glob", []string{"rg", "-uuu", "-g*", "TOKEN"}, errs.SecretPathDenied},
		{"include star", []string{"grep", "-r", "--include=*", "TOKEN", "."}, errs.SecretPathDenied},
		{"deep glob of keys", []string{"rg", "-g", "**/*.pem", "BEGIN"}, errs.SecretPathDenied},
		{"glob in a dir", []string{"cat", "sub/.env*"}, errs.SecretPathDenied},
		{"glob matching no secret", []string{"cat", "sub/*.go"}, ""},
		{"deep glob of go files", []string{"rg", "-g", "**/*.go", "x"}, ""},

		// values glued to short options
		{"glued secret", []string{"date", "-f.env"}, errs.SecretPathDenied},
		{"glued secret xargs", []string{"xargs", "-a.env", "echo"}, errs.SecretPathDenied},
		{"glued outside", []string{"sort", "-o/etc/passwd", "a.txt"}, errs.PathOutsideRoot},
		{"glued number", []string{"head", "-n5", "a.txt"}, ""},
		{"glued word", []string{"cc", "-Wall", "-lpthread"}, ""},

		// shell scripts
		{"script cat", []string{"sh", "-c", "cat .env"}, errs.SecretPathDenied},
		{"script glob", []string{"sh", "-c", "base64 -w0 .en?"}, errs.SecretPathDenied},
		{"script redirect in", []string{"bash", "-c", "wc -l < .env"}, errs.SecretPathDenied},
		{"script outside", []string{"sh", "-ec", "cat /etc/passwd"}, errs.PathOutsideRoot},
		{"script through env", []string{"env", "X=1", "sh", "-c", "cat ../x"}, errs.PathOutsideRoot},
		{"script through find", []string{"find", ".", "-maxdepth", "0", "-exec", "sh", "-c", "cat .envrc", ";"}, errs.SecretPathDenied},
		{"script nested", []string{"sh", "-c", "bash -c 'cat .env'"}, errs.SecretPathDenied},
		{"script for loop", []string{"sh", "-c", "for f in .env a.txt; do cat $f; done"}, errs.SecretPathDenied},
		{"script expansion tail", []string{"sh", "-c", "cat \"$PWD/.env\""}, errs.SecretPathDenied},
		{"script quoted", []string{"sh", "-c", "cat '.env'"}, errs.SecretPathDenied},
		{"script home", []string{"sh", "-c", "cat ~/.profile"}, errs.PathOutsideRoot},
		{"script unparsable", []string{"sh", "-c", "cat 'a.txt"}, errs.InvalidArgument},
		{"script shell star skips dotfiles", []string{"sh", "-c", "wc -l *"}, ""},
		{"script quoted star is the program's", []string{"sh", "-c", "rg -uuu -g '*' TOKEN"}, errs.SecretPathDenied},
		{"script fine", []string{"sh", "-c", "cat a.txt | wc -l; ls sub"}, ""},
		{"hard link", []string{"cat", "hardlink.txt"}, errs.PathNotAllowed},
		{"hard link absolute", []string{"cat", "@/hardlink.txt"}, errs.PathNotAllowed},
		{"hard link in a script", []string{"sh", "-c", "rev hardlink.txt"}, errs.PathNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv := make([]string, len(tt.argv))
			for i, a := range tt.argv {
				a = strings.ReplaceAll(a, "@", fx.dir)
				argv[i] = strings.ReplaceAll(a, "%", fx.outside)
			}
			err := fx.root.CheckArgv(argv)
			if got := codeOf(err); got != tt.want {
				t.Fatalf("CheckArgv(%q): got code %q (err %v), want %q", argv, got, err, tt.want)
			}
		})
	}
}
