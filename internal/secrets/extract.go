package secrets

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harnessd/harnessd/internal/redact"
)

const (
	// minPEMLine is the shortest PEM body line kept as a value of its own.
	minPEMLine = 16
	// minBareToken is the shortest line made of one token that is kept as
	// a value (a file holding just a token, such as a key file).
	minBareToken = 16
	// maxQuotedLines bounds a quoted value that continues on later lines.
	maxQuotedLines = 200
	// maxValues bounds the values learned from one checkout.
	maxValues = 20_000
)

// valueSet collects distinct values of redact.MinKnownLen bytes or more.
type valueSet struct {
	m    map[string]struct{}
	full bool // maxValues reached: later values were dropped
}

func newValueSet() *valueSet { return &valueSet{m: make(map[string]struct{})} }

func (vs *valueSet) add(v string) {
	if len(v) < redact.MinKnownLen || len(v) > redact.MaxKnownLen {
		return
	}
	if _, ok := vs.m[v]; ok {
		return
	}
	if len(vs.m) >= maxValues {
		vs.full = true
		return
	}
	vs.m[strings.Clone(v)] = struct{}{} // do not pin the whole file
}

func (vs *valueSet) sorted() []string {
	out := make([]string, 0, len(vs.m))
	for v := range vs.m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// extract adds the values held by content, the text of the secret file at
// the slash-separated path rel.
func extract(rel, content string, vs *valueSet) {
	extractPEM(content, vs)
	extractJSON(content, vs)
	extractLines(rel, content, vs)
}

// extractLines reads content line by line: KEY=VALUE, export KEY=VALUE,
// KEY = VALUE, KEY: VALUE (YAML), quoted values (also spanning lines),
// passwords in URLs and .netrc lines, lines made of a single long token,
// and the password fields of .pgpass and .htpasswd.
func extractLines(rel, content string, vs *valueSet) {
	base := strings.ToLower(path.Base(rel))
	lines := strings.Split(content, "\n")
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" {
			continue
		}
		if t[0] == '#' || t[0] == ';' {
			// A commented-out KEY=VALUE still shows in the file.
			if c := strings.TrimLeft(t, "#; \t"); strings.IndexByte(c, '=') > 0 {
				if rest, ok := assignment(c); ok && len(rest) < len(c) && c[len(c)-len(rest)-1] == '=' {
					i = value(rest, lines, i, vs)
				}
			}
			continue
		}
		switch base {
		case ".pgpass": // host:port:database:user:password
			if f := strings.SplitN(t, ":", 5); len(f) == 5 {
				vs.add(f[4])
			}
		case ".htpasswd": // user:hash
			if _, h, ok := strings.Cut(t, ":"); ok {
				vs.add(h)
			}
		}
		urlPasswords(t, vs)
		netrcPasswords(t, vs)
		rest, ok := assignment(t)
		// A single long token, unless it is KEY=VALUE (base64 padding is not).
		if len(t) >= minBareToken && !strings.ContainsAny(t, " \t") && !strings.HasPrefix(t, "-----") &&
			(!ok || strings.Trim(rest, "=") == "") {
			vs.add(t)
		}
		if ok {
			i = value(rest, lines, i, vs)
		}
	}
}

// assignment splits a KEY=VALUE, KEY = VALUE or YAML "KEY: VALUE" line
// (optionally after "export " or a YAML "- ") and returns what follows the
// separator.
func assignment(t string) (rest string, ok bool) {
	for _, p := range []string{"export ", "export\t", "- "} {
		if s, cut := strings.CutPrefix(t, p); cut {
			t = strings.TrimLeft(s, " \t")
			break
		}
	}
	eq := strings.IndexByte(t, '=')
	col := yamlColon(t)
	i := eq
	if i < 0 || (col >= 0 && col < i) {
		i = col
	}
	if i <= 0 {
		return "", false
	}
	key := strings.TrimSpace(t[:i])
	if key == "" {
		return "", false
	}
	if q := key[0]; q == '"' || q == '\'' {
		if len(key) < 2 || key[len(key)-1] != q {
			return "", false
		}
	} else if strings.ContainsAny(key, " \t\"'") {
		return "", false
	}
	return t[i+1:], true
}

// yamlColon returns the index of the first ':' followed by a blank or the
// end of t, or -1.
func yamlColon(t string) int {
	for i := 0; i < len(t); i++ {
		if t[i] == ':' && (i+1 == len(t) || t[i+1] == ' ' || t[i+1] == '\t') {
			return i
		}
	}
	return -1
}

// value adds the value that starts rest, on line i of lines, and returns the
// index of the last line it occupies.
func value(rest string, lines []string, i int, vs *valueSet) int {
	v := strings.TrimLeft(rest, " \t")
	if v == "" {
		return i
	}
	q := v[0]
	if q != '"' && q != '\'' && q != '`' {
		// Unquoted: a '#' after a blank starts a comment.
		for j := 1; j < len(v); j++ {
			if v[j] == '#' && (v[j-1] == ' ' || v[j-1] == '\t') {
				v = v[:j]
				break
			}
		}
		vs.add(strings.TrimRight(v, " \t"))
		return i
	}
	raw, last := "", i
	if end := closingQuote(v[1:], q); end >= 0 {
		raw = v[1 : 1+end]
	} else {
		// The value may go on over the next lines (dotenv allows it).
		parts, closed := []string{v[1:]}, false
		for last = i + 1; last < len(lines) && last-i <= maxQuotedLines; last++ {
			l := strings.TrimSuffix(lines[last], "\r")
			if e := closingQuote(l, q); e >= 0 {
				parts, closed = append(parts, l[:e]), true
				break
			}
			parts = append(parts, l)
		}
		if !closed {
			// Unterminated: keep what the first line holds.
			vs.add(strings.TrimSpace(v[1:]))
			return i
		}
		raw = strings.Join(parts, "\n")
	}
	vs.add(raw)
	if q == '"' && strings.IndexByte(raw, '\\') >= 0 {
		vs.add(unescape(raw))
	}
	if last > i {
		for _, l := range strings.Split(raw, "\n") {
			vs.add(strings.TrimSpace(l))
		}
	}
	return last
}

// closingQuote returns the index in s of the quote q that closes a value
// (backslash escapes count inside double quotes), or -1.
func closingQuote(s string, q byte) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if q == '"' {
				i++
			}
		case q:
			return i
		}
	}
	return -1
}

// unescape decodes the escapes of a double-quoted dotenv value.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '"', '\\', '$', '\'', '`':
			b.WriteByte(s[i])
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// urlPasswords adds the password of every scheme://user:password@host in t,
// as written and percent-decoded.
func urlPasswords(t string, vs *valueSet) {
	for {
		i := strings.Index(t, "://")
		if i < 0 {
			return
		}
		t = t[i+3:]
		auth := t
		if j := strings.IndexAny(auth, "/?# \t\"'<>"); j >= 0 {
			auth = auth[:j]
		}
		at := strings.LastIndexByte(auth, '@')
		if at < 0 {
			continue
		}
		if _, pw, ok := strings.Cut(auth[:at], ":"); ok {
			vs.add(pw)
			if dec, err := url.PathUnescape(pw); err == nil {
				vs.add(dec)
			}
		}
	}
}

// netrcPasswords adds the token after "password" or "passwd" in a .netrc
// style line.
func netrcPasswords(t string, vs *valueSet) {
	if !strings.Contains(t, "pass") {
		return
	}
	f := strings.Fields(t)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "password" || f[i] == "passwd" {
			vs.add(f[i+1])
		}
	}
}

// extractJSON adds the string value of every `"key": "value"` pair in s, as
// written and decoded; a decoded value holding a PEM block adds its body.
func extractJSON(s string, vs *valueSet) {
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return
		}
		start := i + j
		end := jsonStringEnd(s, start)
		if end < 0 {
			i = start + 1
			continue
		}
		i = end
		k := skipBlanks(s, end)
		if k == len(s) || s[k] != ':' {
			continue
		}
		k = skipBlanks(s, k+1)
		if k == len(s) || s[k] != '"' {
			continue
		}
		vend := jsonStringEnd(s, k)
		if vend < 0 {
			continue
		}
		raw := s[k+1 : vend-1]
		vs.add(raw)
		if strings.IndexByte(raw, '\\') >= 0 {
			var dec string
			if json.Unmarshal([]byte(s[k:vend]), &dec) == nil {
				vs.add(dec)
				extractPEM(dec, vs)
			}
		}
		i = vend
	}
}

// jsonStringEnd returns the index after the quote closing the JSON string
// that starts at s[start] == '"', or -1 if it does not close on its line.
func jsonStringEnd(s string, start int) int {
	for i := start + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		case '\n':
			return -1
		}
	}
	return -1
}

func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// extractPEM adds the body of every PEM block in s: the base64 lines
// joined into one string, and each line of minPEMLine characters or more.
// The body runs from the line after "-----BEGIN ...-----" to the END line,
// skipping blank and header ("Proc-Type: ...") lines, and stops early at a
// line that is not base64.
func extractPEM(s string, vs *valueSet) {
	for {
		b := strings.Index(s, "-----BEGIN ")
		if b < 0 {
			return
		}
		nl := strings.IndexByte(s[b:], '\n')
		if nl < 0 {
			return
		}
		s = s[b+nl+1:]
		var joined strings.Builder
		for s != "" {
			line, rest, _ := strings.Cut(s, "\n")
			l := strings.TrimSpace(line)
			if strings.Contains(l, "-----END ") {
				l, _, _ = strings.Cut(l, "-----END ")
				joined.WriteString(l)
				break
			}
			if l != "" && !strings.Contains(l, ":") {
				if !isBase64(l) {
					break
				}
				joined.WriteString(l)
				if len(l) >= minPEMLine {
					vs.add(l)
				}
			}
			s = rest
		}
		vs.add(joined.String())
	}
}

func isBase64(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// gitConfigValues returns the credentials in a repository's config files
// (those of paths named config or config.worktree): passwords and tokens
// in URLs (remote.*.url, url.*.insteadOf) and the value of http extra
// headers (an Authorization header's credentials). Git needs its config,
// so confined processes may read it: these values are redacted instead.
func gitConfigValues(paths []string) []string {
	vs := newValueSet()
	for _, p := range paths {
		if b := filepath.Base(p); b != "config" && b != "config.worktree" {
			continue
		}
		for _, line := range strings.Split(readHead(p, 1<<20), "\n") {
			t := strings.TrimSpace(line)
			urlPasswords(t, vs)
			if k, v, ok := strings.Cut(t, "="); ok && strings.EqualFold(strings.TrimSpace(k), "extraheader") {
				f := strings.Fields(strings.Trim(strings.TrimSpace(v), `"`))
				if len(f) > 0 {
					vs.add(f[len(f)-1])
					if dec, err := base64.StdEncoding.DecodeString(f[len(f)-1]); err == nil {
						// Basic credentials: user:token.
						if _, tok, ok := strings.Cut(string(dec), ":"); ok {
							vs.add(tok)
						}
					}
				}
			}
		}
	}
	return vs.sorted()
}
