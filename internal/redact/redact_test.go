package redact

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/harnessd/harnessd/contract/errs"
)

type fixture struct {
	name string
	in   string
	want string
}

// ruleFixtures has at least one positive fixture per built-in rule; the text
// around each secret must survive.
func ruleFixtures() []fixture {
	return []fixture{
		{"pem rsa", "key:\n" + pemRSA + "\nafter the key", "key:\n" + mark("pem-private-key") + "\nafter the key"},
		{"pem openssh", "before " + pemOpenSSH + " after", "before " + mark("pem-private-key") + " after"},
		{"pem ec", pemEC + "\n", mark("pem-private-key") + "\n"},
		{"pem dsa", pemDSA, mark("pem-private-key")},
		{"pem pkcs8", "x\n" + pemPKCS8 + "\ny", "x\n" + mark("pem-private-key") + "\ny"},
		{"pem encrypted", pemEncryptd, mark("pem-private-key")},
		{"pem legacy headers", pemLegacy + "\nok", mark("pem-private-key") + "\nok"},
		{"pem in diff", "+++ b/id_rsa\n@@ -0,0 +1,7 @@\n+" + strings.ReplaceAll(pemRSA, "\n", "\n+") + "\n context",
			"+++ b/id_rsa\n@@ -0,0 +1,7 @@\n+" + mark("pem-private-key") + "\n context"},
		{"pem one-line json", `{"private_key": "` + strings.ReplaceAll(pemPKCS8, "\n", `\n`) + `\n", "client_email": "a@b.c"}`,
			`{"private_key": "` + mark("pem-private-key") + `", "client_email": "a@b.c"}`},
		{"pem truncated output", "cat key\n" + "-----BEGIN RSA PRIVATE" + " KEY-----\n" + pemLines(31, 3) + "...\n[output truncated]",
			"cat key\n" + mark("pem-private-key") + "\n...\n[output truncated]"},
		{"aws access key id", "aws_access_key_id = " + awsKeyID + " # default", "aws_access_key_id = " + mark("aws-access-key-id") + " # default"},
		{"aws sts key id", "id=" + awsASIA + ",", "id=" + mark("aws-access-key-id") + ","},
		{"aws secret ini", "aws_secret_access_key = " + awsSecret + "\nregion = eu-west-1", "aws_secret_access_key = " + mark("aws-secret-access-key") + "\nregion = eu-west-1"},
		{"aws secret env", "export AWS_SECRET_ACCESS_KEY=" + awsSecret + " && aws s3 ls", "export AWS_SECRET_ACCESS_KEY=" + mark("aws-secret-access-key") + " && aws s3 ls"},
		{"aws secret json", `{"SecretAccessKey": "` + awsSecret + `", "Expiration": "soon"}`, `{"SecretAccessKey": "` + mark("aws-secret-access-key") + `", "Expiration": "soon"}`},
		{"github ghp", "token " + ghToken + " expires", "token " + mark("github-token") + " expires"},
		{"github gho in url", "https://x-access-token:" + ghsToken + "@github.com/o/r.git", "https://x-access-token:" + mark("github-token") + "@github.com/o/r.git"},
		{"github gho", "(" + ghoToken + ")", "(" + mark("github-token") + ")"},
		{"github fine-grained", "GH=" + ghPAT + ";", "GH=" + mark("github-fine-grained-pat") + ";"},
		{"gitlab", "use " + glToken + " now", "use " + mark("gitlab-token") + " now"},
		{"slack token", "slack " + slackBot + " ok", "slack " + mark("slack-token") + " ok"},
		{"slack webhook", "POST https://hooks.slack.com/services/" + slackHook + " 200", "POST https://hooks.slack.com/services/" + mark("slack-webhook") + " 200"},
		{"anthropic", "key=" + antKey + "\n", "key=" + mark("anthropic-api-key") + "\n"},
		{"openai legacy", "openai " + openAIKey + ".", "openai " + mark("openai-api-key") + "."},
		{"openai project", "'" + openAIProj + "'", "'" + mark("openai-api-key") + "'"},
		{"stripe sk", "stripe " + stripeKey + " x", "stripe " + mark("stripe-api-key") + " x"},
		{"stripe rk", stripeRK, mark("stripe-api-key")},
		{"google", "maps?key=" + googleKey + "&q=1", "maps?key=" + mark("google-api-key") + "&q=1"},
		{"npm", "//registry.npmjs.org/:_authToken=" + npmToken + "\n", "//registry.npmjs.org/:_authToken=" + mark("npm-token") + "\n"},
		{"jwt", "id_token " + jwtToken + " end", "id_token " + mark("jwt") + " end"},
		{"jwt unsigned", "t=eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0. rest", "t=" + mark("jwt") + " rest"},
		{"authorization bearer", "Authorization: Bearer abc123def456\r\nHost: x", "Authorization: Bearer " + mark("authorization-header") + "\r\nHost: x"},
		{"authorization basic", "> authorization: Basic " + basicCreds, "> authorization: Basic " + mark("authorization-header")},
		{"authorization token", `curl -H "Authorization: token abcdef0123456789" https://api`, `curl -H "Authorization: token ` + mark("authorization-header") + `" https://api`},
		{"authorization json", `{"Authorization": "Bearer s3cr3t-value", "Accept": "*/*"}`, `{"Authorization": "Bearer ` + mark("authorization-header") + `", "Accept": "*/*"}`},
		{"authorization raw", "AUTHORIZATION: 0123456789abcdef", "AUTHORIZATION: " + mark("authorization-header")},
		{"proxy authorization", "Proxy-Authorization: Basic " + basicCreds + "\r\n\r\n", "Proxy-Authorization: Basic " + mark("authorization-header") + "\r\n\r\n"},
		{"authorization bearer jwt", "Authorization: Bearer " + jwtToken, "Authorization: Bearer " + mark("jwt")},
		{"url password", "remote: postgres://admin:hunter2@db.internal:5432/app ok", "remote: postgres://admin:" + mark("url-credentials") + "@db.internal:5432/app ok"},
		{"url password with at", "redis://u:p@ss@cache/0", "redis://u:" + mark("url-credentials") + "@cache/0"},
		{"url password https", "fetch https://bob:s3cret@example.com/x?y=1", "fetch https://bob:" + mark("url-credentials") + "@example.com/x?y=1"},
		{"assign env", "DB_PASSWORD=hunter22 ./run", "DB_PASSWORD=" + mark("secret-assignment") + " ./run"},
		{"assign yaml", "  password: correct horse battery staple # prod", "  password: " + mark("secret-assignment") + " # prod"},
		{"assign json", `{"client_secret": "abcd1234", "client_id": "app"}`, `{"client_secret": "` + mark("secret-assignment") + `", "client_id": "app"}`},
		{"assign go literal", `password := "hunter22"`, `password := "` + mark("secret-assignment") + `"`},
		{"assign python annotated", `API_KEY: str = "abcd-efgh-1234"`, `API_KEY: str = "` + mark("secret-assignment") + `"`},
		{"assign camel", `const apiKey = 'zz9-plural-z-alpha';`, `const apiKey = '` + mark("secret-assignment") + `';`},
		{"assign header", "X-Auth-Token: 0a1b2c3d4e5f", "X-Auth-Token: " + mark("secret-assignment")},
		{"assign flag", "mysql --password hunter22 -h db", "mysql --password " + mark("secret-assignment") + " -h db"},
		{"assign flag equals", "login --token=abcd1234 --verbose", "login --token=" + mark("secret-assignment") + " --verbose"},
		{"assign query", "GET /cb?access_token=abcdef123&state=x", "GET /cb?access_token=" + mark("secret-assignment") + "&state=x"},
		{"assign ruby hash", `:secret_key => "f00dfeed"`, `:secret_key => "` + mark("secret-assignment") + `"`},
		{"assign odbc", "Server=db;Uid=sa;Pwd=Pa55word!;", "Server=db;Uid=sa;Pwd=" + mark("secret-assignment") + ";"},
		{"assign weak auth", "auth=dXNlcjpwYXNz1", "auth=" + mark("secret-assignment")},
		{"assign private key path-free", `private_key: "abcd+efgh/ijkl=="`, `private_key: "` + mark("secret-assignment") + `"`},
		{"assign netrc", "machine github.com login bob password hunter22\n", "machine github.com login bob password " + mark("secret-assignment") + "\n"},
		{"assign azure", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + fake(80, 86, lowerUpperDigits) + "==;EndpointSuffix=core.windows.net",
			"DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + mark("secret-assignment") + ";EndpointSuffix=core.windows.net"},
		{"cookie", "> Cookie: session=abcdef0123; theme=dark\r\n> Accept: */*", "> Cookie: " + mark("cookie-header") + "\r\n> Accept: */*"},
		{"set-cookie", "< Set-Cookie: sid=s3cr3tvalue; Path=/; HttpOnly", "< Set-Cookie: " + mark("cookie-header")},
		{"pem base64", "    client-key-data: " + b64(pemEC) + "\n  name: x", "    client-key-data: " + mark("pem-private-key-base64") + "\n  name: x"},
		{"assign credentials", "credentials=user1:pw1234", "credentials=" + mark("secret-assignment")},
	}
}

func TestRuleFixtures(t *testing.T) {
	r := Default()
	for _, tt := range ruleFixtures() {
		t.Run(tt.name, func(t *testing.T) {
			got, n := r.String(tt.in)
			if got != tt.want {
				t.Fatalf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			wantN := strings.Count(tt.want, markerPrefix)
			if n != wantN {
				t.Errorf("String(%q) n = %d, want %d", tt.in, n, wantN)
			}
			gotB, nb := r.Bytes([]byte(tt.in))
			if string(gotB) != tt.want || nb != n {
				t.Errorf("Bytes(%q) = %q, %d, want %q, %d", tt.in, gotB, nb, tt.want, n)
			}
		})
	}
}

// TestEveryRuleHasFixture keeps ruleFixtures in step with the rule set.
func TestEveryRuleHasFixture(t *testing.T) {
	seen := map[string]bool{}
	for _, tt := range ruleFixtures() {
		seen[tt.want] = true
	}
	ids := map[string]bool{}
	for _, rule := range Default().Rules() {
		if ids[rule.ID] {
			t.Errorf("duplicate rule id %q", rule.ID)
		}
		ids[rule.ID] = true
		if rule.Description == "" || len(rule.Keywords()) == 0 {
			t.Errorf("rule %q: description %q, keywords %v, want both set", rule.ID, rule.Description, rule.Keywords())
		}
		found := false
		for want := range seen {
			if strings.Contains(want, mark(rule.ID)) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("rule %q has no positive fixture", rule.ID)
		}
	}
}

// falsePositives must come back unchanged.
var falsePositives = []struct{ name, in string }{
	{"git sha", "commit 3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345 (HEAD -> main)"},
	{"git sha upper", "AB3F2A9C1B7D4E5F60718293A4B5C6D7E8F90123"},
	{"sha256", "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
	{"sri digest", "integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="},
	{"uuid", "id 123e4567-e89b-12d3-a456-426614174000 done"},
	{"go import path", `import "github.com/harnessd/harnessd/internal/redact"`},
	{"go module line", "github.com/golang-jwt/jwt/v5 v5.2.1 h1:OuVbFODueb089Lh128TAcimifWaLhJwVflnrgM17wHk="},
	{"prose tokenizer", "The tokenizer is passwordless; ask the secretary about the secrets."},
	{"prose password", "Enter your password and press return."},
	{"token method", "func (t *Token) String() string {"},
	{"token short var", "token := lexer.Next()"},
	{"token assign call", "token = lexer.Next()"},
	{"token field path", "Password: cfg.Password,"},
	{"struct field ident", "Token: token,"},
	{"struct tag", "Password string `json:\"password,omitempty\"`"},
	{"ts type", "  password: string;"},
	{"python call", "password = getpass.getpass()"},
	{"env reference", `PASSWORD="${DB_PASSWORD}"`},
	{"shell reference", "Authorization: Bearer $GITHUB_TOKEN"},
	{"template", "password: {{ .Values.db.password }}"},
	{"masked", "password: ********"},
	{"empty yaml", "password:\nuser: bob"},
	{"empty json", `{"password": "", "token": null}`},
	{"short value", "pwd=abc"},
	{"token count", "max_tokens: 4096, token_count: 1234567"},
	{"token type", `"token_type": "Bearer"`},
	{"auth url", "auth_url: https://auth.example.com/oauth2/token"},
	{"author", "Author: Jane Developer <jane@example.com>"},
	{"pwd env", "PWD=/work/main\nOLDPWD=/home/dev"},
	{"askpass", "GIT_ASKPASS=/usr/lib/git-core/git-gui--askpass"},
	{"header set", `req.Header.Set("Authorization", "Bearer "+tok)`},
	{"authorization prose", "Authorization is checked by the policy package."},
	{"authorization scheme only", "Authorization: Bearer"},
	{"png data uri", "src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\""},
	{"base64 json no dots", "eyJhbGciOiJIUzI1NiJ9eyJzdWIiOiIxIn0"},
	{"url no password", "https://user@example.com/path and ssh://git@github.com:22/o/r"},
	{"url port", "http://localhost:8080/debug/pprof"},
	{"url empty password", "ftp://anonymous:@ftp.example.com/"},
	{"pem public key", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----"},
	{"pem certificate", "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUW\n-----END CERTIFICATE-----"},
	{"pem header constant", "const header = \"-----BEGIN RSA PRIVATE KEY-----\"\nconst footer = \"-----END RSA PRIVATE KEY-----\""},
	{"kebab sk", "git checkout task-sk-fix-the-broken-build-script-now"},
	{"sk words", "see sk-learn-compatible-estimators-are-here"},
	{"asia prose", "ASIA and Europe; AKIA is short"},
	{"npm config", "npm_config_cache=/home/dev/.npm"},
	{"go doc flags", "  --token string   API token (default from $GITHUB_TOKEN)"},
	{"go compare", `if password == "" { return errMissing }`},
	{"regexp match", `[[ $token =~ ^gh ]]`},
	{"rust path", "let t = Token::new(kind);"},
	{"marker", "password: [REDACTED:secret-assignment]"},
	{"cookie prose", "The session cookie: it is set on login."},
	{"cookie code", `http.SetCookie(w, &http.Cookie{Name: "sid"})`},
	{"base64 certificate", "    certificate-authority-data: " + b64("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")},
}

func TestFalsePositives(t *testing.T) {
	r := Default()
	for _, tt := range falsePositives {
		t.Run(tt.name, func(t *testing.T) {
			got, n := r.String(tt.in)
			if got != tt.in || n != 0 {
				t.Errorf("String(%q) = %q, %d, want unchanged, 0", tt.in, got, n)
			}
		})
	}
}

func TestIdempotent(t *testing.T) {
	r := Default()
	var all strings.Builder
	for _, tt := range ruleFixtures() {
		all.WriteString(tt.in + "\n")
	}
	inputs := []string{all.String(), cleanText(4096) + all.String()}
	for _, tt := range ruleFixtures() {
		inputs = append(inputs, tt.in)
	}
	for _, in := range inputs {
		once, _ := r.String(in)
		twice, n := r.String(once)
		if twice != once || n != 0 {
			t.Errorf("second String(%q) = %q, %d, want %q, 0", once, twice, n, once)
		}
	}
}

func TestOverlapsMerge(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  string
		wantN int
	}{
		{"token in assignment", "export GITHUB_TOKEN=" + ghToken + " # ci", "export GITHUB_TOKEN=" + mark("github-token") + " # ci", 1},
		{"token in quoted value", `password = "x-` + ghToken + `"`, `password = "` + mark("secret-assignment") + `"`, 1},
		{"two secrets one line", "a " + awsKeyID + " b " + npmToken + " c", "a " + mark("aws-access-key-id") + " b " + mark("npm-token") + " c", 2},
		{"adjacent secrets", ghToken + "\n" + ghToken, mark("github-token") + "\n" + mark("github-token"), 2},
		{"pem swallows inner token", "-----BEGIN PRIVATE" + " KEY-----\n" + ghToken + "\n-----END PRIVATE KEY-----", mark("pem-private-key"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n := Default().String(tt.in)
			if got != tt.want || n != tt.wantN {
				t.Errorf("String(%q) = %q, %d, want %q, %d", tt.in, got, n, tt.want, tt.wantN)
			}
		})
	}
}

func TestBytesNoCopyWhenClean(t *testing.T) {
	b := []byte(cleanText(8192))
	out, n := Default().Bytes(b)
	if n != 0 || len(out) != len(b) || unsafe.SliceData(out) != unsafe.SliceData(b) {
		t.Fatalf("Bytes(clean) n = %d, same array = %v, want 0, true", n, unsafe.SliceData(out) == unsafe.SliceData(b))
	}
	dirty := []byte("token " + ghToken)
	orig := string(dirty)
	out, n = Default().Bytes(dirty)
	if n != 1 || string(dirty) != orig || string(out) != "token "+mark("github-token") {
		t.Fatalf("Bytes(dirty) = %q, %d (input now %q), want redacted copy and input unchanged", out, n, dirty)
	}
	if out, n := Default().Bytes(nil); out != nil || n != 0 {
		t.Fatalf("Bytes(nil) = %v, %d, want nil, 0", out, n)
	}
}

func TestStringReturnsInputWhenClean(t *testing.T) {
	in := cleanText(1 << 12)
	got, n := Default().String(in)
	if n != 0 || unsafe.StringData(got) != unsafe.StringData(in) {
		t.Fatalf("String(clean) n = %d, want 0 and the same string", n)
	}
	if got, n := Default().String(""); got != "" || n != 0 {
		t.Fatalf("String(\"\") = %q, %d, want \"\", 0", got, n)
	}
}

func TestCaseInsensitiveKeywords(t *testing.T) {
	tests := []struct{ in, want string }{
		{"PASSWORD=hunter22", "PASSWORD=" + mark("secret-assignment")},
		{"PassWord: hunter22", "PassWord: " + mark("secret-assignment")},
		{"AUTHORIZATION: Bearer abcdef12", "AUTHORIZATION: Bearer " + mark("authorization-header")},
		{"HTTPS://U:P4ss@HOST", "HTTPS://U:" + mark("url-credentials") + "@HOST"},
		// Case matters where the format fixes it.
		{"ghp_" + strings.ToUpper(ghToken[4:]), mark("github-token")},
		{"GHP_" + ghToken[4:], "GHP_" + ghToken[4:]},
		{"akia" + strings.ToLower(awsKeyID[4:]), "akia" + strings.ToLower(awsKeyID[4:])},
	}
	for _, tt := range tests {
		if got, _ := Default().String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNewRule(t *testing.T) {
	bad := []struct {
		name, id, pattern string
		keywords          []string
	}{
		{"empty id", "", `x+`, nil},
		{"id with bracket", "a]b", `x+`, nil},
		{"id with space", "a b", `x+`, nil},
		{"bad regexp", "r", `(`, nil},
		{"matches empty", "r", `x*`, []string{"xx"}},
		{"short keyword", "r", `xy`, []string{"x"}},
		{"keyword newline", "r", `xy`, []string{"x\ny"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRule(tt.id, "d", tt.pattern, tt.keywords...)
			if !errors.Is(err, errs.E(errs.InvalidArgument)) {
				t.Fatalf("NewRule(%q, %q, %v) error = %v, want %s", tt.id, tt.pattern, tt.keywords, err, errs.InvalidArgument)
			}
		})
	}

	ticket, err := NewRule("internal-ticket-key", "ticket service key", `tk_(?P<secret>[0-9a-f]{16})\b`, "tk_")
	if err != nil {
		t.Fatalf("NewRule: %v", err)
	}
	word, err := NewRule("word", "whole match, no keywords", `swordfish\d+`)
	if err != nil {
		t.Fatalf("NewRule: %v", err)
	}
	r := New(append([]Rule{ticket, word, {}}, Default().Rules()...))
	if got := len(r.Rules()); got != len(Default().Rules())+2 {
		t.Errorf("len(Rules()) = %d, want %d (zero rule skipped)", got, len(Default().Rules())+2)
	}
	in := "a TK_0123456789abcdef b tk_0123456789abcdef c swordfish42 d " + ghToken
	want := "a TK_0123456789abcdef b tk_" + mark("internal-ticket-key") + " c " + mark("word") + " d " + mark("github-token")
	if got, n := r.String(in); got != want || n != 3 {
		t.Errorf("String(%q) = %q, %d, want %q, 3", in, got, n, want)
	}
	if kw := ticket.Keywords(); len(kw) != 1 || kw[0] != "tk_" {
		t.Errorf("Keywords() = %v, want [tk_]", kw)
	}
}

func TestNewEmpty(t *testing.T) {
	r := New(nil)
	in := "password=hunter22 " + ghToken
	if got, n := r.String(in); got != in || n != 0 {
		t.Errorf("New(nil).String(%q) = %q, %d, want unchanged", in, got, n)
	}
}

func TestRulesReturnsCopy(t *testing.T) {
	rules := Default().Rules()
	rules[0].ID = "changed"
	if Default().Rules()[0].ID == "changed" {
		t.Fatal("Rules() exposes the redactor's slice, want a copy")
	}
}

func TestLongLinesAndOddInput(t *testing.T) {
	r := Default()
	tests := []struct{ name, in string }{
		{"huge token run", "ghp_" + strings.Repeat("a", 100000)},
		{"many keywords", strings.Repeat("token password secret auth ", 20000)},
		{"many urls", strings.Repeat("a://b:c", 20000)},
		{"many placeholders", strings.Repeat("password: ${A} ", 40000)},
		{"many quotes", strings.Repeat(`token="x `, 40000)},
		{"many headers", strings.Repeat("Authorization: $X ", 40000)},
		{"many begins one line", strings.Repeat("-----BEGIN RSA PRIVATE KEY----- ", 20000)},
		{"nul bytes", "password=\x00\x00\x00\x00 \xff\xfe token: \x00"},
		{"invalid utf8", "password: \xc3\x28\xa0\xa1"},
		{"lone begin", "-----BEGIN RSA PRIVATE KEY-----"},
		{"begin begin", strings.Repeat("-----BEGIN RSA PRIVATE KEY-----\n", 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out, _ := r.String(tt.in)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("String took %v on %d bytes of %s, want linear time", d, len(tt.in), tt.name)
			}
			again, n := r.String(out)
			if again != out || n != 0 {
				t.Errorf("not idempotent on %s: second pass made %d redactions", tt.name, n)
			}
		})
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestConcurrentUse(t *testing.T) {
	in := dirtyText(1 << 14)
	want, wantN := Default().String(in)
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 20; i++ {
				if got, n := Default().String(in); got != want || n != wantN {
					t.Errorf("concurrent String: %d redactions, equal %v; want %d, true", n, got == want, wantN)
					return
				}
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}
