package redact

import (
	"encoding/base64"
	"strings"
)

// builtinRules returns the rules of Default, most specific first: on a tie
// the first rule names the redaction.
func builtinRules() []Rule {
	return []Rule{
		{
			ID:          "pem-private-key",
			Description: "PEM private key block (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP, PKCS#8), BEGIN through END line",
			keywords:    []string{"-----begin"},
			match:       matchPEM,
			pem:         true,
		},
		{
			ID:          "pem-private-key-base64",
			Description: "base64-encoded PEM private key, as in kubeconfig client-key-data or Kubernetes secrets",
			keywords:    []string{pemBase64Prefix},
			match:       matchPEMBase64,
		},
		tokenRule("aws-access-key-id", "AWS access key id (AKIA, ASIA, ABIA, ACCA + 16 upper-case alphanumerics)",
			token{prefixes: []string{"AKIA", "ASIA", "ABIA", "ACCA"}, body: &upperAlnum, min: 16, max: 16}),
		{
			ID:          "aws-secret-access-key",
			Description: "value of an aws_secret_access_key assignment (40 base64 characters)",
			keywords:    []string{"secret"},
			match:       matchAWSSecret,
		},
		tokenRule("github-token", "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_ + 36 alphanumerics)",
			token{prefixes: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, body: &alnum, min: 36}),
		tokenRule("github-fine-grained-pat", "GitHub fine-grained personal access token (github_pat_...)",
			token{prefixes: []string{"github_pat_"}, body: &alnumUnderscore, min: 22}),
		tokenRule("gitlab-token", "GitLab personal access token (glpat- + 20 characters)",
			token{prefixes: []string{"glpat-"}, body: &urlSafe, min: 20}),
		tokenRule("slack-token", "Slack token (xoxb-, xoxa-, xoxp-, xoxr-, xoxs-, xapp-)",
			token{prefixes: []string{"xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-", "xapp-"}, body: &alnumDash, min: 10}),
		tokenRule("slack-webhook", "Slack incoming webhook path (hooks.slack.com/services/...)",
			token{prefixes: []string{"hooks.slack.com/services/"}, body: &webhookPath, min: 20, keepPrefix: true}),
		tokenRule("anthropic-api-key", "Anthropic API key (sk-ant-...)",
			token{prefixes: []string{"sk-ant-"}, body: &urlSafe, min: 20}),
		tokenRule("openai-api-key", "OpenAI API key (sk-..., sk-proj-...)",
			token{prefixes: []string{"sk-"}, body: &urlSafe, min: 20, needDigit: true}),
		tokenRule("stripe-api-key", "Stripe secret or restricted key (sk_live_, rk_live_, sk_test_, rk_test_)",
			token{prefixes: []string{"sk_live_", "rk_live_", "sk_test_", "rk_test_"}, body: &alnum, min: 10}),
		tokenRule("google-api-key", "Google API key (AIza + 35 characters)",
			token{prefixes: []string{"AIza"}, body: &urlSafe, min: 35}),
		tokenRule("npm-token", "npm access token (npm_ + 36 alphanumerics)",
			token{prefixes: []string{"npm_"}, body: &alnum, min: 36}),
		{
			ID:          "jwt",
			Description: "JSON Web Token (base64url segments separated by dots, the first starting eyJ), except a fixture of a test file",
			keywords:    []string{"eyj"},
			match:       matchJWT,
		},
		{
			ID:          "authorization-header",
			Description: "credentials of an HTTP Authorization or Proxy-Authorization header (the scheme is kept)",
			keywords:    []string{"authorization"},
			match:       matchAuthorization,
		},
		{
			ID:          "cookie-header",
			Description: "value of an HTTP Cookie or Set-Cookie header line",
			keywords:    []string{"cookie"},
			match:       matchCookie,
		},
		{
			ID:          "url-credentials",
			Description: "password in a URL's user information (scheme://user:password@host; scheme, user and host are kept)",
			keywords:    []string{"://"},
			match:       matchURLCredentials,
		},
		{
			ID:          "secret-assignment",
			Description: "value assigned to a key naming a secret (password, secret, token, api_key, ...) in key=value, key: value, \"key\": \"value\" or --key value form",
			keywords:    assignmentKeywords(),
			match:       matchAssignment,
		},
	}
}

// Byte classes of token bodies.
var (
	alnum, upperAlnum, alnumUnderscore, alnumDash, urlSafe, webhookPath, base64url [256]bool
)

func init() {
	set := func(t *[256]bool, extra string, lower bool) {
		for c := '0'; c <= '9'; c++ {
			t[c] = true
		}
		for c := 'A'; c <= 'Z'; c++ {
			t[c] = true
			if lower {
				t[c+'a'-'A'] = true
			}
		}
		for i := 0; i < len(extra); i++ {
			t[extra[i]] = true
		}
	}
	set(&alnum, "", true)
	set(&upperAlnum, "", false)
	set(&alnumUnderscore, "_", true)
	set(&alnumDash, "-", true)
	set(&urlSafe, "_-", true)
	set(&webhookPath, "_-/+", true)
	set(&base64url, "_-", true)
}

// token describes a secret recognised by a fixed prefix and a run of body
// bytes.
type token struct {
	prefixes   []string // case-sensitive
	body       *[256]bool
	min, max   int  // body length bounds (max 0: no upper bound)
	keepPrefix bool // redact the body only
	needDigit  bool // the body must hold a digit (filters kebab-case words)
}

// maxTokenBody bounds how far a token body is scanned.
const maxTokenBody = 4096

func tokenRule(id, desc string, t token) Rule {
	kws := make([]string, len(t.prefixes))
	for i, p := range t.prefixes {
		kws[i] = lowerASCII(p)
	}
	return Rule{ID: id, Description: desc, keywords: kws, match: t.match}
}

func (t token) match(c *scanCtx, at, kwLen int) (int, int, bool) {
	s := c.s
	if at > 0 && isAlnum(s[at-1]) {
		return 0, 0, false
	}
	p := s[at : at+kwLen]
	found := false
	for _, pre := range t.prefixes {
		if p == pre {
			found = true
			break
		}
	}
	if !found {
		return 0, 0, false
	}
	b := at + kwLen
	e := b
	digit := false
	for e < len(s) && e-b < maxTokenBody && t.body[s[e]] {
		digit = digit || isDigit(s[e])
		e++
	}
	n := e - b
	if n < t.min || (t.max > 0 && n > t.max) || (t.needDigit && !digit) {
		return 0, 0, false
	}
	if t.keepPrefix {
		return b, e, true
	}
	return at, e, true
}

// matchJWT matches a JSON Web Token: "eyJ" and base64url, then at least two
// more dot-separated base64url segments (the last may be empty, as in
// unsigned tokens).
func matchJWT(c *scanCtx, at, _ int) (int, int, bool) {
	s := c.s
	if !strings.HasPrefix(s[at:], "eyJ") || (at > 0 && (base64url[s[at-1]] || s[at-1] == '.')) {
		return 0, 0, false
	}
	seg := func(i int) int {
		j := i
		for j < len(s) && j-i < 1<<16 && base64url[s[j]] {
			j++
		}
		return j
	}
	e := seg(at)
	if e-at < 8 || e >= len(s) || s[e] != '.' {
		return 0, 0, false
	}
	e2 := seg(e + 1)
	if e2-(e+1) < 4 || e2 >= len(s) || s[e2] != '.' {
		return 0, 0, false
	}
	end := seg(e2 + 1)
	// JWE tokens have five segments.
	for k := 0; k < 2 && end+1 < len(s) && s[end] == '.' && base64url[s[end+1]]; k++ {
		end = seg(end + 1)
	}
	if c.inTestFile(at) {
		return 0, 0, false // a fixture of a test file
	}
	return at, end, true
}

// httpSchemes are Authorization schemes kept in front of the redaction when
// the header value is nothing but the scheme.
var httpSchemes = []string{"bearer", "basic", "token", "digest", "negotiate", "ntlm", "bot", "apikey"}

// matchAuthorization matches the credentials of an Authorization or
// Proxy-Authorization header, in header, JSON, YAML or assignment form. A
// leading scheme word (Bearer, Basic, token, ...) is kept.
func matchAuthorization(c *scanCtx, at, kwLen int) (int, int, bool) {
	s := c.s
	if at > 0 && (isAlnum(s[at-1]) || s[at-1] == '_') {
		return 0, 0, false
	}
	p := at + kwLen
	if p < len(s) && (s[p] == '"' || s[p] == '\'') {
		p++
	}
	p = skipBlanks(s, p)
	if p >= len(s) || (s[p] != ':' && s[p] != '=') {
		return 0, 0, false
	}
	if p+1 < len(s) && (s[p+1] == s[p] || (s[p] == ':' && s[p+1] == '=')) {
		return 0, 0, false // "::", "==", ":="
	}
	sep := p
	p = skipBlanks(s, p+1)
	var q byte
	if p < len(s) && (s[p] == '"' || s[p] == '\'' || s[p] == '`') {
		q = s[p]
		p++
	}
	e, lim := p, min(len(s), p+maxValueLen)
	for e < lim && s[e] != '\n' && s[e] != q && (q != 0 || (s[e] != '"' && s[e] != '`' && s[e] != '\'')) {
		e++
	}
	for e > p && strings.IndexByte(" \t\r,;", s[e-1]) >= 0 {
		e--
	}
	if e <= p {
		return 0, 0, false
	}
	v := s[p:e]
	if q == 0 && (looksLikeCode(v, false) || (s[sep] == '=' && isWordy(v))) {
		return 0, 0, false // code: account.Authorization = ExternalAuthorization{}
	}
	if sp := strings.IndexAny(v, " \t"); sp > 0 && isSchemeWord(v[:sp]) {
		p = skipBlanks(s, p+sp)
	} else if sp < 0 && isKnownScheme(v) {
		return 0, 0, false // the scheme alone, no credentials
	}
	if p >= e || isPlaceholder(s[p:e]) || isFormatVerb(s[p:e]) {
		return 0, 0, false
	}
	if cred := s[p:e]; len(cred) < 8 && !looksRandom(cred) {
		return 0, 0, false // a word, not a credential: "Bearer ToKen"
	}
	return p, e, true
}

func isSchemeWord(w string) bool {
	if len(w) > 32 || !isLetter(w[0]) {
		return false
	}
	for i := 0; i < len(w); i++ {
		if !isAlnum(w[i]) && w[i] != '-' {
			return false
		}
	}
	return true
}

func isKnownScheme(w string) bool {
	for _, k := range httpSchemes {
		if strings.EqualFold(w, k) {
			return true
		}
	}
	return false
}

// matchURLCredentials matches the password of scheme://user:password@host.
func matchURLCredentials(c *scanCtx, at, _ int) (int, int, bool) {
	s := c.s
	j := at
	for j > 0 && at-j < 32 && (isAlnum(s[j-1]) || s[j-1] == '+' || s[j-1] == '.' || s[j-1] == '-') {
		j--
	}
	for j < at && !isLetter(s[j]) {
		j++ // a scheme starts with a letter
	}
	if j == at {
		return 0, 0, false
	}
	b := at + 3
	e := b
	lastAt := -1
	for e < len(s) && e-b < 1024 {
		ch := s[e]
		if ch <= ' ' || strings.IndexByte("/?#\"'<>`\\", ch) >= 0 {
			break
		}
		if ch == '@' {
			lastAt = e
		}
		e++
	}
	if lastAt < 0 || lastAt+1 >= e {
		return 0, 0, false // no user information, or no host
	}
	colon := strings.IndexByte(s[b:lastAt], ':')
	if colon < 0 {
		return 0, 0, false
	}
	lo := b + colon + 1
	if lo >= lastAt || isPlaceholder(s[lo:lastAt]) || isFormatVerb(s[lo:lastAt]) || isDummyPassword(s[lo:lastAt]) {
		return 0, 0, false
	}
	if pw := s[lo:lastAt]; len(pw) < 4 && strings.IndexFunc(pw, func(r rune) bool { return !isLetterRune(r) }) < 0 {
		return 0, 0, false // a:b@, foo:bar@: an example, not a password
	}
	return lo, lastAt, true
}

func isLetterRune(r rune) bool { return r < 0x80 && isLetter(byte(r)) }

// isDummyPassword reports whether pw is the word that stands for a password
// in examples: user:pass@host, user:password@host.
func isDummyPassword(pw string) bool {
	for _, w := range []string{"pass", "password", "passwd", "pwd", "pw", "secret"} {
		if strings.EqualFold(pw, w) {
			return true
		}
	}
	return false
}

func skipBlanks(s string, p int) int {
	for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
		p++
	}
	return p
}

// pemBase64Prefix is "-----BEGIN" in base64.
const pemBase64Prefix = "LS0tLS1CRUdJTi"

// matchPEMBase64 matches a base64 run that decodes to a PEM private key.
func matchPEMBase64(c *scanCtx, at, kwLen int) (int, int, bool) {
	s := c.s
	if !strings.HasPrefix(s[at:], pemBase64Prefix) || (at > 0 && isBase64Byte(s[at-1])) {
		return 0, 0, false
	}
	e := at
	for e < len(s) && e-at < 1<<20 && isBase64Byte(s[e]) {
		e++
	}
	head := s[at : at+min(e-at, 96)&^3]
	var buf [72]byte
	n, _ := base64.StdEncoding.Decode(buf[:], []byte(head))
	if !strings.Contains(string(buf[:n]), "PRIVATE KEY") {
		return 0, 0, false
	}
	return at, e, true
}

// matchCookie matches the value of a Cookie or Set-Cookie header: the
// header name must start its line (after blanks, a quote, or curl -v's
// "> " and "< ").
func matchCookie(c *scanCtx, at, kwLen int) (int, int, bool) {
	s := c.s
	ls := at
	if ls >= 4 && equalFoldLower(s[ls-4:ls], "set-") {
		ls -= 4
	}
	for ls > 0 && s[ls-1] != '\n' {
		if strings.IndexByte(" \t\"'<>", s[ls-1]) < 0 {
			// Not the line start: the end of a grep-like path:line: prefix?
			if cs, _, ok := contentStart(s, ls); !ok || cs != ls {
				return 0, 0, false
			}
			break
		}
		ls--
	}
	p := skipBlanks(s, at+kwLen)
	if p >= len(s) || s[p] != ':' {
		return 0, 0, false
	}
	p = skipBlanks(s, p+1)
	e, lim := p, min(len(s), p+maxValueLen)
	for e < lim && s[e] != '\n' && s[e] != '"' && s[e] != '\'' {
		e++
	}
	e = trimBlankRight(s, p, e)
	if e-p < 4 || isPlaceholder(s[p:e]) || looksLikeCode(s[p:e], false) || !hasCookieSecret(s[p:e]) {
		return 0, 0, false
	}
	return p, e, true
}

// hasCookieSecret reports whether a Cookie or Set-Cookie value holds a
// value that could be a session secret: one that looks random, not
// "theme=dark" or a test's "nom=NOM".
func hasCookieSecret(v string) bool {
	for part := range strings.SplitSeq(v, ";") {
		part = strings.TrimSpace(part)
		if i := strings.IndexByte(part, '='); i >= 0 {
			part = part[i+1:]
		}
		part = strings.TrimSuffix(strings.TrimSuffix(strings.Trim(part, `"`), `\n`), `\r`)
		if looksRandom(part) {
			return true
		}
	}
	return false
}
