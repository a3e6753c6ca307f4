package textsafe

import (
	"encoding/json"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain text is unchanged", "git log --oneline -5", "git log --oneline -5"},
		{"a path is unchanged", "src/ünïcode/файл.go", "src/ünïcode/файл.go"},
		{"emoji and CJK are unchanged", "fix 🐛 in 日本語", "fix 🐛 in 日本語"},
		{"empty", "", ""},
		{"a carriage return hiding a command", "ls\rrm -rf ~", `ls\rrm -rf ~`},
		{"a fake line", "ls\nOperation: ls", `ls\nOperation: ls`},
		{"CRLF", "a\r\nb", `a\r\nb`},
		{"a tab (the tables' column separator)", "a\tb", `a\tb`},
		{"an SGR colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"an OSC 8 hyperlink", "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07", `\x1b]8;;https://evil.example\x07click\x1b]8;;\x07`},
		{"an OSC 52 clipboard write with ST", "\x1b]52;c;cm0gLXJmIH4K\x1b\\", `\x1b]52;c;cm0gLXJmIH4K\x1b\\`},
		{"a cursor move", "\x1b[2A\x1b[Kapproved", `\x1b[2A\x1b[Kapproved`},
		{"backspaces", "rm -rf ~\b\b\b\b\b\b\b\bls      ", `rm -rf ~\x08\x08\x08\x08\x08\x08\x08\x08ls      `},
		{"NUL and DEL", "a\x00b\x7fc", `a\x00b\x7fc`},
		{"a C1 CSI", "a\u009b31mb", `a\u009b31mb`},
		{"NEL", "a\u0085b", `a\u0085b`},
		{"a lone 0x9b byte (CSI in an 8-bit terminal)", "a\x9b31mb", `a\x9b31mb`},
		{"a cut UTF-8 sequence", "caf\xc3", `caf\xc3`},
		{"a right-to-left override", "ls \u202e~ fr- mr", `ls \u202e~ fr- mr`},
		{"every bidi control", "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c",
			`\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c`},
		{"zero-width characters", "r\u200bm \u200c\u200d\u2060\ufeff", `r\u200bm \u200c\u200d\u2060\ufeff`},
		{"a soft hyphen", "pass\u00adword", `pass\u00adword`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"tag characters (invisible ASCII)", "ok\U000e0041\U000e007f", `ok\U000e0041\U000e007f`},
		{"a typed backslash-r differs from a carriage return", `a\rb`, `a\\rb`},
		{"a typed escape differs from ESC", `\x1b`, `\\x1b`},
		{"a Windows path", `C:\Users\me`, `C:\\Users\\me`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.in); got != tt.want {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTextKeepsLinesAndTabs(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"func f() {\n\treturn\n}\n", "func f() {\n\treturn\n}\n"},
		{"one\r\ntwo\r\n", "one\\r\ntwo\\r\n"},
		{"a\x1b[2Kb\n\u202ec", "a\\x1b[2Kb\n\\u202ec"},
		{`s := "a\n"`, `s := "a\\n"`},
	} {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestBlockPrefixesEveryLine(t *testing.T) {
	for _, tt := range []struct{ in, prefix, want string }{
		{"one line", "  | ", "  | one line"},
		{"first\nOperation: ls\nApprove? yes", "  | ", "  | first\n  | Operation: ls\n  | Approve? yes"},
		{"ends\n", "> ", "> ends\n> "},
		{"cr\rhides", "> ", `> cr\rhides`},
		{"", "> ", "> "},
		{"a\nb", "", "a\nb"},
	} {
		if got := Block(tt.in, tt.prefix); got != tt.want {
			t.Errorf("Block(%q, %q) = %q, want %q", tt.in, tt.prefix, got, tt.want)
		}
	}
}

func TestJSONStaysJSONWithTheSameMeaning(t *testing.T) {
	in := map[string]any{"argv": []any{"echo", "a\u202eb", "\x7f", "\u0085", "\U000e0041", `back\slash`, "tab\tnl\n"}}
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := JSON(string(b))
	for _, bad := range []string{"\u202e", "\x7f", "\u0085", "\U000e0041"} {
		if strings.Contains(got, bad) {
			t.Errorf("JSON left %q in:\n%s", bad, got)
		}
	}
	for _, want := range []string{`"a\u202eb"`, `"\u007f"`, `"\u0085"`, `"\udb40\udc41"`, `"back\\slash"`, `"tab\tnl\n"`} {
		if !strings.Contains(got, want) {
			t.Errorf("JSON lacks %s:\n%s", want, got)
		}
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(got), &back); err != nil || !reflect.DeepEqual(back, in) {
		t.Errorf("JSON changed the meaning: %v, %v, want %v", back, err, in)
	}
	if plain := `{"a": 1}`; JSON(plain) != plain {
		t.Errorf("JSON(%q) = %q", plain, JSON(plain))
	}
}

func TestArgv(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{
		{[]string{"git", "log", "-n", "3"}, "git log -n 3"},
		{[]string{"go", "test", "./...", "-run=TestX", "-count=1"}, "go test ./... -run=TestX -count=1"},
		{[]string{"sh", "-c", "echo hi; it's"}, `sh -c 'echo hi; it'\''s'`},
		{[]string{""}, "''"},
		{[]string{"grep", `a\.b`}, `grep 'a\.b'`},
		{[]string{"echo", "ok\rrm -rf ~"}, `echo $'ok\rrm -rf ~'`},
		{[]string{"echo", "it's\x1b]8;;x\x07"}, `echo $'it\'s\x1b]8;;x\x07'`},
		{[]string{"ls", "a\nOperation: ls"}, `ls $'a\nOperation: ls'`},
		{[]string{"cat", "\u202etxt.exe"}, `cat $'\u202etxt.exe'`},
		{[]string{"x", "\xff"}, `x $'\xff'`},
		{[]string{"x", `a\b` + "\x1b"}, `x $'a\\b\x1b'`},
	} {
		if got := Argv(tt.in); got != tt.want {
			t.Errorf("Argv(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestArgvBashReadsItBack: the quoting is bash's, not only look-alike.
func TestArgvBashReadsItBack(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	argv := []string{"plain", "", "with space", "it's", `back\slash`, "cr\rhere", "esc\x1b[31m", "nl\nx", "\u202eabc", "\xff\xfe", "tag\U000e0041", "\u0085"}
	out, err := exec.Command(bash, "-c", `printf '%s\0' `+Argv(argv)).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !reflect.DeepEqual(got, argv) {
		t.Errorf("bash read back %q, want %q", got, argv)
	}
}

func TestUnchangedTextIsNotCopied(t *testing.T) {
	s := strings.Repeat("plain text, ünïcode 日本 ", 10)
	if n := testing.AllocsPerRun(100, func() { _ = Line(s); _ = Text(s); _ = JSON(s) }); n != 0 {
		t.Errorf("%v allocations for text that needs no escape", n)
	}
}

// noUnsafe fails when out holds an unsafe character other than those kept.
func noUnsafe(t *testing.T, fn, in, out, kept string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%s(%q) = %q: not UTF-8", fn, in, out)
	}
	for _, r := range out {
		if Unsafe(r) && !strings.ContainsRune(kept, r) {
			t.Fatalf("%s(%q) = %q holds %U", fn, in, out, r)
		}
	}
}

// unescape reads back the output of Line or Text (with the line breaks
// and tabs kept as they are).
func unescape(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			t.Fatalf("a lone backslash ends %q", s)
		}
		i++
		n := 0
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'x':
			n = 2
		case 'u':
			n = 4
		case 'U':
			n = 8
		default:
			t.Fatalf("unknown escape \\%c in %q", s[i], s)
		}
		if n == 0 {
			continue
		}
		if i+1+n > len(s) {
			t.Fatalf("a cut escape in %q", s)
		}
		v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
		if err != nil {
			t.Fatalf("bad escape in %q: %v", s, err)
		}
		if n == 2 {
			b.WriteByte(byte(v))
		} else {
			b.WriteRune(rune(v))
		}
		i += n
	}
	return b.String()
}

// parseArgv reads back Argv's output: words separated by one space, each
// of bare characters, '...', $'...' and \' pieces.
func parseArgv(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); {
		switch {
		case s[i] == ' ':
			out = append(out, w.String())
			w.Reset()
			inWord = false
			i++
			continue
		case strings.HasPrefix(s[i:], "$'"):
			j := i + 2
			for ; j < len(s) && s[j] != '\''; j++ {
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				t.Fatalf("unterminated $' in %q", s)
			}
			body := strings.ReplaceAll(s[i+2:j], `\'`, "'")
			w.WriteString(unescape(t, body))
			i = j + 1
		case s[i] == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				t.Fatalf("unterminated ' in %q", s)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case strings.HasPrefix(s[i:], `\'`):
			w.WriteByte('\'')
			i += 2
		default:
			w.WriteByte(s[i])
			i++
		}
		inWord = true
	}
	if inWord || len(s) > 0 {
		out = append(out, w.String())
	}
	return out
}

func FuzzLine(f *testing.F) {
	for _, s := range []string{"", "plain", "ls\rrm -rf ~", "\x1b]8;;x\x07", "a\u202eb", `\r`, "\xff", "\U000e0041", "a\nb\tc\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Line(s)
		noUnsafe(t, "Line", s, out, "")
		if back := unescape(t, out); back != s {
			t.Fatalf("Line(%q) = %q reads back as %q", s, out, back)
		}
		if strings.IndexFunc(s, Unsafe) < 0 && utf8.ValidString(s) && !strings.Contains(s, `\`) && out != s {
			t.Fatalf("Line(%q) = %q changed safe text", s, out)
		}
	})
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "a\nb", "a\r\nb", "\t\x1b[1m", "x\u2028y", `\n`} {
		f.Add(s, "  | ")
	}
	f.Fuzz(func(t *testing.T, s, prefix string) {
		out := Text(s)
		noUnsafe(t, "Text", s, out, "\n\t")
		if back := unescape(t, out); back != s {
			t.Fatalf("Text(%q) = %q reads back as %q", s, out, back)
		}
		if Line(prefix) != prefix {
			return // a prefix is harnessd's own text
		}
		blk := Block(s, prefix)
		noUnsafe(t, "Block", s, blk, "\t\n")
		lines := strings.Split(blk, "\n")
		for i, l := range lines {
			if !strings.HasPrefix(l, prefix) {
				t.Fatalf("Block(%q) line %d %q lacks the prefix %q", s, i, l, prefix)
			}
			lines[i] = strings.TrimPrefix(l, prefix)
		}
		if back := unescape(t, strings.Join(lines, "\n")); back != s {
			t.Fatalf("Block(%q) reads back as %q", s, back)
		}
	})
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{"", "a\u202eb", "\x7f\u0085", "\U000e0041", `q"\`, "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.MarshalIndent(map[string]any{"s": s, "argv": []string{s, "x"}}, "", "  ")
		if err != nil {
			t.Skip()
		}
		out := JSON(string(b))
		noUnsafe(t, "JSON", s, out, "\n\t")
		var a, want any
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("JSON(%s) = %s: no longer JSON: %v", b, out, err)
		}
		_ = json.Unmarshal(b, &want)
		if !reflect.DeepEqual(a, want) {
			t.Fatalf("JSON(%s) = %s means %v, want %v", b, out, a, want)
		}
		raw := JSON(s)
		noUnsafe(t, "JSON", s, raw, "\n\t")
	})
}

func FuzzArgv(f *testing.F) {
	f.Add("echo", "ok\rrm -rf ~", "")
	f.Add("sh", "-c", "it's \x1b]8;;x\x07")
	f.Add("", "\xff'", `\'`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		argv := []string{a, b, c}
		out := Argv(argv)
		noUnsafe(t, "Argv", strings.Join(argv, " "), out, "")
		if got := parseArgv(t, out); !reflect.DeepEqual(got, argv) {
			t.Fatalf("Argv(%q) = %s reads back as %q", argv, out, got)
		}
	})
}

func TestPartial(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"abc", 0}, {"日本", 0}, {"a\xe6", 1}, {"a\xe6\x97", 2}, {"a\xf0\x9f\x90", 3}, {"a\xf0\x9f\x90\x9b", 0},
		{"a\x97", 0}, // a lone continuation byte starts nothing: it is shown as \x97
		{"\xe6\x97\xa5\xe6", 1},
	} {
		if got := Partial(tt.in); got != tt.want {
			t.Errorf("Partial(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
