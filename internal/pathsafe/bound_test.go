package pathsafe

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestForRootCrossesTheRoot(t *testing.T) {
	tests := []struct {
		name       string
		root       string
		exceptions []string
		rel        string
		want       string // matching pattern, "" for none
	}{
		// The root-relative blind spot: the root is the credential directory.
		{"aws credentials", "/home/u/.aws", nil, "credentials", ".aws/credentials"},
		{"aws config", "/home/u/.aws", nil, "config", ".aws/config"},
		{"aws other", "/home/u/.aws", nil, "notes.txt", ""},
		{"aws deeper", "/home/u/.aws", nil, "sub/credentials", ""},
		{"aws upper", "/home/u/.AWS", nil, "Credentials", ".aws/credentials"},
		{"kube config", "/srv/x/.kube", nil, "config", ".kube/config"},
		{"docker config", "/h/.docker", nil, "config.json", ".docker/config.json"},
		{"ssh anything", "/home/u/.ssh", nil, "known_hosts", ".ssh/**"},
		{"ssh deep", "/home/u/.ssh", nil, "a/b/c", ".ssh/**"},
		{"inside ssh", "/home/u/.ssh/keys/work", nil, "README.md", ".ssh/**"},
		{"ssh root itself", "/home/u/.ssh", nil, ".", ".ssh/**"},
		{"inside ssh root itself", "/home/u/.ssh/keys", nil, ".", ".ssh/**"},
		{"gnupg", "/x/.gnupg", nil, "pubring.kbx", ".gnupg/**"},
		// Ordinary roots: nothing crosses, the rules inside stay.
		{"plain root plain file", "/home/u/src/app", nil, "main.go", ""},
		{"plain root env", "/home/u/src/app", nil, "a/.env", ".env"},
		{"plain root nested aws", "/home/u/src/app", nil, "x/.aws/credentials", ".aws/credentials"},
		{"plain root itself", "/home/u/src/app", nil, ".", ""},
		{"root named like a file pattern", "/home/u/src/kubeconfig", nil, ".", ""},
		{"root named like a file pattern child", "/home/u/src/kubeconfig", nil, "main.go", ""},
		{"aws-like name", "/home/u/aws", nil, "credentials", ""},
		{"aws suffix name", "/home/u/x.aws", nil, "credentials", ""},
		// Escaping paths cross nothing.
		{"escape", "/home/u/.aws", nil, "../credentials", ""},
		// Exceptions take exactly their paths off the list.
		{"exception", "/r", []string{"test/*.pem"}, "test/key.pem", ""},
		{"exception other dir", "/r", []string{"test/*.pem"}, "other/key.pem", "*.pem"},
		{"exception other name", "/r", []string{"test/*.pem"}, "test/.env", ".env"},
		{"exception deeper", "/r", []string{"test/*.pem"}, "test/sub/key.pem", "*.pem"},
		{"exception case-sensitive", "/r", []string{"test/*.pem"}, "TEST/key.pem", "*.pem"},
		{"exception cleaned", "/r", []string{"test/*.pem"}, "./test//key.pem", ""},
		{"exception escape", "/r", []string{"test/*.pem"}, "test/../../r/test/key.pem", "*.pem"},
		{"exception crossing", "/h/.aws", []string{"config"}, "config", ""},
		{"exception crossing other", "/h/.aws", []string{"config"}, "credentials", ".aws/credentials"},
		{"exception never the root", "/h/.ssh", []string{"*"}, ".", ".ssh/**"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := (*Denylist)(nil).ForRoot(tt.root, tt.exceptions)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := d.Match(tt.rel)
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("ForRoot(%q).Match(%q): got (%q, %v), want (%q, %v)", tt.root, tt.rel, got, ok, tt.want, tt.want != "")
			}
		})
	}
}

func TestForRootCustomPatterns(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		root     string
		rel      string
		want     string
	}{
		{"anchored stays root-relative", []string{"/vault/*"}, "/x/vault", "a", ""},
		{"anchored inside", []string{"/vault/*"}, "/x/vault", "vault/a", "/vault/*"},
		{"three segments across two", []string{"a/b/c"}, "/x/a/b", "c", "a/b/c"},
		{"three segments across one", []string{"a/b/c"}, "/x/a", "b/c", "a/b/c"},
		{"three segments too few", []string{"a/b/c"}, "/x/a", "c", ""},
		{"glob head", []string{"*/keys/*"}, "/x/team/keys", "k1", "*/keys/*"},
		{"doublestar middle", []string{"priv/**/*.txt"}, "/x/priv/a", "b/c.txt", "priv/**/*.txt"},
		{"trailing slash dir", []string{"vault/"}, "/x/vault/y", "z", "vault/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, err := NewDenylist(tt.patterns)
			if err != nil {
				t.Fatal(err)
			}
			d, err := base.ForRoot(tt.root, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := d.Match(tt.rel)
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("Match(%q) under %q: got (%q, %v), want (%q, %v)", tt.rel, tt.root, got, ok, tt.want, tt.want != "")
			}
		})
	}
}

func TestForRootInvalid(t *testing.T) {
	for _, root := range []string{"", "rel/dir"} {
		if _, err := (*Denylist)(nil).ForRoot(root, nil); errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("ForRoot(%q): got %v, want %s", root, err, errs.InvalidArgument)
		}
	}
	for _, g := range []string{"", "/abs/*.pem", "../x.pem", "a/../../x", "a/..", "a[b", "a\x00b"} {
		if _, err := (*Denylist)(nil).ForRoot("/r", []string{g}); errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("ForRoot exception %q: got %v, want %s", g, err, errs.InvalidArgument)
		}
	}
}

func TestForRootRebindsFromTheBase(t *testing.T) {
	a, err := (*Denylist)(nil).ForRoot("/r", []string{"test/*.pem"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.ForRoot("/q", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Match("test/key.pem"); !ok {
		t.Errorf("rebinding kept the other root's exception: test/key.pem is no secret of /q")
	}
	if a.Root() != "/r" || b.Root() != "/q" {
		t.Errorf("Root: got %q and %q, want /r and /q", a.Root(), b.Root())
	}
	if got := a.Exceptions(); len(got) != 1 || got[0] != "test/*.pem" {
		t.Errorf("Exceptions: got %q, want [test/*.pem]", got)
	}
	if got := len(b.Patterns()); got != len(DefaultSecretPatterns()) {
		t.Errorf("Patterns of a bound list: got %d, want the base's %d", got, len(DefaultSecretPatterns()))
	}
}

func TestForRootCanonical(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(base, "home", ".aws")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "innocent")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	d, err := (*Denylist)(nil).ForRoot(link, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Root() != real {
		t.Errorf("Root: got %q, want the canonical %q", d.Root(), real)
	}
	if got, ok := d.Match("credentials"); !ok || got != ".aws/credentials" {
		t.Errorf("a symlink to .aws: Match(credentials) = (%q, %v), want .aws/credentials", got, ok)
	}
	if !d.Crosses() {
		t.Errorf("Crosses: got false for a root inside .aws")
	}
	plain, _ := (*Denylist)(nil).ForRoot(base, nil)
	if plain.Crosses() {
		t.Errorf("Crosses: got true for %q", base)
	}
}

func TestSecretErrorNamesTheFix(t *testing.T) {
	fx := newFixture(t)
	d, err := (*Denylist)(nil).ForRoot(fx.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	root, err := NewRoot(fx.dir, d)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = root.ResolveRead("notes/Server.PEM")
	e := errs.From(err)
	if e == nil || e.Code != errs.SecretPathDenied {
		t.Fatalf("ResolveRead: got %v, want %s", err, errs.SecretPathDenied)
	}
	want := "policy secret_exceptions {repo: " + fx.dir + ", paths: [notes/Server.PEM]}"
	if !strings.Contains(e.Message, want) {
		t.Errorf("message %q does not name the fix %q", e.Message, want)
	}
	// An exception opens the path, and only it.
	d, _ = (*Denylist)(nil).ForRoot(fx.dir, []string{"notes/*.PEM"})
	root, _ = NewRoot(fx.dir, d)
	if _, _, err := root.ResolveRead("notes/Server.PEM"); err != nil {
		t.Errorf("ResolveRead of an excepted path: %v", err)
	}
	if _, _, err := root.ResolveRead(".env"); errs.CodeOf(err) != errs.SecretPathDenied {
		t.Errorf("ResolveRead(.env) with an exception for notes/*.PEM: got %v, want %s", err, errs.SecretPathDenied)
	}
}

func TestCheckLeaf(t *testing.T) {
	fx := newFixture(t)
	lstat := func(rel string) os.FileInfo {
		fi, err := os.Lstat(filepath.Join(fx.dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	if err := os.MkdirAll(filepath.Join(fx.dir, ".git", "objects", "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(fx.dir, ".git", "objects", "ab", "cdef")
	if err := os.WriteFile(obj, []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(obj, filepath.Join(fx.outside, "obj")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	tests := []struct {
		name string
		rel  string
		fi   os.FileInfo
		want errs.Code
	}{
		{"plain file", "a.txt", lstat("a.txt"), ""},
		{"secret by name", ".env", lstat(".env"), errs.SecretPathDenied},
		{"secret without stat", "sub/.env.local", nil, errs.SecretPathDenied},
		{"hard link out", "hardlink.txt", lstat("hardlink.txt"), errs.PathNotAllowed},
		{"directory", "sub", lstat("sub"), ""},
		{"git object hard link", ".git/objects/ab/cdef", lstat(".git/objects/ab/cdef"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fx.root.CheckLeaf(tt.rel, tt.fi)
			if got := codeOf(err); got != tt.want {
				t.Errorf("CheckLeaf(%q): got %v, want %q", tt.rel, err, tt.want)
			}
			var st *syscall.Stat_t
			if tt.fi != nil {
				st, _ = tt.fi.Sys().(*syscall.Stat_t)
			}
			if got, want := codeOf(fx.root.CheckLeafStat(tt.rel, st)), codeOf(err); got != want {
				t.Errorf("CheckLeafStat(%q): got %q, want %q as CheckLeaf", tt.rel, got, want)
			}
		})
	}
}

// refMatch is the definition Match on a bound list implements, by brute
// force: an exception names rel (clean, inside the root), or else an
// anchored pattern matches rel, a single-segment one rel's base name, and
// a multi-segment one some component-aligned suffix of the absolute path
// (root and rel); for "." the root's own suffixes (multi-segment only),
// or what the unbound list says of ".".
func refMatch(patterns []string, root string, except []string, rel string) bool {
	for _, g := range except {
		if rel != "." && doublestar.MatchUnvalidated(g, rel) {
			return false
		}
	}
	lrel := strings.ToLower(rel)
	var comps []string
	if root != "/" {
		comps = strings.Split(strings.ToLower(root[1:]), "/")
	}
	full := comps
	if rel != "." {
		full = append(append([]string(nil), comps...), strings.Split(lrel, "/")...)
	}
	for _, orig := range patterns {
		m, _ := compilePattern(orig)
		switch {
		case m.anchored:
			if doublestar.MatchUnvalidated(m.pat, lrel) {
				return true
			}
		case rel == ".":
			// What the unbound list says of "." stays.
			if doublestar.MatchUnvalidated(m.pat, ".") {
				return true
			}
			if m.segs == 1 {
				continue
			}
			for k := range full {
				if doublestar.MatchUnvalidated(m.pat, strings.Join(full[k:], "/")) {
					return true
				}
			}
		case m.segs == 1:
			if doublestar.MatchUnvalidated(m.pat, full[len(full)-1]) {
				return true
			}
		default:
			for k := range full {
				if doublestar.MatchUnvalidated(m.pat, strings.Join(full[k:], "/")) {
					return true
				}
			}
		}
	}
	return false
}

// FuzzForRoot: a bound list never misses a match across the root (it
// agrees with the brute-force definition), and an exception never
// re-opens a path outside its globs.
func FuzzForRoot(f *testing.F) {
	for _, s := range [][4]string{
		{"/home/u/.aws", "credentials", "", ""},
		{"/home/u/.ssh/keys", "a/b", "", ""},
		{"/x/.kube", "config", "config", ""},
		{"/r", "test/key.pem", "test/*.pem", ""},
		{"/r", "test/.env", "test/*.pem", ""},
		{"/r/.docker", "config.json", "", "priv/**/*.txt"},
		{"/a/priv/b", "c/d.txt", "", "priv/**/*.txt"},
		{"/a/b", "c", "", "/c"},
		{"/", ".", "", ""},
		{"/x/.gnupg", ".", "*", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, root, rel, exception, extra string) {
		// Paths and policies are UTF-8 (agents' paths are refused
		// otherwise); doublestar reads invalid bytes as one rune.
		for _, s := range []string{root, rel, exception, extra} {
			if !utf8.ValidString(s) {
				return
			}
		}
		root = "/" + strings.Trim(cleanComps(root), "/")
		rel = cleanComps(rel)
		if rel == "" {
			rel = "."
		}
		patterns := DefaultSecretPatterns()
		if extra != "" {
			// Braces can hide a slash from the segment count: the
			// unbound list's own quirk, not the binding's.
			if strings.ContainsAny(extra, "{}\\") {
				return
			}
			if _, err := compilePattern(extra); err != nil {
				return
			}
			patterns = append(patterns, extra)
		}
		base, err := NewDenylist(patterns)
		if err != nil {
			return
		}
		var except []string
		if exception != "" {
			except = []string{exception}
		}
		d, err := base.ForRoot(root, except)
		if err != nil {
			return // an invalid exception is refused, never half-applied
		}
		if d.Root() != root {
			t.Skip("the root exists here and resolves elsewhere")
		}
		_, got := d.Match(rel)
		if want := refMatch(patterns, root, except, rel); got != want {
			t.Fatalf("ForRoot(%q, %q).Match(%q) = %v, want %v (patterns +%q)", root, except, rel, got, want, extra)
		}
		// An exception never re-opens a path outside its globs.
		plain, _ := base.ForRoot(root, nil)
		_, secret := plain.Match(rel)
		named := rel != "." && exception != "" && doublestar.MatchUnvalidated(exception, rel)
		if secret && !got && !named {
			t.Fatalf("exception %q re-opened %q under %q, which it does not name", exception, rel, root)
		}
	})
}

// cleanComps turns fuzz input into clean slash-separated components: no
// empty, ".", ".." or NUL component.
func cleanComps(s string) string {
	var out []string
	for _, c := range strings.Split(s, "/") {
		if c == "" || c == "." || c == ".." || strings.IndexByte(c, 0) >= 0 {
			continue
		}
		out = append(out, c)
	}
	return strings.Join(out, "/")
}

// A person's exception opens its fixtures to commands too, scripts
// included (a script is checked word by word, not as one path), and
// nothing beside them.
func TestCheckArgvWithAnException(t *testing.T) {
	fx := newFixture(t)
	if err := os.MkdirAll(filepath.Join(fx.dir, "test"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"test/key.pem", "test/.env", "keys/other.pem"} {
		if err := os.WriteFile(filepath.Join(fx.dir, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := (*Denylist)(nil).ForRoot(fx.dir, []string{"test/*.pem"})
	if err != nil {
		t.Fatal(err)
	}
	root, err := NewRoot(fx.dir, d)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		argv []string
		want errs.Code
	}{
		{[]string{"cat", "test/key.pem"}, ""},
		{[]string{"sh", "-c", "test -s test/key.pem && cat test/key.pem"}, ""},
		{[]string{"sh", "-c", "cat test/*"}, ""}, // the shell's * skips .env
		{[]string{"bash", "-c", "sh -c 'openssl pkey -in test/key.pem'"}, ""},
		{[]string{"cat", "test/.env"}, errs.SecretPathDenied},
		{[]string{"sh", "-c", "cat test/key.pem test/.env"}, errs.SecretPathDenied},
		{[]string{"sh", "-c", "cat keys/other.pem"}, errs.SecretPathDenied},
		{[]string{"sh", "-c", "cat test/.e*"}, errs.SecretPathDenied},
		{[]string{"grep", "-r", "x", "test/*"}, errs.SecretPathDenied}, // a program's glob matches .env
		{[]string{"sh", "-c", "cat .env"}, errs.SecretPathDenied},
	}
	for _, tt := range tests {
		if got := codeOf(root.CheckArgv(tt.argv)); got != tt.want {
			t.Errorf("CheckArgv(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}
