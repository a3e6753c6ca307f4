package redact

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	lowerUpperDigits = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	upperDigits      = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
)

// fake returns n deterministic pseudo-random bytes of alphabet. Test secrets
// are assembled at run time so that secret scanners do not flag this file.
func fake(seed uint64, n int, alphabet string) string {
	var b strings.Builder
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b.WriteByte(alphabet[x%uint64(len(alphabet))])
	}
	return b.String()
}

func mark(id string) string { return fmt.Sprintf(Marker, id) }

// Fake secrets of every kind, one per built-in token rule.
var (
	ghToken     = "gh" + "p_" + fake(1, 36, lowerUpperDigits)
	ghoToken    = "gh" + "o_" + fake(2, 36, lowerUpperDigits)
	ghsToken    = "gh" + "s_" + fake(3, 36, lowerUpperDigits)
	ghPAT       = "github" + "_pat_" + fake(4, 22, lowerUpperDigits) + "_" + fake(5, 59, lowerUpperDigits)
	glToken     = "gl" + "pat-" + fake(6, 20, lowerUpperDigits)
	slackBot    = "xo" + "xb-" + "1234567890-1234567890123-" + fake(7, 24, lowerUpperDigits)
	slackHook   = "T0" + fake(8, 8, upperDigits) + "/B0" + fake(9, 8, upperDigits) + "/" + fake(10, 24, lowerUpperDigits)
	antKey      = "sk" + "-ant-api03-" + fake(11, 93, lowerUpperDigits+"-_")
	openAIKey   = "sk" + "-" + fake(12, 20, lowerUpperDigits) + "T3BlbkFJ" + fake(13, 20, lowerUpperDigits)
	openAIProj  = "sk" + "-proj-" + fake(14, 120, lowerUpperDigits+"-_")
	stripeKey   = "sk" + "_live_" + fake(15, 24, lowerUpperDigits)
	stripeRK    = "rk" + "_live_" + fake(16, 24, lowerUpperDigits)
	googleKey   = "AI" + "za" + fake(17, 35, lowerUpperDigits+"-_")
	npmToken    = "np" + "m_" + fake(18, 36, lowerUpperDigits)
	awsKeyID    = "AK" + "IA" + fake(19, 16, upperDigits)
	awsASIA     = "AS" + "IA" + fake(20, 16, upperDigits)
	awsSecret   = fake(21, 20, lowerUpperDigits) + "/" + fake(22, 19, lowerUpperDigits)
	jwtToken    = "ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ." + fake(23, 43, lowerUpperDigits+"-_")
	basicCreds  = "dXNlcjpwYXNzd29yZA=="
	pemBodyRSA  = pemLines(24, 5)
	pemRSA      = "-----BEGIN RSA PRIVATE" + " KEY-----\n" + pemBodyRSA + "-----END RSA PRIVATE KEY-----"
	pemOpenSSH  = "-----BEGIN OPENSSH PRIVATE" + " KEY-----\n" + pemLines(25, 3) + "-----END OPENSSH PRIVATE KEY-----"
	pemEC       = "-----BEGIN EC PRIVATE" + " KEY-----\n" + pemLines(26, 2) + "-----END EC PRIVATE KEY-----"
	pemDSA      = "-----BEGIN DSA PRIVATE" + " KEY-----\n" + pemLines(27, 2) + "-----END DSA PRIVATE KEY-----"
	pemPKCS8    = "-----BEGIN PRIVATE" + " KEY-----\n" + pemLines(28, 2) + "-----END PRIVATE KEY-----"
	pemEncryptd = "-----BEGIN ENCRYPTED PRIVATE" + " KEY-----\n" + pemLines(29, 2) + "-----END ENCRYPTED PRIVATE KEY-----"
	pemLegacy   = "-----BEGIN RSA PRIVATE" + " KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123456789ABCDEF0123456789ABCDEF\n\n" + pemLines(30, 2) + "-----END RSA PRIVATE KEY-----"
)

// pemLines returns n lines of 64 base64 characters, each ending in "\n".
func pemLines(seed uint64, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(fake(seed*100+uint64(i), 64, lowerUpperDigits+"+/"))
		b.WriteByte('\n')
	}
	return b.String()
}

// allSecrets are whitespace-delimited secrets that must always be redacted.
func allSecrets() []string {
	return []string{ghToken, ghoToken, ghsToken, ghPAT, glToken, slackBot, antKey, openAIKey,
		openAIProj, stripeKey, stripeRK, googleKey, npmToken, awsKeyID, awsASIA, jwtToken}
}

// cleanText returns about size bytes of secret-free text typical of what
// harnessd redacts: Go source, git log and diff output, build logs, JSON
// logs and prose, including words such as token and password.
func cleanText(size int) string {
	lines := []string{
		"package lexer",
		"",
		"import (",
		"\t\"fmt\"",
		"\t\"github.com/harnessd/harnessd/contract/errs\"",
		")",
		"// Next returns the next token of the input, or EOF.",
		"func (l *Lexer) Next() (Token, error) {",
		"\ttoken := l.scan()",
		"\tif token.Kind == EOF {",
		"\t\treturn token, nil",
		"\t}",
		"\tfor i := 0; i < len(l.buf); i++ {",
		"\t\tswitch c := l.buf[i]; c {",
		"\t\tcase '\\n':",
		"\t\t\tl.line++",
		"\t\t}",
		"\t}",
		"\treturn Token{Kind: Ident, Text: string(l.buf[start:l.pos])}, nil",
		"}",
		"func (t *Token) String() string { return fmt.Sprintf(\"%s(%q)\", t.Kind, t.Text) }",
		"commit 3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345",
		"Author: Jane Developer <jane@example.com>",
		"Date:   Tue Mar 4 10:21:07 2025 +0100",
		"    lexer: handle CRLF line endings in the tokenizer",
		"diff --git a/lexer/lexer.go b/lexer/lexer.go",
		"index 1a2b3c4..5d6e7f8 100644",
		"--- a/lexer/lexer.go",
		"+++ b/lexer/lexer.go",
		"@@ -42,7 +42,9 @@ func (l *Lexer) scan() Token {",
		"-\tif c == '\\n' {",
		"+\tif c == '\\n' || c == '\\r' {",
		"ok  \tgithub.com/harnessd/harnessd/harness/route\t0.412s",
		"--- FAIL: TestScan/crlf (0.00s)",
		"    lexer_test.go:88: got 3 tokens, want 4",
		`{"level":"info","ts":1741080067.12,"msg":"lease granted","lease_id":42,"ttl":"30s","key":"workspace:/repo"}`,
		"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  go1.26.linux-amd64.tar.gz",
		"request 123e4567-e89b-12d3-a456-426614174000 finished in 12ms",
		"The tokenizer splits the input; passwordless login is handled by the secretary service.",
		"Users authenticate with a password; tokens are rotated daily.",
		"  --token string   API token (default from $GITHUB_TOKEN)",
		"https://pkg.go.dev/golang.org/x/tools/go/packages#Config",
		"drwxr-xr-x  5 dev dev  4096 Mar  4 10:21 internal",
		"BenchmarkScan-2   \t  183201\t      6523 ns/op\t    2048 B/op\t      3 allocs/op",
	}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(lines[i%len(lines)])
		b.WriteByte('\n')
	}
	return b.String()[:size]
}
