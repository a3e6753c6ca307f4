package checkid

import (
	"slices"
	"strings"
	"testing"
)

func TestScope(t *testing.T) {
	good := ScopeFacts{CommonDir: "/r/.git", Clean: true, PrivateTmp: true,
		Env: Env{Tools: map[string]string{"go": "go version go1.26.0 linux/amd64"}}}
	with := func(f func(*ScopeFacts)) ScopeFacts {
		s := good
		s.Env.Tools = map[string]string{}
		for k, v := range good.Env.Tools {
			s.Env.Tools[k] = v
		}
		f(&s)
		return s
	}
	tests := []struct {
		name   string
		facts  ScopeFacts
		shared bool
		why    []string // substrings, one per reason, in order
	}{
		{"clean, bounded, probed: shared", good, true, nil},
		{"an unknown program fingerprinted by its stamp: shared", with(func(s *ScopeFacts) { s.Env.Tools = map[string]string{"./run.sh": "relative:./run.sh"} }), true, nil},
		{"no toolchain at all: shared", with(func(s *ScopeFacts) { s.Env.Tools = nil }), true, nil},
		{"dirty checkout", with(func(s *ScopeFacts) { s.Clean = false }), false, []string{"changes beyond HEAD"}},
		{"workspace writes", with(func(s *ScopeFacts) { s.Writes = true }), false, []string{"workspace_write"}},
		{"network", with(func(s *ScopeFacts) { s.Network = true }), false, []string{"declares network"}},
		{"shared temp", with(func(s *ScopeFacts) { s.PrivateTmp = false }), false, []string{"temp directory"}},
		{"failed probe", with(func(s *ScopeFacts) { s.Env.Tools["go"] = Unavailable + "go: exit status 1" }), false,
			[]string{"fingerprint failed: go: go: exit status 1"}},
		{"failed probes are all named, sorted", with(func(s *ScopeFacts) {
			s.Env.Tools = map[string]string{"rustc": Unavailable + "rustc not found in PATH", "cargo": Unavailable + "cargo did not answer within 5s"}
		}), false, []string{"cargo: cargo did not answer within 5s; rustc: rustc not found in PATH"}},
		{"no common dir", with(func(s *ScopeFacts) { s.CommonDir = "" }), false, []string{"common dir"}},
		{"every condition fails: every reason", ScopeFacts{Network: true, Writes: true,
			Env: Env{Tools: map[string]string{"node": Unavailable + "node not found in PATH"}}}, false,
			[]string{"common dir", "changes beyond HEAD", "workspace_write", "declares network", "temp directory", "node not found"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shared, why := Scope(tc.facts)
			if shared != tc.shared || len(why) != len(tc.why) {
				t.Fatalf("got shared=%v why=%q, want shared=%v and %d reasons", shared, why, tc.shared, len(tc.why))
			}
			for i, w := range tc.why {
				if !strings.Contains(why[i], w) {
					t.Errorf("reason %d %q, want it to say %q", i, why[i], w)
				}
			}
			if shared && !slices.Equal(why, nil) {
				t.Errorf("shared with reasons %q", why)
			}
		})
	}
}
