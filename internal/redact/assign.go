package redact

import "strings"

// assignmentKeywords are the prefilter keywords of secret-assignment: every
// key accepted by classifyKey contains one of them.
func assignmentKeywords() []string {
	kws := []string{"pass", "pwd", "secret", "token", "auth", "cred"}
	for _, a := range []string{"api", "access", "private", "signing", "encryption", "master", "account"} {
		for _, sep := range []string{"", "_", "-", "."} {
			kws = append(kws, a+sep+"key")
		}
	}
	return kws
}

// maxKeyLen bounds how far a key is scanned on each side of a keyword.
const maxKeyLen = 128

// maxValueLen bounds how far a value is scanned, so that many keywords on a
// huge line cost linear time. Longer values are redacted up to the bound.
const maxValueLen = 16 << 10

// assignment is a parsed "key <sep> value".
type assignment struct {
	klo, khi int    // key
	vlo, vhi int    // value, without quotes
	sep      string // ":", "=", ":=", "=>" or " " (--flag value)
	spaced   bool   // a blank stands between the key and the separator
	quoted   bool
	trailing bool // an unquoted value was followed by ',' or ';'
}

// parseAssignment parses the assignment whose key holds the keyword
// occurrence s[at:at+kwLen]. It accepts key=value, key: value, key := "v",
// key => v, "key": "value", 'key': 'value' and --key value, with the value
// quoted or not, and never looks past the end of the line.
//
// A file name followed by a line number is the path:line: prefix of grep-like
// output, not a key ("creds_utils.go:29:"); a quote after the separator that
// closes a string the key stands in is the end of a message, not a value
// (fmt.Println("invalid token:", err)).
//
// accept decides on the key before the value is looked at; oneWord makes an
// unquoted value end at the first blank. Values that are variable
// references or templates (${X}, $(cmd), {{ x }}) are rejected here, before
// they are scanned.
func parseAssignment(s string, at, kwLen int, accept func(key string) (ok, oneWord bool)) (a assignment, ok bool) {
	n := len(s)
	a.klo, a.khi = at, at+kwLen
	for a.klo > 0 && at-a.klo < maxKeyLen && isKeyByte(s[a.klo-1]) {
		a.klo--
	}
	for a.khi < n && a.khi-at < maxKeyLen && isKeyByte(s[a.khi]) {
		a.khi++
	}
	if (a.klo > 0 && isKeyByte(s[a.klo-1])) || (a.khi < n && isKeyByte(s[a.khi])) {
		return a, false // absurdly long key
	}
	if strings.HasSuffix(s[:a.klo], "://") || (a.klo > 0 && s[a.klo-1] == '@') {
		return a, false // URL user information: url-credentials decides
	}
	if a.khi+1 < n && s[a.khi] == ':' && isDigit(s[a.khi+1]) && isLineNumberAfter(s, a.khi) {
		return a, false // grep's path:line: prefix
	}
	if a.klo > 0 && s[a.klo-1] == '/' {
		return a, false // the end of a path: "/etc/passwd": no such file
	}
	p := a.khi
	quotedKey := false
	if p < n && (s[p] == '"' || s[p] == '\'') {
		quotedKey = a.klo > 0 && s[a.klo-1] == s[p]
		p++ // closing quote of a quoted key
	}
	p0 := p
	p = skipBlanks(s, p)
	a.spaced = p > p0
	switch {
	case strings.HasPrefix(s[p:], ":="):
		a.sep, p = ":=", p+2
	case strings.HasPrefix(s[p:], "=>"):
		a.sep, p = "=>", p+2
	case p < n && s[p] == '=':
		if p+1 < n && (s[p+1] == '=' || s[p+1] == '~') {
			return a, false // comparison or regexp match
		}
		a.sep, p = "=", p+1
	case p < n && s[p] == ':':
		if strings.HasPrefix(s[p:], "::") || strings.HasPrefix(s[p:], "://") {
			return a, false
		}
		a.sep, p = ":", p+1
	case p > p0 && p0 == a.khi && strings.HasPrefix(s[a.klo:], "--"):
		a.sep = " " // --password value
	case p > p0 && p0 == a.khi && isNetrcPassword(s, a.klo, a.khi):
		a.sep = " " // .netrc: machine h login u password value
	default:
		return a, false
	}
	p = skipBlanks(s, p)
	if p >= n || s[p] == '\n' || s[p] == '\r' {
		return a, false
	}
	ok, oneWord := accept(s[a.klo:a.khi])
	if !ok {
		return a, false
	}
	if v := s[p:]; hasPlaceholderPrefix(v) || (isQuote(v[0]) && hasPlaceholderPrefix(v[1:])) {
		return a, false
	}
	if isQuote(s[p]) && !quotedKey && insideString(s, a.klo, s[p]) {
		return a, false // the quote ends the string the key is part of
	}
	s = s[:min(n, p+maxValueLen)]
	n = len(s)
	if isQuote(s[p]) {
		return parseQuoted(s, a, p)
	}
	if a.sep == " " && s[p] == '-' {
		return a, false // the next flag, not a value
	}
	a.vlo = p
	e := p
	if oneWord || a.sep == " " {
		for e < n && !isSpace(s[e]) && !isQuote(s[e]) && s[e] != '&' && s[e] != ';' {
			e++
		}
	} else if a.sep == ":" {
		// YAML and header style: the value runs to the end of the line,
		// a quote, or a " #" comment.
		for e < n && s[e] != '\n' && s[e] != '"' && s[e] != '`' && !(s[e] == '#' && e > p && s[e-1] == ' ') {
			e++
		}
		// A type annotation followed by an assignment (Python, TypeScript):
		// "password: str = 'x'". The value is what follows '='.
		if eq := strings.IndexByte(s[p:e], '='); eq > 0 && s[p+eq-1] == ' ' && isTypeExpr(s[p:p+eq]) {
			a.sep = "="
			p = skipBlanks(s, p+eq+1)
			if p < n && isQuote(s[p]) {
				return parseQuoted(s, a, p)
			}
			a.vlo, e = p, p
			for e < n && !isSpace(s[e]) && !isQuote(s[e]) && s[e] != '&' && s[e] != ';' {
				e++
			}
		}
	} else {
		// Shell, query string and connection string style: the value ends at
		// a blank, a quote, '&' or ';'.
		for e < n && !isSpace(s[e]) && !isQuote(s[e]) && s[e] != '&' && s[e] != ';' {
			e++
		}
	}
	e = trimBlankRight(s, p, e)
	// The end of an inline map, list or call, and a trailing ',' or ';':
	// {"token": null}, [pass=false], f({ secret: 42 });
	for e > p {
		switch c := s[e-1]; {
		case (c == '}' && strings.IndexByte(s[p:e], '{') < 0) || (c == ']' && strings.IndexByte(s[p:e], '[') < 0) ||
			(c == ')' && strings.IndexByte(s[p:e], '(') < 0):
			e = trimBlankRight(s, p, e-1)
			continue
		case c == ',' || c == ';':
			e = trimBlankRight(s, p, e-1)
			a.trailing = true
			continue
		}
		break
	}
	a.vhi = e
	return a, a.vhi > a.vlo
}

// isNetrcPassword reports whether s[klo:khi] is the password token of a
// .netrc line ("machine host login user password secret").
func isNetrcPassword(s string, klo, khi int) bool {
	if !equalFoldLower(s[klo:khi], "password") && !equalFoldLower(s[klo:khi], "passwd") {
		return false
	}
	ls := klo
	for ls > 0 && klo-ls < 512 && s[ls-1] != '\n' {
		ls-- // bounded: hits on a huge line must not cost its length each
	}
	line := s[ls:klo]
	return strings.Contains(line, "login ") || strings.HasPrefix(strings.TrimSpace(line), "machine ") ||
		strings.HasPrefix(strings.TrimSpace(line), "default")
}

// parseQuoted parses a quoted value starting at the quote s[p]. An
// unterminated quote runs to the end of the line.
func parseQuoted(s string, a assignment, p int) (assignment, bool) {
	q := s[p]
	a.quoted = true
	a.vlo = p + 1
	e := a.vlo
	for e < len(s) && s[e] != '\n' && s[e] != q {
		if s[e] == '\\' && q != '`' && e+1 < len(s) && s[e+1] != '\n' {
			e++
		}
		e++
	}
	if e < len(s) && s[e] == q {
		a.vhi = e
	} else {
		a.vhi = trimBlankRight(s, a.vlo, e)
	}
	return a, a.vhi > a.vlo
}

// isTypeExpr reports whether t looks like a type annotation: "str ",
// "Optional[str] ", "string | null ".
func isTypeExpr(t string) bool {
	t = strings.TrimSpace(t)
	if t == "" || !(isLetter(t[0]) || t[0] == '_') {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !isAlnum(c) && strings.IndexByte("_.[]| ,", c) < 0 {
			return false
		}
	}
	return true
}

// matchAssignment matches the value assigned to a key that names a secret.
func matchAssignment(c *scanCtx, at, kwLen int) (int, int, bool) {
	s := c.s
	var strength int
	var pwd bool
	a, ok := parseAssignment(s, at, kwLen, func(key string) (bool, bool) {
		strength, pwd = classifyKey(key)
		// Weak keys and $PWD-like keys take one word.
		return strength != keyNone, strength == keyWeak || pwd
	})
	if !ok {
		return 0, 0, false
	}
	v := s[a.vlo:a.vhi]
	if a.sep == ":" && s[a.klo:a.khi] == "PASS" {
		return 0, 0, false // a test report: --- PASS: TestName (0.01s)
	}
	if (strength == keyWeak || a.sep == " ") && !looksRandom(v) {
		return 0, 0, false // a bare flag or weak key needs a credential-like word
	}
	if len(v) < 4 || (!a.quoted && isCodeValue(s, a, v)) || isPlaceholder(v) || isFormatVerb(v) ||
		isVersion(v) || isPhrase(v) || isURL(v) {
		return 0, 0, false // code, a template, a version, a message or a URL (url-credentials decides)
	}
	if pwd && (v[0] == '/' || v[0] == '~') {
		return 0, 0, false // $PWD, $OLDPWD: a directory
	}
	if strings.HasPrefix(v, "eyJ") && c.inTestFile(a.vlo) {
		return 0, 0, false // a JWT fixture of a test file: jwt decides
	}
	if q := `\"`; strings.HasPrefix(v, q) && isPlaceholder(strings.TrimSuffix(v[len(q):], q)) {
		return 0, 0, false // an escaped quote around a variable: "\"$token\""
	}
	if isWordy(v) && classifyWords(v) != keyNone {
		return 0, 0, false // a name: "X-Auth-Token", token=token, secret: SECRET_NAME
	}
	if strings.IndexByte(v, ' ') > 0 && mentionsSecret(v) {
		return 0, 0, false // a message about the secret: "Unexpected token %0"
	}
	return a.vlo, a.vhi, true
}

// matchAWSSecret matches the 40-character value of aws_secret_access_key
// (any spelling: AWS_SECRET_ACCESS_KEY, SecretAccessKey, aws-secret-access-key).
func matchAWSSecret(c *scanCtx, at, kwLen int) (int, int, bool) {
	s := c.s
	a, ok := parseAssignment(s, at, kwLen, func(key string) (bool, bool) {
		return containsFoldSquashed(key, "secretaccesskey"), true
	})
	if !ok {
		return 0, 0, false
	}
	if v := s[a.vlo:a.vhi]; len(v) != 40 || !isBase64(v) {
		return 0, 0, false
	}
	return a.vlo, a.vhi, true
}

// Strength of a key as a secret name.
const (
	keyNone = iota
	keyWeak // "auth", "pass": the value must look like a credential
	keyStrong
)

// classifyKey splits key into words (at punctuation and camelCase
// boundaries) and reports whether it names a secret. pwd reports a key
// whose secret word is "pwd", which as an environment variable is a
// directory. A field path names its last field (token.type is a type; a
// last field "key" or "value" is its parent's: jwt.secret.key); a weak word
// names the secret only at the end (passOnFailure is no password).
func classifyKey(key string) (strength int, pwd bool) {
	if i := strings.LastIndexByte(key, '.'); i >= 0 && i+1 < len(key) {
		last := key[i+1:]
		if (strings.EqualFold(last, "key") || strings.EqualFold(last, "value")) && i > 0 {
			if j := strings.LastIndexByte(key[:i], '.'); j >= 0 {
				key = key[j+1:]
			}
		} else {
			key = last
		}
	}
	return classifyKeyWords(key)
}

// mentionsSecret reports whether one of the blank-separated words of v
// names a secret ("Unexpected token %0", "invalid password").
func mentionsSecret(v string) bool {
	for w := range strings.FieldsSeq(v) {
		w = strings.Trim(w, ".,:;!?'\"()")
		if w != "" && wordStrength(w) != keyNone {
			return true
		}
	}
	return false
}

// classifyWords reports how strongly the words of v name a secret.
func classifyWords(v string) int {
	st, _ := classifyKeyWords(v)
	return st
}

func classifyKeyWords(key string) (strength int, pwd bool) {
	var prev, last string
	secretIsLast := false
	for i := 0; i < len(key); {
		w, next := nextWord(key, i)
		i = next
		if w == "" {
			continue
		}
		st := wordStrength(w)
		if strings.EqualFold(w, "key") && isKeyQualifier(prev) {
			st = keyStrong
		}
		if strings.EqualFold(prev, "pass") && (strings.EqualFold(w, "word") || strings.EqualFold(w, "phrase") || strings.EqualFold(w, "code")) {
			st = keyStrong // PassWord, Pass_Phrase
		}
		if st > strength {
			strength = st
		}
		if st != keyNone {
			pwd = pwd || strings.EqualFold(w, "pwd")
		}
		secretIsLast = st != keyNone
		prev, last = w, w
	}
	if strength != keyNone && !secretIsLast && (strength == keyWeak || isNonSecretSuffix(last)) {
		return keyNone, false // token_count, password_min_length, auth_url, passOnFailure
	}
	return strength, pwd
}

// nextWord returns the word of key starting at or after i and the index
// after it. Words are runs of letters and digits, split before an upper-case
// letter that follows a lower-case letter or digit ("apiKey") or that starts
// a capitalised word after an acronym ("APIKey").
func nextWord(key string, i int) (string, int) {
	for i < len(key) && !isAlnum(key[i]) {
		i++
	}
	start := i
	for i < len(key) && isAlnum(key[i]) {
		if i > start && isUpper(key[i]) {
			p := key[i-1]
			if !isUpper(p) || (i+1 < len(key) && key[i+1] >= 'a' && key[i+1] <= 'z') {
				break
			}
		}
		i++
	}
	return key[start:i], i
}

func wordStrength(w string) int {
	switch {
	case containsFold(w, "password") && !hasSuffixFold(w, "less"),
		containsFold(w, "passwd"), containsFold(w, "passphrase"), containsFold(w, "passcode"),
		hasSuffixFold(w, "token"), hasSuffixFold(w, "secret"),
		hasSuffixFold(w, "apikey"), hasSuffixFold(w, "accesskey"), hasSuffixFold(w, "privatekey"),
		hasSuffixFold(w, "secretkey"), hasSuffixFold(w, "signingkey"), hasSuffixFold(w, "encryptionkey"),
		hasSuffixFold(w, "masterkey"),
		hasPrefixFold(w, "credential"), strings.EqualFold(w, "creds"), strings.EqualFold(w, "pwd"):
		return keyStrong
	case strings.EqualFold(w, "auth"), strings.EqualFold(w, "pass"):
		return keyWeak
	}
	return keyNone
}

func isKeyQualifier(w string) bool {
	for _, q := range []string{"api", "access", "private", "secret", "signing", "encryption", "master", "auth", "account"} {
		if strings.EqualFold(w, q) {
			return true
		}
	}
	return false
}

// nonSecretSuffixes end keys that name something about a secret, not the
// secret itself.
var nonSecretSuffixes = []string{
	"count", "counts", "type", "types", "length", "len", "size", "limit", "limits", "max", "min",
	"url", "uri", "urls", "endpoint", "host", "file", "files", "path", "dir", "name", "names",
	"expiry", "expires", "expiration", "exp", "ttl", "timeout", "header", "field", "env", "var",
	"policy", "enabled", "enable", "disabled", "required", "mode", "format", "kind", "label",
	"prompt", "id", "ids", "hint", "method", "methods", "provider", "version", "index", "idx",
	"pos", "position", "start", "end", "offset", "regex", "regexp", "re", "pattern", "prefix", "suffix",
	"rotation", "strategy", "store", "manager", "service", "source", "ref", "stdin", "usage",
	"budget", "estimate", "error", "errors", "status", "helper", "cmd", "command", "scope", "scopes",
}

func isNonSecretSuffix(w string) bool {
	for _, s := range nonSecretSuffixes {
		if strings.EqualFold(w, s) {
			return true
		}
	}
	return false
}

// placeholderWords are values that stand for no secret.
var placeholderWords = []string{
	"null", "nil", "none", "true", "false", "undefined", "string", "str", "bool", "boolean",
	"int", "number", "bytes", "[]byte", "*string", "optional", "required", "redacted",
	"hidden", "masked", "empty", "<nil>", "secret.value",
}

// hasPlaceholderPrefix reports whether v starts like a variable reference,
// a template or a previous redaction.
func hasPlaceholderPrefix(v string) bool {
	for _, p := range []string{"${", "$(", "{{", "#{", "%(", "%{", markerPrefix} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// isPlaceholder reports whether v stands for a value rather than being one:
// a variable reference, a template, a masked value or a previous redaction.
func isPlaceholder(v string) bool {
	if v == "" || hasPlaceholderPrefix(v) {
		return true
	}
	switch {
	case v[0] == '$' && isShellVar(v[1:]):
		return true
	case v[0] == '<' && v[len(v)-1] == '>':
		return true
	}
	if strings.IndexByte("*xX.#-_", v[0]) >= 0 && strings.Count(v, v[:1]) == len(v) {
		return true // ****, xxxx
	}
	for _, w := range placeholderWords {
		if strings.EqualFold(v, w) {
			return true
		}
	}
	return false
}

// isShellVar reports whether v is an environment-style variable name:
// upper case (GITHUB_TOKEN) or lower case letters without digits ($token).
// "$ecret123" is not one, so it stays a possible secret.
func isShellVar(v string) bool {
	if v == "" {
		return false
	}
	upper, lower := true, true
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isUpper(c), c == '_':
			lower = lower && c == '_'
		case isDigit(c):
			lower = false
			if i == 0 {
				return false
			}
		case c >= 'a' && c <= 'z':
			upper = false
		default:
			return false
		}
	}
	return upper || lower
}

// isCodeValue reports whether the unquoted value v of assignment a is code:
// see looksLikeCode; and in code's assignment forms (key := v, key => v,
// key = v with blanks), a name that reads as words is a variable
// (hmacSampleSecret = keyData), where a credential is random.
func isCodeValue(s string, a assignment, v string) bool {
	if looksLikeCode(v, a.trailing) {
		return true
	}
	codeSep := a.sep == ":=" || a.sep == "=>" || (a.sep == "=" && a.spaced)
	if codeSep && isWordy(v) {
		return true
	}
	// A type union: privateKey: KeyLike | PrivateKeyInput.
	if a.sep == ":" && strings.Contains(v, " | ") {
		for t := range strings.SplitSeq(v, " | ") {
			if !isWordy(strings.TrimSpace(t)) {
				return false
			}
		}
		return true
	}
	return false
}

// looksLikeCode reports whether an unquoted value is source code rather than
// a secret: a call, a field path (cfg.Password), an address, dereference or
// negation, a channel receive, a composite literal or index expression, or
// an identifier ending a struct field (password, or Token: actJWT, ...).
func looksLikeCode(v string, trailing bool) bool {
	switch v[0] {
	case '{', '[', '(':
		return true
	case '&', '*', '!':
		return len(v) > 1 && (isLetter(v[1]) || v[1] == '_' || v[1] == '(' || v[1] == '!')
	case '<':
		return strings.HasPrefix(v, "<-")
	case '$':
		// A variable used as a value: $o->{clock}, $opts['token'].
		i := 1
		for i < len(v) && (isAlnum(v[i]) || v[i] == '_') {
			i++
		}
		return i > 1 && i < len(v) && (strings.HasPrefix(v[i:], "->") || v[i] == '[' || v[i] == '{' || v[i] == '.')
	}
	i := 0
	dots := 0
	for i < len(v) && (isAlnum(v[i]) || v[i] == '_' || v[i] == '.') {
		if v[i] == '.' {
			dots++
			if i+1 >= len(v) || !(isLetter(v[i+1]) || v[i+1] == '_') {
				return false
			}
		}
		i++
	}
	if !isLetter(v[0]) && v[0] != '_' {
		return false
	}
	if i < len(v) {
		switch v[i] {
		case '(', '{', '[', '<':
			return true // a call, a composite literal, an index, a generic type: os.Getenv("X"), Auth{}, keys[0], Result<T>
		case ',', ')', ';', '}':
			return dots > 0 || isWordy(v[:i]) // a field of a literal or an argument
		}
		return false
	}
	return dots > 0 || trailing
}

// looksRandom reports whether a word could be a credential: mixed with
// digits or symbols, of mixed case, or long; never a name that reads as
// words (TestBufferWriter).
func looksRandom(v string) bool {
	if len(v) < 6 {
		return false
	}
	if len(v) >= 16 {
		return !isWordy(v)
	}
	var digit, symbol, upper, lower bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isDigit(c):
			digit = true
		case isUpper(c):
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c != '-' && c != '_' && c != ' ' && c != '\t':
			symbol = true
		}
	}
	return (digit || symbol || (upper && lower && len(v) >= 8)) && !isWordy(v)
}

func isQuote(c byte) bool   { return c == '"' || c == '\'' || c == '`' }
func isKeyByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' }
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func trimBlankRight(s string, lo, hi int) int {
	for hi > lo && (s[hi-1] == ' ' || s[hi-1] == '\t' || s[hi-1] == '\r') {
		hi--
	}
	return hi
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// ignoring ASCII case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if equalFoldLower(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func hasSuffixFold(s, suf string) bool {
	return len(s) >= len(suf) && equalFoldLower(s[len(s)-len(suf):], suf)
}

func hasPrefixFold(s, pre string) bool {
	return len(s) >= len(pre) && equalFoldLower(s[:len(pre)], pre)
}

// containsFoldSquashed reports whether s, lower-cased and without '_', '-'
// and '.', contains sub.
func containsFoldSquashed(s, sub string) bool {
	var buf [2*maxKeyLen + 16]byte
	b := buf[:0]
	for i := 0; i < len(s) && len(b) < len(buf); i++ {
		c := s[i]
		if c == '_' || c == '-' || c == '.' {
			continue
		}
		if isUpper(c) {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return strings.Contains(string(b), sub)
}
