package lease

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestConstructors(t *testing.T) {
	tests := []struct {
		name string
		got  Key
		want Key
	}{
		{"workspace", WorkspaceKey("c1"), "workspace:c1"},
		{"path", PathKey("c1", "src/a.go"), "path:c1:src/a.go"},
		{"path cleaned", PathKey("c1", "./src//a.go/"), "path:c1:src/a.go"},
		{"path dotdot inside", PathKey("c1", "src/x/../a.go"), "path:c1:src/a.go"},
		{"path with colon", PathKey("c1", "a:b"), "path:c1:a:b"},
		{"index", GitIndexKey("c1"), "git-index:c1"},
		{"head", GitHeadKey("c1"), "git-head:c1"},
		{"ref", GitRefKey("c1", "refs/heads/main"), "git-ref:c1:refs/heads/main"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Fatalf("got %q, want %q", tt.got, tt.want)
			}
			if _, err := ParseKey(string(tt.got)); err != nil {
				t.Fatalf("ParseKey(%q) = %v, want nil", tt.got, err)
			}
		})
	}
}

func TestParseKey(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"workspace", "workspace:c1", true},
		{"path", "path:c1:src/a.go", true},
		{"path with colon", "path:c1:a:b.txt", true},
		{"path unicode", "path:c1:dir/héllo.txt", true},
		{"index", "git-index:c1", true},
		{"head", "git-head:c1", true},
		{"ref", "git-ref:c1:refs/heads/feature/x", true},
		{"empty", "", false},
		{"no prefix", "c1", false},
		{"unknown kind", "branch:c1", false},
		{"upper kind", "WORKSPACE:c1", false},
		{"workspace empty checkout", "workspace:", false},
		{"workspace colon", "workspace:c1:x", false},
		{"checkout space", "workspace:c 1", false},
		{"checkout control", "workspace:c\x001", false},
		{"checkout too long", "workspace:" + strings.Repeat("c", 256), false},
		{"path no rel", "path:c1", false},
		{"path empty rel", "path:c1:", false},
		{"path empty checkout", "path::src", false},
		{"path root", "path:c1:.", false},
		{"path absolute", "path:c1:/etc/passwd", false},
		{"path dotdot", "path:c1:../x", false},
		{"path inner dotdot", "path:c1:a/../b", false},
		{"path dot elem", "path:c1:./a", false},
		{"path trailing slash", "path:c1:src/", false},
		{"path double slash", "path:c1:a//b", false},
		{"path newline", "path:c1:a\nb", false},
		{"path bad utf8", "path:c1:a\xffb", false},
		{"path too long", "path:c1:" + strings.Repeat("a/", 2049) + "a", false},
		{"ref empty", "git-ref:c1:", false},
		{"ref dotdot", "git-ref:c1:refs/heads/a..b", false},
		{"ref lock", "git-ref:c1:refs/heads/a.lock", false},
		{"ref space", "git-ref:c1:refs/heads/a b", false},
		{"ref tilde", "git-ref:c1:main~1", false},
		{"ref at brace", "git-ref:c1:main@{1}", false},
		{"ref trailing slash", "git-ref:c1:refs/heads/", false},
		{"ref dot elem", "git-ref:c1:refs/.hidden", false},
		{"ref at", "git-ref:c1:@", false},
		{"head extra", "git-head:c1:main", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKey(tt.in)
			if tt.ok {
				if err != nil || string(k) != tt.in {
					t.Fatalf("ParseKey(%q) = %q, %v; want %q, nil", tt.in, k, err, tt.in)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseKey(%q) = %q, nil; want an error", tt.in, k)
			}
			if got := errs.CodeOf(err); got != errs.InvalidArgument {
				t.Fatalf("code = %s, want %s (%v)", got, errs.InvalidArgument, err)
			}
		})
	}
}

func TestOverlaps(t *testing.T) {
	const c, d = "c1", "c2"
	tests := []struct {
		name string
		a, b Key
		want bool
	}{
		{"workspace self", WorkspaceKey(c), WorkspaceKey(c), true},
		{"workspace other checkout", WorkspaceKey(c), WorkspaceKey(d), false},
		{"workspace path", WorkspaceKey(c), PathKey(c, "src/a.go"), true},
		{"workspace index", WorkspaceKey(c), GitIndexKey(c), true},
		{"workspace head", WorkspaceKey(c), GitHeadKey(c), true},
		{"workspace ref", WorkspaceKey(c), GitRefKey(c, "refs/heads/main"), true},
		{"workspace path other checkout", WorkspaceKey(c), PathKey(d, "src"), false},
		{"path same", PathKey(c, "src/a.go"), PathKey(c, "src/a.go"), true},
		{"path dir above", PathKey(c, "src"), PathKey(c, "src/a.go"), true},
		{"path dir below", PathKey(c, "src/a.go"), PathKey(c, "src"), true},
		{"path deep prefix", PathKey(c, "a"), PathKey(c, "a/b/c/d"), true},
		{"path sibling", PathKey(c, "src/a.go"), PathKey(c, "src/b.go"), false},
		{"path name prefix not dir", PathKey(c, "src"), PathKey(c, "src2/a.go"), false},
		{"path name prefix file", PathKey(c, "a.go"), PathKey(c, "a.go.orig"), false},
		{"path other checkout", PathKey(c, "src"), PathKey(d, "src"), false},
		{"path index", PathKey(c, "src"), GitIndexKey(c), false},
		{"path head", PathKey(c, "src"), GitHeadKey(c), false},
		{"path ref same text", PathKey(c, "refs/heads/main"), GitRefKey(c, "refs/heads/main"), false},
		{"index self", GitIndexKey(c), GitIndexKey(c), true},
		{"index other checkout", GitIndexKey(c), GitIndexKey(d), false},
		{"index head", GitIndexKey(c), GitHeadKey(c), false},
		{"index ref", GitIndexKey(c), GitRefKey(c, "main"), false},
		{"head self", GitHeadKey(c), GitHeadKey(c), true},
		{"head ref", GitHeadKey(c), GitRefKey(c, "refs/heads/main"), true},
		{"ref head", GitRefKey(c, "refs/tags/v1"), GitHeadKey(c), true},
		{"head ref other checkout", GitHeadKey(c), GitRefKey(d, "refs/heads/main"), false},
		{"ref same", GitRefKey(c, "refs/heads/main"), GitRefKey(c, "refs/heads/main"), true},
		{"ref different", GitRefKey(c, "refs/heads/main"), GitRefKey(c, "refs/heads/dev"), false},
		{"ref dir conflict", GitRefKey(c, "refs/heads/a"), GitRefKey(c, "refs/heads/a/b"), true},
		{"ref name prefix", GitRefKey(c, "refs/heads/a"), GitRefKey(c, "refs/heads/ab"), false},
		{"ref other checkout", GitRefKey(c, "main"), GitRefKey(d, "main"), false},
		{"checkout prefix", WorkspaceKey("c"), PathKey("c1", "x"), false},
		{"malformed self", Key("junk"), Key("junk"), true},
		{"malformed vs valid", Key("junk"), WorkspaceKey(c), false},
		{"malformed workspace-like", Key("workspace:c1:x"), PathKey(c, "x"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Overlaps(tt.a, tt.b); got != tt.want {
				t.Fatalf("Overlaps(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := Overlaps(tt.b, tt.a); got != tt.want {
				t.Fatalf("Overlaps(%q, %q) = %v, want %v (symmetry)", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

func TestKeyCheckout(t *testing.T) {
	tests := []struct {
		k    Key
		want string
	}{
		{WorkspaceKey("c1"), "c1"},
		{PathKey("c2", "a:b"), "c2"},
		{GitRefKey("c3", "main"), "c3"},
		{Key("nope"), ""},
	}
	for _, tt := range tests {
		if got := tt.k.Checkout(); got != tt.want {
			t.Errorf("%q.Checkout() = %q, want %q", tt.k, got, tt.want)
		}
	}
}

var fuzzProbe = []Key{
	WorkspaceKey("c1"), PathKey("c1", "src"), PathKey("c1", "src/a.go"), GitIndexKey("c1"),
	GitHeadKey("c1"), GitRefKey("c1", "refs/heads/main"), WorkspaceKey("c2"), Key(""),
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{
		"workspace:c1", "path:c1:src/a.go", "path:c1:a:b", "git-index:c1", "git-head:c1",
		"git-ref:c1:refs/heads/main", "path:c1:../x", "path::", "git-ref:c1:a..b", "",
		"workspace:", "path:c1:src/", "git-ref:c1:x.lock", "path:c1:\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		for _, p := range fuzzProbe {
			if Overlaps(Key(s), p) != Overlaps(p, Key(s)) {
				t.Fatalf("Overlaps(%q, %q) is not symmetric", s, p)
			}
		}
		if err != nil {
			if errs.CodeOf(err) != errs.InvalidArgument {
				t.Fatalf("ParseKey(%q) code = %s, want %s", s, errs.CodeOf(err), errs.InvalidArgument)
			}
			return
		}
		if string(k) != s {
			t.Fatalf("ParseKey(%q) = %q, want the input back", s, k)
		}
		if !Overlaps(k, k) {
			t.Fatalf("Overlaps(%q, itself) = false", k)
		}
		p, ok := split(k)
		if !ok {
			t.Fatalf("split(%q) failed on a valid key", k)
		}
		var rebuilt Key
		switch p.kind {
		case kindWorkspace:
			rebuilt = WorkspaceKey(p.checkout)
		case kindPath:
			rebuilt = PathKey(p.checkout, p.rest)
		case kindIndex:
			rebuilt = GitIndexKey(p.checkout)
		case kindHead:
			rebuilt = GitHeadKey(p.checkout)
		case kindRef:
			rebuilt = GitRefKey(p.checkout, p.rest)
		}
		if rebuilt != k {
			t.Fatalf("rebuilt %q from parts, want %q", rebuilt, k)
		}
		if !Overlaps(WorkspaceKey(p.checkout), k) {
			t.Fatalf("workspace of %q does not overlap it", k)
		}
	})
}
