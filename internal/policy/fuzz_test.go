package policy

import (
	"errors"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// FuzzParse checks that Parse never panics, that every error is a coded
// INVALID_ARGUMENT, and that an accepted policy evaluates its own examples
// without panicking and reproduces its digest.
func FuzzParse(f *testing.F) {
	seeds := []string{
		examplePolicy,
		"",
		"version: 1\n",
		"version: 1\nrules: []\n",
		"version: 2\n",
		"version: 1\nrules:\n  - {id: a, tools: [x], decision: deny}\n  - {id: a, tools: [y], decision: ask}\n",
		"version: 1\nrules:\n  - {id: r, argv_pattern: 'a(b', decision: deny}\n",
		"version: 1\nrules:\n  - {id: r, paths: ['a/[b'], decision: deny}\n",
		"version: 1\nrules:\n  - {id: r, decision: deny}\n",
		"version: 1\nrules:\n  - {id: r, tools: &t [x], decision: deny}\n  - {id: s, tools: *t, decision: deny}\n",
		"a: &a [*a]\n",
		"version: 1\n---\n",
		"version: 1\nrules:\n  - id: r\n    paths: ['**/*.lock']\n    decision: ask\n    examples: {match: [{tool: t, paths: [x.lock]}], not_match: [{tool: t, paths: [x]}]}\n",
		"\xef\xbb\xbfversion: 1\n",
		"version: !!int 1\nrules: !!seq []\n",
		"version: 0x1\n",
		"version: 1\nrules:\n  - {id: t, tools: [git_commit], require_verified: tests, examples: {match: [{tool: git_commit}]}}\n",
		"version: 1\nrules:\n  - {id: t, tools: [run_command], require_verified: tests}\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b, "fuzz.yaml", testVerified)
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.InvalidArgument {
				t.Fatalf("Parse error %v: got code %s, want %s", err, errs.CodeOf(err), errs.InvalidArgument)
			}
			return
		}
		for _, r := range p.Rules() {
			for _, a := range r.Examples.Match {
				if r.RequireVerified != "" {
					if len(p.Requirements(a)) == 0 {
						t.Fatalf("rule %s: match example %s matches no requirement", r.ID, a)
					}
					continue
				}
				if _, ok := p.Evaluate(a); !ok {
					t.Fatalf("rule %s: match example %s matches no rule", r.ID, a)
				}
			}
			for _, a := range r.Examples.NotMatch {
				p.Evaluate(a)
				p.Requirements(a)
			}
		}
		d, err := digestOf(p.Rules(), p.MaxRetries(), p.Roots(), p.SecretExceptions())
		if err != nil || d != p.Digest() {
			t.Fatalf("digest of Rules() = %s, %v; want %s", d, err, p.Digest())
		}
	})
}
