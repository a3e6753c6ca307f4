package pathsafe

import "testing"

func BenchmarkResolveRead(b *testing.B) {
	fx := newFixture(b)
	for _, p := range []string{"a.txt", "sub/b.go", "sub/deep/c.txt"} {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := fx.root.ResolveRead(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDenylistMatch(b *testing.B) {
	d, err := NewDenylist(DefaultSecretPatterns())
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"main.go", "internal/server/handler.go", "a/b/c/d/e/f/g.txt", "config/.env.local", "Src/Upper/Case.GO"} {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d.Match(p)
			}
		})
	}
}

func BenchmarkCheckArgv(b *testing.B) {
	fx := newFixture(b)
	argv := []string{"grep", "-rn", "--color=never", "foo|bar", "sub", "./a.txt"}
	b.ReportAllocs()
	for b.Loop() {
		if err := fx.root.CheckArgv(argv); err != nil {
			b.Fatal(err)
		}
	}
}
