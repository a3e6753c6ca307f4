package redact

import (
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

// ruleCase is a table row of TestRulesOnRealText: text in the form a real
// file or tool prints it, and the secret in it (empty: none).
type ruleCase struct {
	text   string
	secret string
}

// generatedKey returns a real PKCS#8 private key and a self-signed
// certificate of it, in PEM, made at run time so that no key is committed.
func generatedKey(t *testing.T) (key, cert string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{"Acme Co"}},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<31, 0)}
	cder, err := x509.CreateCertificate(nil, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cder}))
}

// TestRulesOnRealText holds, for every built-in rule, secrets in the shape
// of the files and tool output they leak from (true examples: each must be
// redacted by that rule), and lines copied from real files that hold the
// rule's keyword but no secret (false examples: each must come back
// unchanged). The secrets are fakes assembled at run time (helpers_test.go)
// or keys generated at run time; the false examples name their source.
func TestRulesOnRealText(t *testing.T) {
	key, cert := generatedKey(t)
	keyBody := strings.Split(key, "\n")[1]
	fineGrained := ghPAT
	table := map[string]struct{ pos, neg []ruleCase }{
		"pem-private-key": {
			pos: []ruleCase{
				{key, keyBody}, // cat id_ed25519
				{"+" + strings.ReplaceAll(strings.TrimSuffix(key, "\n"), "\n", "\n+"), keyBody}, // git show of a committed key
				{`  "private_key": "` + strings.ReplaceAll(key, "\n", `\n`) + `",`, keyBody},    // a GCP service-account JSON
			},
			neg: []ruleCase{
				{cert, ""}, // a certificate, as in go/src/crypto/tls/testdata/example-cert.pem
				{`	ErrKeyMustBePEMEncoded = errors.New("invalid key: Key must be a PEM encoded PKCS1 or PKCS8 key")`, ""}, // golang-jwt/jwt/v5 rsa_utils.go
				{"./test/sample_key.pub:1:-----BEGIN PUBLIC KEY-----", ""},                                                // grep -rn BEGIN in golang-jwt/jwt/v5
			},
		},
		"pem-private-key-base64": {
			pos: []ruleCase{{"    client-key-data: " + b64(key), b64(key)[20:60]}}, // kubeconfig
			neg: []ruleCase{{"    certificate-authority-data: " + b64(cert), ""}},  // kubeconfig
		},
		"aws-access-key-id": {
			pos: []ruleCase{{"[default]\naws_access_key_id = " + awsKeyID + "\n", awsKeyID}}, // ~/.aws/credentials
			neg: []ruleCase{
				{`	"CAPITAL LETTER ABKHASIAN HACYRILLIC SMALL LETTER ABKHASIAN HACYRILLIC CA" +`, ""}, // go/src/vendor/.../unicode tables
				{`	awsAccessKeyId = "AWS_ACCESS_KEY_ID"`, ""},                                         // golang.org/x/oauth2 google/externalaccount/aws.go
			},
		},
		"aws-secret-access-key": {
			pos: []ruleCase{{"aws_secret_access_key = " + awsSecret + "\n", awsSecret}}, // ~/.aws/credentials
			neg: []ruleCase{
				{"	SecretAccessKey string `json:\"SecretAccessKey\"`", ""}, // golang.org/x/oauth2 google/externalaccount/aws.go
				{`	awsSecretAccessKey = "AWS_SECRET_ACCESS_KEY"`, ""},      // same file
			},
		},
		"github-token": {
			pos: []ruleCase{{"https://x-access-token:" + ghsToken + "@github.com/o/r.git", ghsToken}, {"GITHUB_TOKEN=" + ghToken, ghToken}},                                                                                                     // .git-credentials, a CI env dump
			neg: []ruleCase{{`{"Time":"2026-12-06T03:27:46.839282981Z","Action":"output","Package":"github.com/golang-jwt/jwt/v5","Test":"TestParser_Parse/bearer_in_JWT","Output":"--- PASS: TestParser_Parse/bearer_in_JWT (0.00s)\n"}`, ""}}, // go test -json, golang-jwt
		},
		"github-fine-grained-pat": {
			pos: []ruleCase{{"GH_TOKEN=" + fineGrained + "\n", fineGrained}},
			neg: []ruleCase{{"./token.go:96:// [TokenOption]. Therefore, this function exists as a method of [Token], rather", ""}}, // grep -rn in golang-jwt/jwt/v5
		},
		"gitlab-token": {
			pos: []ruleCase{{"remote: https://oauth2:" + glToken + "@gitlab.com/g/p.git", glToken}},
			neg: []ruleCase{{"./creds_utils.go:58://	NKEYs are sensitive and should be treated as secrets.", ""}}, // grep -rn in nats-io/jwt/v2
		},
		"slack-token": {
			pos: []ruleCase{{"SLACK_BOT_TOKEN=" + slackBot, slackBot}},
			neg: []ruleCase{{`	    UnexpectedToken: 'Unexpected token %0',`, ""}}, // node_modules/@babel/parser (lib/index.js)
		},
		"slack-webhook": {
			pos: []ruleCase{{`curl -X POST -d '{"text":"hi"}' https://hooks.slack.com/services/` + slackHook, slackHook}},
			neg: []ruleCase{{"https://api.slack.com/messaging/webhooks", ""}},
		},
		"anthropic-api-key": {
			pos: []ruleCase{{"export ANTHROPIC_API_KEY=" + antKey, antKey}},
			neg: []ruleCase{{`	KeyAlgoSKED25519  = "sk-ssh-ed25519@openssh.com"`, ""}}, // golang.org/x/crypto ssh/keys.go
		},
		"openai-api-key": {
			pos: []ruleCase{{"OPENAI_API_KEY=" + openAIProj + "\n", openAIProj}},
			neg: []ruleCase{
				{`	KeyAlgoSKECDSA256 = "sk-ecdsa-sha2-nistp256@openssh.com"`, ""},                     // golang.org/x/crypto ssh/keys.go
				{`	"sk-Summerzäit\x12Pakistanesch Zäit\x18Pakistanesch Normalzäit\x18Pakista" +`, ""}, // go/src time zone tables
			},
		},
		"stripe-api-key": {
			pos: []ruleCase{{"STRIPE_SECRET_KEY=" + stripeKey, stripeKey}},
			neg: []ruleCase{{"./mock/mock.go:632:	return true, fmt.Sprintf(\"PASS:\\t%s(%s)\", call.Method, call.Arguments.String())", ""}}, // grep -rn in stretchr/testify
		},
		"google-api-key": {
			pos: []ruleCase{{"https://maps.googleapis.com/maps/api/geocode/json?address=x&key=" + googleKey, googleKey}},
			neg: []ruleCase{{"    --- PASS: TestAll/input=\"as\",chunkSize=2 (0.00s)", ""}}, // go test -v, cespare/xxhash
		},
		"npm-token": {
			pos: []ruleCase{{"//registry.npmjs.org/:_authToken=" + npmToken + "\n", npmToken}},                  // ~/.npmrc
			neg: []ruleCase{{"const {npm_config_user_agent, npm_lifecycle_event, npm_lifecycle_script} =", ""}}, // node_modules/@jest/reporters/build/SummaryReporter.js
		},
		"jwt": {
			pos: []ruleCase{
				{"$ curl -s https://idp/token\n{\"access_token\":\"" + jwtToken + "\",\"expires_in\":3599}", jwtToken[60:100]},
				{"./deploy/config.yaml:12:  token: " + jwtToken, jwtToken[60:100]}, // grep -rn of a file that is no test
			},
			neg: []ruleCase{
				{`./example_test.go:80:	tokenString := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJmb28iOiJiYXIiLCJpc3MiOiJ0ZXN0IiwiYXVkIjoic2luZ2xlIn0.QAWg1vGvnqRuCFTMcPkjZljXHh8U3L_qUjszOtQbeaA"`, ""},                             // grep -rn in golang-jwt/jwt/v5
				{`hmac_test.go:21:12:		"eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",`, ""}, // rg -n --column in golang-jwt/jwt/v5
				{`./creds_utils_test.go:67:	if !strings.Contains(s, "eyJ0") {`, ""}, // grep -rn in nats-io/jwt/v2
			},
		},
		"authorization-header": {
			pos: []ruleCase{
				{"> Authorization: Bearer " + basicCreds + "\r\n> Accept: */*", basicCreds}, // curl -v
				{`      - "Authorization: token ` + ghToken[4:24] + `"`, ghToken[4:24]},     // a CI config
			},
			neg: []ruleCase{
				{`./request/extractor_test.go:94:	request := makeExampleRequest("POST", "https://example.com/", map[string]string{"Authorization": "Bearer ToKen"}, nil)`, ""}, // golang-jwt/jwt/v5
				{`./request/request_test.go:27:		map[string]string{"Authorization": "Bearer %v"},`, ""},                                                                        // golang-jwt/jwt/v5
				{`./account_claims_test.go:772:	account.Authorization = ExternalAuthorization{}`, ""},                                                                          // nats-io/jwt/v2
			},
		},
		"cookie-header": {
			pos: []ruleCase{{"< Set-Cookie: sid=" + fake(40, 24, lowerUpperDigits) + "; Path=/; HttpOnly", fake(40, 24, lowerUpperDigits)}}, // curl -v
			neg: []ruleCase{
				{`		"Cookie: nom=NOM\n"+`, ""}, // go/src/net/http/readrequest_test.go
				{`			cookie: &Cookie{Name: "Cookie-1", Value: "v$1", Raw: "Cookie-1=v$1"},`, ""}, // go/src/net/http/cookie_test.go
			},
		},
		"url-credentials": {
			pos: []ruleCase{
				{"origin\thttps://bob:" + fake(41, 32, attackAlphabet) + "@git.example/x/y.git (fetch)", fake(41, 32, attackAlphabet)}, // git remote -v
				{"DATABASE_URL=postgres://app:" + fake(42, 20, lowerUpperDigits) + "@db:5432/app", fake(42, 20, lowerUpperDigits)},
			},
			neg: []ruleCase{
				{`./operator_claims_test.go:238:		{"http://user:pass@foo.bar.com/foo/bar", false},`, ""}, // nats-io/jwt/v2
				{`		{lastReq: "https://gopher:go@test.com", newReq: "http://link.com", want: ""},`, ""},  // go/src/net/http/client_test.go
			},
		},
		"secret-assignment": {
			pos: []ruleCase{
				{"DB_PASSWORD=" + fake(43, 32, attackAlphabet) + "\n", fake(43, 32, attackAlphabet)},     // .env
				{"  password: " + fake(44, 16, lowerUpperDigits) + "\n", fake(44, 16, lowerUpperDigits)}, // a YAML config
				{`	apiKey := "` + fake(45, 24, lowerUpperDigits) + `"`, fake(45, 24, lowerUpperDigits)},  // a key in code
				{"./.env:1:API_TOKEN=" + fake(46, 32, attackAlphabet), fake(46, 32, attackAlphabet)},     // grep -rn
			},
			neg: []ruleCase{
				{"--- PASS: TestBufferWriter (0.02s)", ""},                                                                                                    // go test -v
				{"./creds_utils.go:29:	\"regexp\"", ""},                                                                                                       // grep -rn in nats-io/jwt/v2: a key from a file name
				{"v1compat/creds_utils_test.go:2:3: * Copyright 2019-2020 The NATS Authors", ""},                                                              // rg -n --column
				{"./hmac_example_test.go:20:		hmacSampleSecret = keyData", ""},                                                                                // golang-jwt/jwt/v5
				{"./assert/assertions.go:764:	pass := !isEmpty(object)", ""},                                                                                  // stretchr/testify
				{`cmd/jwt/main.go:180:		fmt.Fprintf(os.Stderr, "Token: %v bytes", len(tokData))`, ""},                                                         // git grep -n in golang-jwt/jwt/v5
				{`./example_test.go:185:		fmt.Println("Couldn't handle this token:", err)`, ""},                                                               // golang-jwt/jwt/v5
				{`imports_test.go:154:45:	i := &Import{Subject: "foo", Account: akp, Token: "bad token", To: "bar", Type: Stream}`, ""},                       // nats-io/jwt/v2
				{`        "jsonwebtoken": "^9.0.3",`, ""},                                                                                                     // package.json
				{`      "integrity": "sha512-PRp66vJ865SSqOlgqS8hujT5U4AOgMfhrwYIuIhfKaoSCZcirrmASQr8CX7cUg+RMih+hgznrjp99o+W4pJLHQ==",`, ""},                 // package-lock.json
				{"test_token_bytes (test.test_secrets.Token_Tests.test_token_bytes) ... ok", ""},                                                              // python -m unittest -v
				{"../../root/.pyenv/versions/3.11.7/lib/python3.11/test/test_getpass.py::GetpassRawinputTest::test_uses_stderr_as_default PASSED [ 15%]", ""}, // pytest -v
			},
		},
	}
	r := Default()
	for _, rule := range r.Rules() {
		rows, ok := table[rule.ID]
		if !ok || len(rows.pos) == 0 || len(rows.neg) == 0 {
			t.Errorf("rule %q: no true and false examples in the table", rule.ID)
			continue
		}
		for i, c := range rows.pos {
			out, n := r.String(c.text)
			if n == 0 || !strings.Contains(out, mark(rule.ID)) || strings.Contains(out, c.secret) {
				t.Errorf("%s true #%d: String(%.200q) = %.200q, %d; want the secret redacted as %s", rule.ID, i, c.text, out, n, mark(rule.ID))
			}
		}
		for i, c := range rows.neg {
			if out, n := r.String(c.text); n != 0 {
				t.Errorf("%s false #%d: String(%.200q) = %.200q, %d; want it unchanged", rule.ID, i, c.text, out, n)
			}
		}
	}
}
