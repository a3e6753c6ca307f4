package redact

import "strings"

// This file holds what the matchers know about the text around a keyword:
// the path:line: prefix of grep-like output, whether that path is a test
// file, and whether a value is code rather than a credential.

// maxPrefixScan bounds how far back a matcher looks for the start of its
// line, so that many hits on one huge line cost linear time.
const maxPrefixScan = 4096

// grepPrefixEnd returns the end of the path:line: (or path:line:col:) prefix
// that grep -n, git grep -n and rg -n put at ls, the start of a line, and
// the path; or ls and "" when the line has no such prefix. A git grep
// revision ("HEAD:", "HEAD~1:") before the path is part of the prefix; the
// path-line- of a context line (grep -C) is one too.
func grepPrefixEnd(s string, ls int) (end int, path string) {
	i := ls
	for j := 0; j < 2; j++ { // [rev:]path
		st := i
		for i < len(s) && i-ls < 1024 && isPathByte(s[i]) {
			i++
		}
		if i == st || i >= len(s) {
			return ls, ""
		}
		if s[i] == '-' || s[i] == ':' {
			if e, ok := lineNumber(s, i); ok {
				return e, s[st:i]
			}
		}
		if s[i] != ':' || j == 1 {
			return ls, ""
		}
		i++
	}
	return ls, ""
}

// lineNumber reports whether s[i:] is ":<digits>:" (then ":<digits>:" may
// follow, rg's column) or "-<digits>-", and where it ends.
func lineNumber(s string, i int) (int, bool) {
	sep := s[i]
	j := i + 1
	for j < len(s) && j-i <= 10 && isDigit(s[j]) {
		j++
	}
	if j == i+1 || j >= len(s) || s[j] != sep {
		return 0, false
	}
	j++
	if sep == ':' {
		k := j
		for k < len(s) && k-j <= 10 && isDigit(s[k]) {
			k++
		}
		if k > j && k < len(s) && s[k] == ':' {
			j = k + 1
		}
	}
	return j, true
}

// isPathByte reports whether c may be part of a path as grep prints it
// (no blanks and no ':').
func isPathByte(c byte) bool {
	return c > ' ' && c != ':' && c != '"' && c != '\'' && c != '`' && c < 0x7f
}

// isLineNumberAfter reports whether the key ending at khi is the file name
// of a path:line: prefix ("creds_utils.go:29:"), not a key.
func isLineNumberAfter(s string, khi int) bool {
	if khi >= len(s) || s[khi] != ':' {
		return false
	}
	_, ok := lineNumber(s, khi)
	return ok
}

// contentStart returns where the text of the line holding s[at] starts:
// after its grep-like path:line: prefix if it has one. ok is false when the
// line start lies more than maxPrefixScan bytes back.
func contentStart(s string, at int) (cs int, path string, ok bool) {
	ls := at
	for ls > 0 && s[ls-1] != '\n' {
		if at-ls >= maxPrefixScan {
			return 0, "", false
		}
		ls--
	}
	cs, path = grepPrefixEnd(s, ls)
	if cs > at {
		return ls, "", true // the hit is inside the prefix
	}
	return cs, path, true
}

// inTestFile reports whether s[at] comes from a test file: the whole text
// does (StringIn), or its line is a grep-like line that names one.
func (c *scanCtx) inTestFile(at int) bool {
	if c.testFile {
		return true
	}
	_, path, ok := contentStart(c.s, at)
	return ok && path != "" && isTestPath(path)
}

// testDirs are directory names whose files are tests or test data.
var testDirs = []string{"test", "tests", "testdata", "__tests__", "__mocks__", "spec", "fixtures", "__fixtures__", "testfixtures", "test-fixtures", "e2e"}

// isTestPath reports whether path names a test file or test data: a Go,
// Python, JavaScript, Ruby or Java test file by its name, or any file under
// a directory such as test/, testdata/ or __tests__/.
func isTestPath(path string) bool {
	path = strings.TrimPrefix(path, "./")
	base := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		base = path[i+1:]
		for _, dir := range strings.Split(path[:i], "/") {
			for _, d := range testDirs {
				if strings.EqualFold(dir, d) {
					return true
				}
			}
		}
	}
	stem := base
	if i := strings.IndexByte(base, '.'); i > 0 {
		stem = base[:i]
	}
	switch {
	case strings.HasSuffix(stem, "_test"), strings.HasPrefix(stem, "test_"), strings.HasSuffix(stem, "_spec"),
		strings.HasSuffix(stem, "Test"), strings.HasSuffix(stem, "Tests"):
		return true
	}
	for _, mid := range []string{".test.", ".spec.", "_test.", ".e2e."} {
		if strings.Contains(base, mid) {
			return true
		}
	}
	return false
}

// isIdentifier reports whether v is a plain identifier: a letter or '_',
// then letters, digits, '_' and inner '-' (kebab-case, as in ABNF rules and
// package names).
func isIdentifier(v string) bool {
	if v == "" || !(isLetter(v[0]) || v[0] == '_') || v[len(v)-1] == '-' {
		return false
	}
	for i := 1; i < len(v); i++ {
		if !isAlnum(v[i]) && v[i] != '_' && (v[i] != '-' || v[i-1] == '-') {
			return false
		}
	}
	return true
}

// isWordy reports whether the identifier v reads as words, the way names
// in code do (keyData, exampleTokenA, actJWT, hmac_sample_secret,
// TestBufferWriter), rather than as random characters: every camelCase or
// snake_case word is a lower-case word, a capitalised word or a short
// acronym, maybe ending in up to five digits when there are two words or
// more (Ed25519, RSA2048); at most one word is a single letter.
func isWordy(v string) bool {
	if !isIdentifier(v) || len(v) > 64 {
		return false
	}
	constant := strings.IndexFunc(v, func(r rune) bool { return r >= 'a' && r <= 'z' }) < 0 // API_TOKEN, SECRET_KEY
	words, singles, numbered := 0, 0, false
	for i := 0; i < len(v); {
		w, next := nextWord(v, i)
		i = next
		if w == "" {
			continue
		}
		if isDigit(w[0]) {
			return false // nextWord keeps digits with their word
		}
		letters := w
		for len(letters) > 0 && isDigit(letters[len(letters)-1]) {
			letters = letters[:len(letters)-1]
		}
		if digits := len(w) - len(letters); digits > 0 {
			if digits > 5 || len(letters) < 2 {
				return false // a1b2c3: a credential's digits
			}
			numbered = true
		}
		for j := 0; j < len(letters); j++ {
			if isDigit(letters[j]) {
				return false
			}
		}
		switch {
		case len(letters) == 1:
			singles++
		case constant:
			if len(letters) > 12 || (len(letters) >= 4 && !hasVowel(letters)) {
				return false
			}
		case isUpper(letters[0]) && isUpper(letters[1]):
			if len(letters) > 6 || strings.IndexFunc(letters, func(r rune) bool { return r >= 'a' && r <= 'z' }) >= 0 {
				return false // an acronym is short and all upper case
			}
		default:
			for j := 1; j < len(letters); j++ {
				if isUpper(letters[j]) {
					return false
				}
			}
			if len(letters) >= 5 && !hasVowel(letters) {
				return false
			}
		}
		words++
	}
	// One word with digits is a password (hunter22); a name's digits
	// qualify a word among others (jwtTestEC256PrivateKey, sha256Sum).
	return words > 0 && singles <= 1 && (words > 1 || (len(v) >= 2 && !numbered))
}

func hasVowel(w string) bool {
	return strings.ContainsAny(w, "aeiouyAEIOUY")
}

// isVersion reports whether v is a version or a version range, as
// package.json, pnpm-lock.yaml and go.mod give them (^2.0.1, ~1.2.x,
// >=1.0.0, v1.9.0, 1.0.0-rc.1).
func isVersion(v string) bool {
	i := 0
	for i < len(v) && i < 4 && strings.IndexByte("^~=<>v ", v[i]) >= 0 {
		i++
	}
	if i >= len(v) || !isDigit(v[i]) || strings.IndexByte(v[i:], '.') < 0 {
		return false
	}
	pre := false // past a prerelease or build '-' or '+'
	for ; i < len(v); i++ {
		c := v[i]
		switch {
		case isDigit(c), c == '.', c == 'x', c == '*':
		case c == '-' || c == '+':
			pre = true
		case isLetter(c) && pre:
		default:
			return false
		}
	}
	return true
}

// isPhrase reports whether v is a short phrase of plain words ("bad
// token", "has a van"): blanks, and fewer than 12 bytes of letters, none a
// digit or symbol. A passphrase is longer.
func isPhrase(v string) bool {
	if len(v) >= 12 || !strings.ContainsAny(v, " \t") {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isLetter(v[i]) && v[i] != ' ' && v[i] != '\t' {
			return false
		}
	}
	return true
}

// isURL reports whether v starts with a URL scheme ("https://", "foo://").
func isURL(v string) bool {
	i := 0
	for i < len(v) && i < 32 && (isAlnum(v[i]) || v[i] == '+' || v[i] == '.' || v[i] == '-') {
		i++
	}
	return i > 0 && isLetter(v[0]) && strings.HasPrefix(v[i:], "://")
}

// isFormatVerb reports whether v starts with a printf verb (%v, %s, %-8q,
// %[1]d) or a format placeholder ({}, {0}, {name}): a message template,
// not a value.
func isFormatVerb(v string) bool {
	if len(v) >= 2 && v[0] == '%' {
		i := 1
		for i < len(v) && i < 8 && strings.IndexByte("+-# 0123456789.*[]", v[i]) >= 0 {
			i++
		}
		// A verb ends its word: "%v bytes", not "%40bc" (an escaped '@').
		return i < len(v) && strings.IndexByte("vTtbcdoOqxXUeEfFgGsp", v[i]) >= 0 &&
			(i+1 == len(v) || !isAlnum(v[i+1]))
	}
	if len(v) >= 2 && v[0] == '{' {
		i := 1
		for i < len(v) && i < 32 && (isAlnum(v[i]) || v[i] == '_' || v[i] == ':' || v[i] == '.') {
			i++
		}
		return i < len(v) && v[i] == '}'
	}
	return false
}

// insideString reports whether s[lo] lies inside a string literal opened
// earlier on its line by quote q (an odd number of unescaped q before it).
// A line start more than 512 bytes back counts as no string.
func insideString(s string, lo int, q byte) bool {
	n := 0
	i := lo - 1
	for ; i >= 0 && s[i] != '\n'; i-- {
		if lo-i > 512 {
			return false
		}
		if s[i] == q && (i == 0 || s[i-1] != '\\') {
			n++
		}
	}
	return n%2 == 1
}
