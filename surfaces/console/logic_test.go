package console

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/messages"
)

func TestSessionsExpireAndClose(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := newSessions(func() time.Time { return now }, time.Hour)
	a := s.open()
	if len(a.id) != 64 || len(a.csrf) != 64 || a.id == a.csrf {
		t.Fatalf("session %+v: want distinct 32-byte random id and CSRF token", a)
	}
	if got, ok := s.get(a.id); !ok || got.csrf != a.csrf {
		t.Fatalf("get = %+v, %v", got, ok)
	}
	for _, bad := range []string{"", a.csrf, strings.ToUpper(a.id), a.id[:63]} {
		if _, ok := s.get(bad); ok {
			t.Fatalf("get(%q) found a session", bad)
		}
	}
	now = now.Add(time.Hour - time.Nanosecond)
	if _, ok := s.get(a.id); !ok {
		t.Fatal("the session ended before its TTL")
	}
	now = now.Add(time.Nanosecond)
	if _, ok := s.get(a.id); ok {
		t.Fatal("the session outlived its TTL")
	}
	b := s.open()
	s.close(b.id)
	if _, ok := s.get(b.id); ok {
		t.Fatal("a closed session is still open")
	}
}

func TestSessionsAreBounded(t *testing.T) {
	now := time.Unix(0, 0)
	s := newSessions(func() time.Time { return now }, time.Hour)
	first := s.open()
	for range 3 * maxSessions {
		now = now.Add(time.Second)
		s.open()
	}
	if n := s.len(); n != maxSessions {
		t.Fatalf("%d sessions held, want at most %d", n, maxSessions)
	}
	if _, ok := s.get(first.id); ok {
		t.Fatal("the oldest session survived the eviction")
	}
}

func TestCSRFAndTokenCompare(t *testing.T) {
	ss := session{csrf: "abc"}
	for _, tt := range []struct {
		got  string
		want bool
	}{{"abc", true}, {"", false}, {"ab", false}, {"abcd", false}, {"ABC", false}} {
		if ss.validCSRF(tt.got) != tt.want {
			t.Errorf("validCSRF(%q) = %v, want %v", tt.got, !tt.want, tt.want)
		}
	}
	if tokenOK("", "") {
		t.Error("an empty token logs in")
	}
	if !tokenOK("t", "t") || tokenOK("t", "T") || tokenOK("t", "") {
		t.Error("tokenOK compares wrongly")
	}
}

func TestSameOrigin(t *testing.T) {
	for _, tt := range []struct {
		origin string
		want   bool
	}{
		{"", true},
		{"http://127.0.0.1:8080", true},
		{"http://127.0.0.1:8081", false},
		{"http://evil.example", false},
		{"null", false},
		{"http://127.0.0.1:8080.evil.example", false},
	} {
		r := httptest.NewRequest("POST", "http://127.0.0.1:8080/ui/logout", nil)
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if got := sameOrigin(r); got != tt.want {
			t.Errorf("sameOrigin(Origin %q) = %v, want %v", tt.origin, got, tt.want)
		}
	}
}

func TestPatchDiff(t *testing.T) {
	tests := []struct {
		name   string
		detail string
		ok     bool
		want   []diffOp
	}{
		{"empty", "", false, nil},
		{"not json", "{", false, nil},
		{"a command", `{"argv":["git","push"]}`, false, nil},
		{"replace", `{"operations":[{"op":"replace","path":"a.go","old_text":"x\ny\n","new_text":"z","all":true}]}`, true,
			[]diffOp{{Op: "replace", Path: "a.go", Note: "every occurrence", Lines: []diffLine{{"-", "x"}, {"-", "y"}, {"+", "z"}}}}},
		{"create and delete", `{"operations":[{"op":"create","path":"n.sh","content":"echo\n","mode":"0755","overwrite":true},{"op":"delete","path":"old.txt"}]}`, true,
			[]diffOp{{Op: "create", Path: "n.sh", Note: "overwrite, mode 0755", Lines: []diffLine{{"+", "echo"}}}, {Op: "delete", Path: "old.txt"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := patchDiff(tt.detail)
			if ok != tt.ok || len(got) != len(tt.want) {
				t.Fatalf("patchDiff = %+v, %v, want %+v, %v", got, ok, tt.want, tt.ok)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Op != w.Op || g.Path != w.Path || g.Note != w.Note || len(g.Lines) != len(w.Lines) {
					t.Fatalf("op %d = %+v, want %+v", i, g, w)
				}
				for j := range g.Lines {
					if g.Lines[j] != w.Lines[j] {
						t.Fatalf("op %d line %d = %+v, want %+v", i, j, g.Lines[j], w.Lines[j])
					}
				}
			}
		})
	}
	big := `{"operations":[{"op":"write","path":"b","content":"` + strings.Repeat(`x\n`, maxDiffLines+10) + `"}]}`
	got, _ := patchDiff(big)
	if n := len(got[0].Lines); n != maxDiffLines+1 || !strings.Contains(got[0].Lines[n-1].Text, "10 more lines") {
		t.Fatalf("a long write renders %d lines, last %+v", n, got[0].Lines[n-1])
	}
}

func TestTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	rows, window := timeline([]messages.RunSpan{
		{Op: "b", Start: ms(50), DurationMs: 50},
		{Op: "a", Start: ms(0), DurationMs: 10},
		{Op: "c", Start: ms(100), DurationMs: 0},
	})
	if window != 100 || len(rows) != 3 {
		t.Fatalf("window %v, %d rows", window, len(rows))
	}
	want := []struct {
		op            string
		offset, width float64
	}{{"a", 0, 10}, {"b", 50, 50}, {"c", 99.6, 0.4}}
	for i, w := range want {
		r := rows[i]
		if r.Op != w.op || r.Offset != w.offset || r.Width != w.width {
			t.Errorf("row %d = %s at %v width %v, want %s at %v width %v", i, r.Op, r.Offset, r.Width, w.op, w.offset, w.width)
		}
	}
	if rows, _ := timeline(nil); rows != nil {
		t.Errorf("no spans: %v", rows)
	}
	one, _ := timeline([]messages.RunSpan{{Op: "x", Start: t0}})
	if one[0].Offset != 0 || one[0].Width != 100 {
		t.Errorf("a lone instant span: %+v", one[0])
	}
}

func TestShellQuote(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{
		{[]string{"git", "log", "-n", "3"}, "git log -n 3"},
		{[]string{"sh", "-c", "echo hi; it's"}, `sh -c 'echo hi; it'\''s'`},
		{[]string{""}, "''"},
	} {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
