package console

import (
	"errors"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/messages"
)

func TestParseFilter(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		query        string
		since, until time.Time
		code         errs.Code
	}{
		{query: ""},
		{query: "since=24h", since: now.Add(-24 * time.Hour)},
		{query: "since=90m&until=30m", since: now.Add(-90 * time.Minute), until: now.Add(-30 * time.Minute)},
		{query: "since=7d", since: now.Add(-7 * 24 * time.Hour)},
		{query: "since=2026-03-01", since: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{query: "until=2026-03-09T08:30:00Z", until: time.Date(2026, 3, 9, 8, 30, 0, 0, time.UTC)},
		{query: "since=yesterday", code: errs.InvalidArgument},
		{query: "since=-5h", code: errs.InvalidArgument},
		{query: "since=1h&until=2h", code: errs.InvalidArgument}, // since after until
		{query: "repo=" + strings.Repeat("x", maxFilterText+1), code: errs.InvalidArgument},
	} {
		q, _ := url.ParseQuery(tt.query)
		f, err := parseFilter(q, now)
		if tt.code != "" {
			if errs.CodeOf(err) != tt.code || !strings.Contains(err.Error(), ":") {
				t.Errorf("%q: %v, want %s with how to fix it", tt.query, err, tt.code)
			}
			continue
		}
		if err != nil || !f.Since.Equal(tt.since) || !f.Until.Equal(tt.until) {
			t.Errorf("%q: since %v until %v err %v, want %v %v", tt.query, f.Since, f.Until, err, tt.since, tt.until)
		}
	}
}

func TestFilterMatches(t *testing.T) {
	roots := map[string]string{"r1": "/home/me/src/zap", "r2": "/home/me/src/harnessd", "r3": "/home/me/src/zap/vendor/zapx"}
	for _, tt := range []struct {
		f    filter
		id   string
		want bool
	}{
		{filter{}, "r1", true},
		{filter{Repo: "r1"}, "r1", true},
		{filter{Repo: "ZAP"}, "r1", true}, // the root's base name, any case
		{filter{Repo: "zap"}, "r2", false},
		{filter{Repo: "src/harn"}, "r2", true}, // part of the root
		{filter{Repo: "zap"}, "unregistered", false},
		// A name that is some root's base name selects only that root,
		// even when it is part of another root's path.
		{filter{Repo: "zap"}, "r3", false},
		{filter{Repo: "zap"}, "r1", true},
		{filter{Repo: "src/zap"}, "r3", true},
	} {
		if got := tt.f.repo(tt.id, roots); got != tt.want {
			t.Errorf("%+v repo(%s) = %v", tt.f, tt.id, got)
		}
	}
	now := time.Now()
	f := filter{Client: "claude", State: "running", Since: now.Add(-time.Hour), Until: now}
	if !f.client("Claude-Code 1.2") || f.client("codex 0.9") || !f.state("running") || f.state("failed") {
		t.Error("client or state filter wrong")
	}
	if !f.when(now.Add(-time.Minute)) || f.when(now) || f.when(now.Add(-2*time.Hour)) {
		t.Error("time range wrong: since inclusive, until exclusive")
	}
	if got := repoOf(roots, "r1"); got != (repoRef{ID: "r1", Name: "zap", Root: "/home/me/src/zap"}) {
		t.Errorf("repoOf = %+v", got)
	}
	if got := repoOf(roots, "gone"); got.Name != "gone" {
		t.Errorf("an unregistered id is named by itself: %+v", got)
	}
}

// fakeAudit is a log of n entries (seq 1..n) read oldest first as the
// audit actor does; queries counts the reads.
type fakeAudit struct {
	n       uint64
	queries int
	fail    error
}

func (a *fakeAudit) query(after uint64, limit int) ([]messages.AuditEntry, bool, error) {
	a.queries++
	if a.fail != nil {
		return nil, false, a.fail
	}
	var out []messages.AuditEntry
	for s := after + 1; s <= a.n && len(out) < limit; s++ {
		out = append(out, messages.AuditEntry{Seq: s, Kind: messages.AuditKind([]string{"mutation", "ask"}[s%2])})
	}
	return out, len(out) > 0 && out[len(out)-1].Seq < a.n, nil
}

func seqs(es []messages.AuditEntry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func TestAuditNewestFirst(t *testing.T) {
	all := func(messages.AuditEntry) bool { return true }
	asks := func(e messages.AuditEntry) bool { return e.Kind == "ask" }
	for _, tt := range []struct {
		name   string
		n      uint64
		keep   func(messages.AuditEntry) bool
		before uint64
		limit  int
		want   []uint64
		more   bool
	}{
		{"empty log", 0, all, 1, 5, []uint64{}, false},
		{"fewer than a page", 3, all, 4, 5, []uint64{3, 2, 1}, false},
		{"a page of many", 5000, all, 5001, 4, []uint64{5000, 4999, 4998, 4997}, true},
		{"the page before a cursor", 5000, all, 4997, 3, []uint64{4996, 4995, 4994}, true},
		{"the last page", 10, all, 4, 5, []uint64{3, 2, 1}, false},
		{"filtered, beyond the first window", 5000, asks, 5001, 3, []uint64{4999, 4997, 4995}, true},
		{"exactly the rest", 4, all, 5, 4, []uint64{4, 3, 2, 1}, false},
	} {
		a := &fakeAudit{n: tt.n}
		got, more, err := newestFirst(a.query, tt.keep, tt.before, tt.limit)
		if err != nil || !reflect.DeepEqual(append([]uint64{}, seqs(got)...), tt.want) || more != tt.more {
			t.Errorf("%s: %v more=%v err=%v, want %v more=%v", tt.name, seqs(got), more, err, tt.want, tt.more)
		}
		if tt.n == 5000 && a.queries > 3 {
			t.Errorf("%s: %d queries: the newest page must not read the whole log", tt.name, a.queries)
		}
	}
	// A rare kind: windows double until the start of the log.
	a := &fakeAudit{n: 5000}
	got, more, err := newestFirst(a.query, func(e messages.AuditEntry) bool { return e.Seq == 7 }, 5001, 10)
	if err != nil || !reflect.DeepEqual(seqs(got), []uint64{7}) || more {
		t.Errorf("rare entry: %v more=%v err=%v", seqs(got), more, err)
	}
	boom := errors.New("store gone")
	if _, _, err := newestFirst((&fakeAudit{n: 9, fail: boom}).query, all, 10, 5); !errors.Is(err, boom) {
		t.Errorf("a failed read: %v", err)
	}
}

func TestAuditOldestFirst(t *testing.T) {
	a := &fakeAudit{n: 2500}
	got, more, next, err := oldestFirst(a.query, func(e messages.AuditEntry) bool { return e.Seq%1000 == 0 }, 0, 2)
	if err != nil || !reflect.DeepEqual(seqs(got), []uint64{1000, 2000}) || !more || next != 2000 {
		t.Errorf("filtered: %v more=%v next=%d err=%v", seqs(got), more, next, err)
	}
	got, more, next, err = oldestFirst(a.query, func(messages.AuditEntry) bool { return true }, 2497, 5)
	if err != nil || !reflect.DeepEqual(seqs(got), []uint64{2498, 2499, 2500}) || more || next != 2500 {
		t.Errorf("the end: %v more=%v next=%d err=%v", seqs(got), more, next, err)
	}
}

func TestApprovalsDelta(t *testing.T) {
	a1 := harness.Approval{ID: "apr_01", Operation: "run_command", Summary: "git push"}
	a2 := harness.Approval{ID: "apr_02", Operation: "apply_patch", Summary: "docs/x.md\u202e" + strings.Repeat("y", 300)}
	ev, sent, changed := approvalsDelta(nil, []harness.Approval{a1})
	if !changed || ev.Pending != 1 || len(ev.New) != 0 {
		t.Fatalf("first event: %+v changed=%v: want the count, nothing new", ev, changed)
	}
	if _, _, changed := approvalsDelta(sent, []harness.Approval{a1}); changed {
		t.Fatal("the same set is no change")
	}
	ev, sent, changed = approvalsDelta(sent, []harness.Approval{a2, a1})
	if !changed || ev.Pending != 2 || len(ev.New) != 1 || ev.New[0].ID != "apr_02" || !reflect.DeepEqual(ev.IDs, []string{"apr_01", "apr_02"}) {
		t.Fatalf("a new approval: %+v", ev)
	}
	if s := ev.New[0].Summary; strings.ContainsRune(s, '\u202e') || len(s) > maxNoteText+len("…") {
		t.Fatalf("the notification's summary is not escaped and bounded: %q", s)
	}
	ev, _, changed = approvalsDelta(sent, nil)
	if !changed || ev.Pending != 0 || len(ev.New) != 0 || ev.IDs == nil {
		t.Fatalf("all decided: %+v changed=%v", ev, changed)
	}
}

func TestGroupClients(t *testing.T) {
	claude := messages.Caller{Client: messages.Client{Name: "claude-code", Version: "1.0"}}
	runs := []messages.RunState{
		{RunID: "run_a", Status: messages.RunEnded, Caller: claude},
		{RunID: "run_b", Status: messages.RunActive, Caller: claude},
		{RunID: "run_c", Status: messages.RunActive}, // no client: a person's or the embedding's
	}
	var entries []messages.AuditEntry
	for i := range clientActions + 3 {
		entries = append(entries, messages.AuditEntry{Seq: uint64(100 - i), Client: "claude-code 1.0"})
	}
	entries = append(entries, messages.AuditEntry{Seq: 5, Client: "codex 0.3"}, messages.AuditEntry{Seq: 4, Actor: "person:console"})
	pending := []harness.Approval{{ID: "apr_1", Client: "codex 0.3"}}
	got := groupClients(runs, entries, pending)
	if len(got) != 2 || got[0].Name != "claude-code 1.0" || got[1].Name != "codex 0.3" {
		t.Fatalf("clients = %+v", got)
	}
	c := got[0]
	if c.Active != 1 || len(c.Runs) != 2 || c.Runs[0].RunID != "run_b" || len(c.Actions) != clientActions || c.Actions[0].Seq != 100 {
		t.Fatalf("claude: active %d runs %v actions %d", c.Active, c.Runs, len(c.Actions))
	}
	if x := got[1]; len(x.Runs) != 0 || len(x.Actions) != 1 || len(x.Approvals) != 1 {
		t.Fatalf("codex: %+v", x)
	}
}

func TestUnifiedLinesAndLiveFirst(t *testing.T) {
	got := unifiedLines("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same\n")
	kinds := ""
	for _, l := range got {
		kinds += l.Kind
	}
	if kinds != "@@@@-+ " {
		t.Fatalf("kinds = %q", kinds)
	}
	long := unifiedLines(strings.Repeat("+x\n", maxDiffLines+10))
	if len(long) != maxDiffLines+1 || !strings.Contains(long[maxDiffLines].Text, "more lines") {
		t.Fatalf("a long diff is not bounded: %d lines", len(long))
	}
	runs := liveFirst([]messages.RunState{{RunID: "1", Status: "ended"}, {RunID: "2", Status: "active"}, {RunID: "3", Status: "ended"}, {RunID: "4", Status: "active"}})
	order := ""
	for _, r := range runs {
		order += r.RunID
	}
	if order != "2413" {
		t.Fatalf("live first: %s", order)
	}
}

func TestDoneFlashEchoesOnlyKnownShapes(t *testing.T) {
	for _, tt := range []struct{ q, want string }{
		{"done=cancelled:job_abc123", "job_abc123 cancelled."},
		{"done=ended:run_lk3j2", "run_lk3j2 ended."},
		{"done=reverted:rcpt_abc_12", "rcpt_abc_12 reverted"},
		{"done=cancelled:<script>", ""},
		{"done=owned:job_abc", ""},
		{"done=ended:run_" + url.QueryEscape("x\u202ey"), ""},
	} {
		r := httptest.NewRequest("GET", "/ui/runs?"+tt.q, nil)
		if got := doneFlash(r); (tt.want == "" && got != "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.q, got, tt.want)
		}
	}
}
