package trailer

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want []Trailer
	}{
		{"subject only", "Harnessd-Receipt: rcpt_1\n", nil},
		{"no trailers", "fix the bug\n\nIt was wrong.\n", nil},
		{"one block", "fix\n\nbody\n\nHarnessd-Receipt: rcpt_1\nHarnessd-Repo: repo_a\n",
			[]Trailer{{Receipt, "rcpt_1"}, {Repo, "repo_a"}}},
		{"crlf and trailing blank lines", "fix\r\n\r\nSigned-off-by: A <a@x>\r\n\r\n\r\n",
			[]Trailer{{"Signed-off-by", "A <a@x>"}}},
		{"space before colon", "fix\n\nKey : v\n", []Trailer{{"Key", "v"}}},
		{"continuation", "fix\n\nKey: a\n  b\n", []Trailer{{"Key", "a b"}}},
		{"continuation first", "fix\n\n  b\nKey: a\n", nil},
		{"mixed paragraph", "fix\n\nKey: a\nnot a trailer\n", nil},
		{"bad key", "fix\n\nKey with space: a\n", nil},
		{"leading dash", "fix\n\n-Key: a\n", nil},
		{"only the last paragraph", "fix\n\nA: 1\n\nB: 2\n", []Trailer{{"B", "2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Parse(tt.msg); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse(%q) = %#v, want %#v", tt.msg, got, tt.want)
			}
		})
	}
}

func TestReserved(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{"fix\n\nHarnessd-Receipt: rcpt_x\n", true},
		{"fix\n\n  harnessd-run: run_1\n", true},
		{"HARNESSD-POLICY : sha256:0\n", true},
		{"fix\r\nHarnessd-Repo: r", true},
		{"fix: mention Harnessd-Receipt: in prose\n", false},
		{"Harnessd-Receipt without colon\n", false},
		{"Harnessd receipt: not a token key\n", false},
		{"plain message\n\nSigned-off-by: A\n", false},
	}
	for _, tt := range tests {
		if _, got := Reserved(tt.msg); got != tt.want {
			t.Errorf("Reserved(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

func TestAppendKeepsMessageAndOwnBlock(t *testing.T) {
	msg := "subject\n\nbody\n\nSigned-off-by: A <a@x>\n"
	ts := []Trailer{{Receipt, "rcpt_1"}, {Approvals, "apr_1,apr_2"}}
	out := Append(msg, ts)
	if !strings.HasPrefix(out, strings.TrimRight(msg, "\n")+"\n\n") {
		t.Fatalf("message not kept: %q", out)
	}
	if got := Parse(out); !reflect.DeepEqual(got, ts) {
		t.Fatalf("Parse(Append) = %#v, want %#v", got, ts)
	}
	if got := List(Harnessd(Parse(out))[Approvals]); !reflect.DeepEqual(got, []string{"apr_1", "apr_2"}) {
		t.Fatalf("approvals = %v", got)
	}
}

func TestHarnessdDuplicateKeyIsVisible(t *testing.T) {
	m := Harnessd([]Trailer{{Receipt, "a"}, {"Other", "x"}, {Receipt, "b"}})
	if m[Receipt] != "a,b" || len(m) != 1 {
		t.Fatalf("Harnessd = %v", m)
	}
}

func TestSplitCommit(t *testing.T) {
	raw := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nparent aaaa\nparent bbbb\nauthor A <a> 1 +0000\n" +
		"gpgsig -----BEGIN-----\n \n x\n -----END-----\n\nsubject\n\nHarnessd-Receipt: r\n"
	c, err := SplitCommit([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tree != "4b825dc642cb6eb9a060e54bf8d69288fbee4904" || !reflect.DeepEqual(c.Parents, []string{"aaaa", "bbbb"}) ||
		c.Message != "subject\n\nHarnessd-Receipt: r\n" {
		t.Fatalf("SplitCommit = %#v", c)
	}
	for _, bad := range []string{"", "tree x", "parent a\n\nmsg", "\nmsg"} {
		if _, err := SplitCommit([]byte(bad)); err == nil {
			t.Errorf("SplitCommit(%q): no error", bad)
		}
	}
}

// FuzzParse: Parse and SplitCommit never panic; the block Append writes
// after any message is exactly what Parse reads back; and a message that
// Reserved accepts never yields a Harnessd- trailer of its own.
func FuzzParse(f *testing.F) {
	f.Add("fix\n\nbody", "rcpt_1")
	f.Add("fix\n\nHarnessd-Receipt: x", "v")
	f.Add("", "")
	f.Add("a\r\n\r\nK: v\r\n", " spaced  value ")
	f.Add("x\n\n  cont\nKey:", "a\nb")
	f.Fuzz(func(t *testing.T, msg, value string) {
		_ = Parse(msg)
		_, _ = SplitCommit([]byte(msg))
		ts := []Trailer{{Receipt, value}, {Repo, "repo_1"}}
		got := Parse(Append(msg, ts))
		want := []Trailer{{Receipt, strings.Join(strings.Fields(value), " ")}, {Repo, "repo_1"}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Parse(Append(%q, %q)) = %#v, want %#v", msg, value, got, want)
		}
		if _, reserved := Reserved(msg); !reserved {
			for k := range Harnessd(Parse(msg)) {
				t.Fatalf("message %q passed Reserved but carries trailer %q", msg, k)
			}
		}
	})
}
