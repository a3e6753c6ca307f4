package trailer

import (
	"strings"
)

// Prefix starts every key harnessd writes.
const Prefix = "Harnessd-"

// The keys of harnessd's trailers.
const (
	Receipt   = "Harnessd-Receipt"
	Run       = "Harnessd-Run"
	Policy    = "Harnessd-Policy"
	Approvals = "Harnessd-Approvals"
	Verified  = "Harnessd-Verified"
	Repo      = "Harnessd-Repo"
)

// Trailer is one "Key: value" line.
type Trailer struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Parse returns the trailers of msg's last paragraph, in order, or nil
// when that paragraph is not a trailer block (or msg has only one
// paragraph: a subject alone is never trailers). Continuation lines are
// joined to the value with a space.
func Parse(msg string) []Trailer {
	msg = strings.ReplaceAll(msg, "\r\n", "\n")
	lines := strings.Split(strings.TrimRight(msg, "\n\t "), "\n")
	// The last paragraph: the lines after the last blank one.
	start := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) == "" {
			start = i + 1
			break
		}
	}
	if start <= 0 || start >= len(lines) {
		return nil
	}
	var out []Trailer
	for _, l := range lines[start:] {
		if l != "" && (l[0] == ' ' || l[0] == '\t') {
			if len(out) == 0 {
				return nil
			}
			out[len(out)-1].Value = strings.TrimSpace(out[len(out)-1].Value + " " + strings.TrimSpace(l))
			continue
		}
		k, v, ok := split(l)
		if !ok {
			return nil
		}
		out = append(out, Trailer{Key: k, Value: v})
	}
	return out
}

// split parses "Key: value"; git also accepts whitespace before the colon.
func split(l string) (key, value string, ok bool) {
	i := strings.IndexByte(l, ':')
	if i <= 0 {
		return "", "", false
	}
	key = strings.TrimRight(l[:i], " \t")
	if !IsToken(key) {
		return "", "", false
	}
	return key, strings.TrimSpace(l[i+1:]), true
}

// IsToken reports whether k is a trailer key: letters, digits and '-',
// not starting with '-'.
func IsToken(k string) bool {
	if k == "" || k[0] == '-' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Reserved returns the first line of msg that looks like one of harnessd's
// trailers (a "Harnessd-...:" key, in any case, anywhere in the message,
// indented or not), and whether there is one: a message that carries one
// is refused, so that an agent cannot forge provenance.
func Reserved(msg string) (string, bool) {
	for _, l := range strings.Split(strings.ReplaceAll(msg, "\r", "\n"), "\n") {
		t := strings.TrimLeft(l, " \t")
		if len(t) < len(Prefix) || !strings.EqualFold(t[:len(Prefix)], Prefix) {
			continue
		}
		if i := strings.IndexByte(t, ':'); i > 0 && IsToken(strings.TrimRight(t[:i], " \t")) {
			return l, true
		}
	}
	return "", false
}

// Append returns msg with a trailer block of ts after a blank line. msg
// is kept as given but for trailing whitespace; values must be one line
// (newlines are replaced by spaces).
func Append(msg string, ts []Trailer) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(msg, "\n\t\r "))
	b.WriteString("\n\n")
	b.WriteString(Format(ts))
	return b.String()
}

// Format writes ts as trailer lines, each ending in a newline.
func Format(ts []Trailer) string {
	var b strings.Builder
	for _, t := range ts {
		v := strings.Join(strings.Fields(t.Value), " ")
		b.WriteString(t.Key)
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteByte('\n')
	}
	return b.String()
}

// Harnessd returns the trailers of ts whose key starts with Prefix, by key;
// a key given twice keeps its values joined, so a duplicate is visible as
// a value no record matches.
func Harnessd(ts []Trailer) map[string]string {
	out := map[string]string{}
	for _, t := range ts {
		if !strings.HasPrefix(t.Key, Prefix) {
			continue
		}
		if old, ok := out[t.Key]; ok {
			out[t.Key] = old + "," + t.Value
			continue
		}
		out[t.Key] = t.Value
	}
	return out
}

// List splits a comma-separated trailer value into its items (empty
// items dropped).
func List(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
