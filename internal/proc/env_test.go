package proc

import (
	"slices"
	"strings"
	"testing"
)

func TestIsSecretName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"GITHUB_TOKEN", true},
		{"github_token", true},
		{"GH_TOKEN", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"AWS_ACCESS_KEY_ID", true},
		{"DB_PASSWORD", true},
		{"MYSQL_PASSWD", true},
		{"OPENAI_API_KEY", true},
		{"StripeApiKey", true},
		{"SSH_PRIVATE_KEY", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"AWS_SESSION_KEY", true},
		{"PATH", false},
		{"HOME", false},
		{"GOPATH", false},
		{"TERM", false},
		{"KEY", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsSecretName(tt.name); got != tt.want {
				t.Errorf("IsSecretName(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestScrubEnv(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		isSecret func(string) bool
		want     []string
	}{
		{name: "nil", env: nil, want: []string{}},
		{name: "builtin", env: []string{"PATH=/bin", "GITHUB_TOKEN=x", "HOME=/root", "npm_token=y"}, want: []string{"PATH=/bin", "HOME=/root"}},
		{name: "value is not checked", env: []string{"NOTE=my TOKEN is"}, want: []string{"NOTE=my TOKEN is"}},
		{name: "malformed dropped", env: []string{"NOEQUALS", "=x", "A=1"}, want: []string{"A=1"}},
		{name: "empty value kept", env: []string{"A="}, want: []string{"A="}},
		{name: "custom", env: []string{"A=1", "B=2"}, isSecret: func(n string) bool { return n == "B" }, want: []string{"A=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.env)
			got := ScrubEnv(in, tt.isSecret)
			if got == nil || !slices.Equal(got, tt.want) {
				t.Errorf("ScrubEnv(%q) = %#v, want %#v", tt.env, got, tt.want)
			}
			if !slices.Equal(in, tt.env) {
				t.Errorf("ScrubEnv modified its input: got %q, want %q", in, tt.env)
			}
		})
	}
}

func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"A=1", RunIDEnv + "=outer", "B=2", RunIDEnv + "=again"}, "abc")
	want := []string{"A=1", "B=2", RunIDEnv + "=abc"}
	if !slices.Equal(got, want) {
		t.Errorf("childEnv = %q, want %q", got, want)
	}
}

func TestEnvValue(t *testing.T) {
	env := []string{"PATH=/a", "X=1", "PATH=/b"}
	if v, ok := envValue(env, "PATH"); !ok || v != "/b" {
		t.Errorf("envValue(PATH) = %q, %v; want /b, true (the last one wins)", v, ok)
	}
	if v, ok := envValue(env, "NOPE"); ok {
		t.Errorf("envValue(NOPE) = %q, true; want false", v)
	}
}

func BenchmarkScrubEnv(b *testing.B) {
	env := make([]string, 0, 60)
	for i := range 60 {
		env = append(env, "VARIABLE_NUMBER_"+strings.Repeat("X", i%7)+"=value")
	}
	env = append(env, "GITHUB_TOKEN=x")
	b.ReportAllocs()
	for b.Loop() {
		ScrubEnv(env, nil)
	}
}

func FuzzIsSecretName(f *testing.F) {
	for _, s := range []string{"GITHUB_TOKEN", "path", "Api_Key", "ſecret", "", "TOKE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		want := false
		upper := strings.Map(func(r rune) rune {
			if 'a' <= r && r <= 'z' {
				return r - ('a' - 'A')
			}
			return r
		}, name)
		for _, w := range secretWords {
			want = want || strings.Contains(upper, w)
		}
		if got := IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	})
}
