package gitx

import (
	"path"
	"strings"
	"testing"
	"unicode"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestValidateRev(t *testing.T) {
	tests := []struct {
		name string
		rev  string
		want errs.Code // "" = valid
	}{
		{"branch", "main", ""},
		{"nested branch", "feature/x-1.2", ""},
		{"oid", "0123456789abcdef0123456789abcdef01234567", ""},
		{"short oid", "abc1234", ""},
		{"ancestry", "HEAD~2^1", ""},
		{"reflog", "main@{1}", ""},
		{"upstream", "@{upstream}", ""},
		{"previous", "@{-1}", ""},
		{"two dot range", "main..HEAD", ""},
		{"three dot range", "origin/main...HEAD", ""},
		{"unicode branch", "ветка", ""},
		{"plus in name", "feat+x", ""},
		{"max length", strings.Repeat("a", MaxRevLen), ""},
		{"empty", "", errs.InvalidArgument},
		{"too long", strings.Repeat("a", MaxRevLen+1), errs.InvalidArgument},
		{"option", "--output=/tmp/x", errs.InvalidArgument},
		{"dash", "-", errs.InvalidArgument},
		{"absolute path", "/etc/passwd", errs.InvalidArgument},
		{"root", "/", errs.InvalidArgument},
		{"dot", ".", errs.InvalidArgument},
		{"dot dot", "..", errs.InvalidArgument},
		{"relative up", "../outside/secret.txt", errs.InvalidArgument},
		{"relative here", "./a.txt", errs.InvalidArgument},
		{"range from HEAD", "..main", ""},
		{"symmetric from HEAD", "...main", ""},
		{"NUL", "a\x00b", errs.InvalidArgument},
		{"space", "a b", errs.InvalidArgument},
		{"tab", "a\tb", errs.InvalidArgument},
		{"newline", "a\n", errs.InvalidArgument},
		{"control", "a\x7f", errs.InvalidArgument},
		{"nbsp", "a\u00a0b", errs.InvalidArgument},
		{"tree path", "HEAD:secret.txt", errs.InvalidArgument},
		{"index path", ":0:a", errs.InvalidArgument},
		{"message search", ":/fix", errs.InvalidArgument},
		{"glob", "ma*", errs.InvalidArgument},
		{"question", "ma?", errs.InvalidArgument},
		{"bracket", "a[1]", errs.InvalidArgument},
		{"backslash", `a\b`, errs.InvalidArgument},
		{"invalid utf8", "a\xffb", errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateRev(tt.rev)
			if got := errs.CodeOf(err); got != tt.want {
				t.Fatalf("got %q (%v), want %q", got, err, tt.want)
			}
		})
	}
}

func TestValidatePathspec(t *testing.T) {
	tests := []struct {
		name string
		p    string
		want errs.Code
	}{
		{"file", "a.txt", ""},
		{"nested", "dir/sub/file.go", ""},
		{"dot", ".", ""},
		{"glob", "*.go", ""},
		{"dir glob", "src/**/x", ""},
		{"inner dotdot staying inside", "a/../b", ""},
		{"space", "my file.txt", ""},
		{"colon inside", "a:b", ""},
		{"dash inside", "a-b", ""},
		{"unicode", "日本/語", ""},
		{"newline in name", "a\nb", ""},
		{"empty", "", errs.InvalidArgument},
		{"too long", strings.Repeat("a", MaxPathspecLen+1), errs.InvalidArgument},
		{"option", "--output=x", errs.InvalidArgument},
		{"short option", "-p", errs.InvalidArgument},
		{"magic top", ":(top)a", errs.InvalidArgument},
		{"magic exclude", ":!a", errs.InvalidArgument},
		{"magic short", ":/a", errs.InvalidArgument},
		{"NUL", "a\x00b", errs.InvalidArgument},
		{"absolute", "/etc/passwd", errs.PathOutsideRoot},
		{"parent", "..", errs.PathOutsideRoot},
		{"escape", "../x", errs.PathOutsideRoot},
		{"deep escape", "a/../../x", errs.PathOutsideRoot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePathspec(tt.p)
			if got := errs.CodeOf(err); got != tt.want {
				t.Fatalf("got %q (%v), want %q", got, err, tt.want)
			}
		})
	}
}

func FuzzValidateRev(f *testing.F) {
	for _, s := range []string{"main", "HEAD~1", "a..b", "-x", "HEAD:x", "a b", "", "@{-1}", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rev string) {
		err := ValidateRev(rev)
		if err != nil {
			if errs.CodeOf(err) != errs.InvalidArgument {
				t.Fatalf("code = %s, want INVALID_ARGUMENT", errs.CodeOf(err))
			}
			return
		}
		if rev == "" || len(rev) > MaxRevLen || rev[0] == '-' || strings.ContainsAny(rev, ":?*[\\") {
			t.Fatalf("accepted %q", rev)
		}
		for _, r := range rev {
			if unicode.IsSpace(r) || unicode.IsControl(r) || r == 0 {
				t.Fatalf("accepted %q with %q", rev, r)
			}
		}
	})
}

func FuzzValidatePathspec(f *testing.F) {
	for _, s := range []string{"a.txt", "../x", "/abs", ":(top)x", "-x", "a/../b", "", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := ValidatePathspec(p)
		if err != nil {
			if c := errs.CodeOf(err); c != errs.InvalidArgument && c != errs.PathOutsideRoot {
				t.Fatalf("code = %s", c)
			}
			return
		}
		c := path.Clean(p)
		if p == "" || p[0] == '-' || p[0] == ':' || p[0] == '/' || strings.IndexByte(p, 0) >= 0 ||
			c == ".." || strings.HasPrefix(c, "../") {
			t.Fatalf("accepted %q", p)
		}
	})
}
