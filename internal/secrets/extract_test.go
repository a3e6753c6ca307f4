package secrets

import (
	"slices"
	"strings"
	"testing"
)

func values(rel, content string) []string {
	vs := newValueSet()
	extract(rel, content, vs)
	return vs.sorted()
}

func TestExtract(t *testing.T) {
	pemBody := []string{fake(1, 64), fake(2, 64), fake(3, 20) + "=="}
	pemBlock := "-----BEGIN RSA PRIVATE" + " KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00FF\n\n" +
		strings.Join(pemBody, "\n") + "\n-----END RSA PRIVATE KEY-----\n"
	tests := []struct {
		name, rel, in string
		want, not     []string
	}{
		{name: "plain", in: "KEY=value123\n", want: []string{"value123"}},
		{name: "export", in: "export TOKEN=abcdef\n", want: []string{"abcdef"}},
		{name: "spaces around =", in: "aws_secret_access_key = ini-secret-1\n", want: []string{"ini-secret-1"}},
		{name: "crlf", in: "K=crlf-value\r\nL=next-value\r\n", want: []string{"crlf-value", "next-value"}, not: []string{"crlf-value\r"}},
		{name: "trailing comment", in: "UNQ=unquoted-val # the comment\n", want: []string{"unquoted-val"}, not: []string{"unquoted-val # the comment"}},
		{name: "hash inside", in: "H=abc#def123\n", want: []string{"abc#def123"}},
		{name: "double quoted", in: `P="quoted value # kept" # comment` + "\n", want: []string{"quoted value # kept"}},
		{name: "single quoted", in: "S='single-quoted'\n", want: []string{"single-quoted"}},
		{name: "escapes", in: `E="line1\nline2-\"q\""` + "\n", want: []string{`line1\nline2-\"q\"`, "line1\nline2-\"q\""}},
		{name: "multi-line quoted", in: "M=\"first-line\nsecond-line\"\nN=after-value\n",
			want: []string{"first-line\nsecond-line", "first-line", "second-line", "after-value"}},
		{name: "short dropped", in: "A=abc\nB=abcde\n", not: []string{"abc", "abcde"}},
		{name: "empty", in: "A=\nB=''\n"},
		{name: "commented out", in: "# OLD_TOKEN=old-token-value\n#prose: not a value here\n", want: []string{"old-token-value"}, not: []string{"not a value here"}},
		{name: "yaml", in: "db:\n  password: yaml-value-1\n  user: 'quoted-yaml'\n  - name: listed-value\n",
			want: []string{"yaml-value-1", "quoted-yaml", "listed-value"}},
		{name: "yaml url", in: "url: https://host/path?a=b\n", want: []string{"https://host/path?a=b"}},
		{name: "npmrc", in: "//registry.npmjs.org/:_authToken=npm-token-xyz\n", want: []string{"npm-token-xyz"}},
		{name: "json", in: `{"client_secret": "json-secret-1", "nested": {"k":"json-secret-2"}, "n": 123456, "list": ["not-a-value"]}`,
			want: []string{"json-secret-1", "json-secret-2"}, not: []string{"123456", "not-a-value", "client_secret"}},
		{name: "json escaped pem", in: `{"private_key": "` + strings.ReplaceAll(pemBlock, "\n", `\n`) + `"}`,
			want: append([]string{strings.Join(pemBody, "")}, pemBody[:2]...)},
		{name: "pem", in: "before\n" + pemBlock + "after-line-value-xyz\n",
			want: append([]string{strings.Join(pemBody, ""), "after-line-value-xyz"}, pemBody[:2]...), not: []string{"DEK-Info"}},
		{name: "pem crlf", in: strings.ReplaceAll(pemBlock, "\n", "\r\n"), want: append([]string{strings.Join(pemBody, "")}, pemBody...)},
		{name: "netrc", rel: ".netrc", in: "machine api.example.com login me password netrc-pass-1\n", want: []string{"netrc-pass-1"}},
		{name: "url password", in: "DATABASE_URL=postgres://user:url-pass-1@db:5432/x\n",
			want: []string{"url-pass-1", "postgres://user:url-pass-1@db:5432/x"}},
		{name: "url encoded password", rel: ".git-credentials", in: "https://me:p%40ss-word@github.com\n", want: []string{"p%40ss-word", "p@ss-word"}},
		{name: "bare token", rel: "api.key", in: fake(4, 40) + "\n", want: []string{fake(4, 40)}},
		{name: "pgpass", rel: "home/.pgpass", in: "localhost:5432:db:user:pg-password-1\n", want: []string{"pg-password-1"}},
		{name: "htpasswd", rel: ".htpasswd", in: "admin:$apr1$abcdefgh$ijklmnop\n", want: []string{"$apr1$abcdefgh$ijklmnop"}},
		{name: "binary", in: "\x00\xff\xfe=\x01\x02", not: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := tt.rel
			if rel == "" {
				rel = ".env"
			}
			got := values(rel, tt.in)
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("missing %q in %q", w, got)
				}
			}
			for _, n := range tt.not {
				if slices.Contains(got, n) {
					t.Errorf("unexpected %q in %q", n, got)
				}
			}
			for _, v := range got {
				if len(v) < 6 {
					t.Errorf("short value %q", v)
				}
			}
		})
	}
}

func TestExtractBounded(t *testing.T) {
	var b strings.Builder
	for i := range maxValues + 100 {
		b.WriteString("K=value-")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(fake(uint64(i), 8))
		b.WriteByte('\n')
	}
	vs := newValueSet()
	extract(".env", b.String(), vs)
	if len(vs.m) != maxValues || !vs.full {
		t.Errorf("%d values, full %v; want %d, true", len(vs.m), vs.full, maxValues)
	}
	// Pathological inputs stay linear: many quotes, unterminated strings.
	extract(".env", strings.Repeat(`"a":"`, 50000), newValueSet())
	extract(".env", "K=\""+strings.Repeat("x\n", 100000), newValueSet())
	extract(".env", strings.Repeat("K=\"a\n", 50000), newValueSet())
}

func TestExtractBareBase64(t *testing.T) {
	tok := fake(5, 30) + "=="
	if got := values("token.key", tok+"\n"); !slices.Equal(got, []string{tok}) {
		t.Errorf("values = %q, want the padded token", got)
	}
	if got := values(".env", "LONG_NAME_KEY=abcdefgh\n"); !slices.Equal(got, []string{"abcdefgh"}) {
		t.Errorf("values = %q, want the value only", got)
	}
}
