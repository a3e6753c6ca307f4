package policy

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestRootsAndSecretExceptions(t *testing.T) {
	p, err := Parse([]byte(`version: 1
roots: [/home/u/src/, "/srv//work"]
secret_exceptions:
  - repo: /home/u/src/jwt/
    paths: ["test/*.pem", "testdata/**/*.key"]
    justification: test fixtures
`), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Roots(); len(got) != 2 || got[0] != "/home/u/src" || got[1] != "/srv/work" {
		t.Fatalf("roots = %q", got)
	}
	ex := p.SecretExceptions()
	if len(ex) != 1 || ex[0].Repo != "/home/u/src/jwt" || len(ex[0].Paths) != 2 || ex[0].Justification != "test fixtures" {
		t.Fatalf("exceptions = %+v", ex)
	}
	q, _ := Parse([]byte("version: 1\nroots: [/home/u/src]\n"), "q.yaml")
	if p.Digest() == q.Digest() || q.Digest() == Default().Digest() {
		t.Fatal("roots and exceptions must change the digest")
	}
}

func TestRootsAndSecretExceptionsErrors(t *testing.T) {
	for _, tt := range []struct{ name, doc, want string }{
		{"relative root", "version: 1\nroots: [src]\n", "want an absolute path"},
		{"roots not a list", "version: 1\nroots: /src\n", "must be a list"},
		{"no repo", "version: 1\nsecret_exceptions: [{paths: [a.pem]}]\n", "repo is missing"},
		{"relative repo", "version: 1\nsecret_exceptions: [{repo: src, paths: [a.pem]}]\n", "absolute path of the work tree"},
		{"no paths", "version: 1\nsecret_exceptions: [{repo: /r}]\n", "paths is missing"},
		{"absolute glob", "version: 1\nsecret_exceptions: [{repo: /r, paths: [/etc/x.pem]}]\n", "relative to the work tree"},
		{"dotdot glob", "version: 1\nsecret_exceptions: [{repo: /r, paths: [../x.pem]}]\n", "relative to the work tree"},
		{"everything", "version: 1\nsecret_exceptions: [{repo: /r, paths: [\"**\"]}]\n", "every secret"},
		{"everything 2", "version: 1\nsecret_exceptions: [{repo: /r, paths: [\"**/*\"]}]\n", "every secret"},
		{"unknown field", "version: 1\nsecret_exceptions: [{repo: /r, paths: [a.pem], why: x}]\n", "why"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), "p.yaml")
			if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want INVALID_ARGUMENT with %q", err, tt.want)
			}
		})
	}
}
