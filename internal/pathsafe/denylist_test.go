package pathsafe

import (
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestDefaultDenylist(t *testing.T) {
	d, err := NewDenylist(DefaultSecretPatterns())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel  string
		want string // matching pattern, "" for none
	}{
		{".env", ".env"},
		{"a/b/.env", ".env"},
		{".ENV", ".env"},
		{".env.local", ".env.*"},
		{"app/.env.production", ".env.*"},
		{".envrc", ".envrc"},
		{"environment.go", ""},
		{"env", ""},
		{"src/.environment", ""},
		{"cert.pem", "*.pem"},
		{"x/CERT.Pem", "*.pem"},
		{"tls/server.key", "*.key"},
		{"keyboard.go", ""},
		{"a.p12", "*.p12"},
		{"a.pfx", "*.pfx"},
		{"id_rsa", "id_rsa*"},
		{"home/id_rsa.pub", "id_rsa*"},
		{"id_dsa", "id_dsa*"},
		{"id_ecdsa", "id_ecdsa*"},
		{"ID_ED25519", "id_ed25519*"},
		{".ssh", ".ssh/**"},
		{".ssh/config", ".ssh/**"},
		{"home/u/.ssh/authorized_keys", ".ssh/**"},
		{"a/.ssh/b/c", ".ssh/**"},
		{"ssh/config", ""},
		{"x.ssh/config", ""},
		{".aws/credentials", ".aws/credentials"},
		{"u/.aws/config", ".aws/config"},
		{".aws/other", ""},
		{"aws/config", ""},
		{".netrc", ".netrc"},
		{"_netrc", "_netrc"},
		{".git-credentials", ".git-credentials"},
		{"pkg/.npmrc", ".npmrc"},
		{".pypirc", ".pypirc"},
		{".docker/config.json", ".docker/config.json"},
		{"docker/config.json", ""},
		{"kubeconfig", "kubeconfig"},
		{".kube/config", ".kube/config"},
		{"prod.kubeconfig", "*.kubeconfig"},
		{"credentials.json", "credentials.json"},
		{"secrets.yaml", "secrets.yaml"},
		{"deploy/Secrets.YML", "secrets.yml"},
		{"release.keystore", "*.keystore"},
		{"a.jks", "*.jks"},
		{".htpasswd", ".htpasswd"},
		{"infra/terraform.tfstate", "terraform.tfstate*"},
		{"terraform.tfstate.backup", "terraform.tfstate*"},
		{"main.go", ""},
		{"README.md", ""},
		{".gitignore", ""},
		{"./.env", ".env"},
		{"a//b/.env", ".env"},
		{"", ""},
		{".", ""},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			got, ok := d.Match(tt.rel)
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("Match(%q): got (%q, %v), want (%q, %v)", tt.rel, got, ok, tt.want, tt.want != "")
			}
		})
	}
}

func TestCustomDenylist(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		rel      string
		want     string
	}{
		{"anchored matches whole path", []string{"/config/*.yaml"}, "config/a.yaml", "/config/*.yaml"},
		{"anchored ignores suffix", []string{"/config/*.yaml"}, "x/config/a.yaml", ""},
		{"anchored star stays at the top", []string{"/*.pem"}, "a/b.pem", ""},
		{"anchored star at the top", []string{"/*.pem"}, "b.pem", "/*.pem"},
		{"anchored prefix stays at the top", []string{"/id_*"}, "a/id_x", ""},
		{"unanchored suffix", []string{"config/*.yaml"}, "x/config/a.yaml", "config/*.yaml"},
		{"trailing slash dir", []string{"vault/"}, "a/vault/b", "vault/"},
		{"trailing slash dir itself", []string{"vault/"}, "vault", "vault/"},
		{"doublestar middle", []string{"priv/**/*.txt"}, "x/priv/a/b/c.txt", "priv/**/*.txt"},
		{"brace", []string{"*.{crt,cer}"}, "a/b.CER", "*.{crt,cer}"},
		{"class", []string{"key[0-9]"}, "key7", "key[0-9]"},
		{"question", []string{"?.secret"}, "dir/a.secret", "?.secret"},
		{"first match wins", []string{"*.txt", "a.*"}, "a.txt", "*.txt"},
		{"upper pattern", []string{"SECRET.TXT"}, "secret.txt", "SECRET.TXT"},
		{"empty list", nil, ".env", ""},
		{"three segments", []string{"a/b/c"}, "x/a/b/c", "a/b/c"},
		{"three segments short path", []string{"a/b/c"}, "b/c", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDenylist(tt.patterns)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := d.Match(tt.rel)
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("Match(%q): got (%q, %v), want (%q, %v)", tt.rel, got, ok, tt.want, tt.want != "")
			}
		})
	}
}

func TestNewDenylistInvalid(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
	}{
		{"empty", ""},
		{"blank", "  "},
		{"slash only", "/"},
		{"unclosed class", "a[b"},
		{"unclosed brace", "{a,b"},
		{"nul", "a\x00b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewDenylist([]string{"*.ok", tt.pattern})
			e := errs.From(err)
			if e == nil || e.Code != errs.InvalidArgument {
				t.Fatalf("NewDenylist(%q): got %v, want %s", tt.pattern, err, errs.InvalidArgument)
			}
			if got := e.Details["pattern"]; got != tt.pattern {
				t.Errorf("pattern detail: got %q, want %q", got, tt.pattern)
			}
		})
	}
}

func TestNilDenylistIsDefault(t *testing.T) {
	var d *Denylist
	if got, ok := d.Match("a/.env"); !ok || got != ".env" {
		t.Errorf("nil Match: got (%q, %v), want (%q, true)", got, ok, ".env")
	}
	if got, want := len(d.Patterns()), len(DefaultSecretPatterns()); got != want {
		t.Errorf("nil Patterns: got %d, want %d", got, want)
	}
}

func TestDefaultSecretPatternsIsCopy(t *testing.T) {
	p := DefaultSecretPatterns()
	p[0] = "changed"
	if DefaultSecretPatterns()[0] == "changed" {
		t.Errorf("DefaultSecretPatterns: got shared slice, want a copy")
	}
}
