package audit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// A GitHub-token-shaped secret the default redactor recognises.
var secret = "ghp_" + strings.Repeat("aB3", 12)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)

func sample(i int) Entry {
	return Entry{
		Time: t0.Add(time.Duration(i) * time.Second), Kind: KindMutation, Operation: "apply_patch",
		RepoID: "repo_1", RequestID: "req-" + strings.Repeat("x", i%3), Actor: "agent", Outcome: "succeeded",
		Reason: "patched", Risk: i, Paths: []string{"a.go", "b/c.go"}, FencingToken: uint64(i),
		Details: map[string]string{"files": "2", "z": "last"},
	}
}

// chain returns n sealed entries.
func chain(n int) []Entry {
	out := make([]Entry, 0, n)
	var prev Entry
	for i := range n {
		prev = Seal(prev, sample(i))
		out = append(out, prev)
	}
	return out
}

// source streams entries to Verify.
func source(es []Entry) func() (Entry, bool, error) {
	i := 0
	return func() (Entry, bool, error) {
		if i == len(es) {
			return Entry{}, false, nil
		}
		i++
		return es[i-1], true, nil
	}
}

func roundTrip(t testing.TB, e Entry) Entry {
	t.Helper()
	b, err := json.Marshal(messages.AuditEntry(e))
	if err != nil {
		t.Fatal(err)
	}
	var m messages.AuditEntry
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return Entry(m)
}

func TestSealChains(t *testing.T) {
	es := chain(3)
	tests := []struct {
		name     string
		e        Entry
		seq      uint64
		prevHash string
	}{
		{"first uses genesis", es[0], 1, Genesis},
		{"second follows first", es[1], 2, es[0].Hash},
		{"third follows second", es[2], 3, es[1].Hash},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.e.Seq != tt.seq {
				t.Errorf("seq = %d, want %d", tt.e.Seq, tt.seq)
			}
			if tt.e.PrevHash != tt.prevHash {
				t.Errorf("prev_hash = %q, want %q", tt.e.PrevHash, tt.prevHash)
			}
			if !strings.HasPrefix(tt.e.Hash, "sha256:") || len(tt.e.Hash) != len(Genesis) {
				t.Errorf("hash = %q, want sha256:<64 hex>", tt.e.Hash)
			}
			if got := tt.e.ComputeHash(); got != tt.e.Hash {
				t.Errorf("ComputeHash = %q, want %q", got, tt.e.Hash)
			}
		})
	}
}

func TestComputeHash(t *testing.T) {
	e := chain(1)[0]
	local := e
	local.Time = e.Time.In(time.FixedZone("X", 3600))
	tests := []struct {
		name string
		f    func(Entry) Entry
		same bool
	}{
		{"ignores Hash", func(e Entry) Entry { e.Hash = "sha256:other"; return e }, true},
		{"survives a JSON round trip", func(e Entry) Entry { return roundTrip(t, e) }, true},
		{"Details emptied", func(e Entry) Entry { e.Details = map[string]string{}; return e }, false},
		{"Reason", func(e Entry) Entry { e.Reason += "!"; return e }, false},
		{"Seq", func(e Entry) Entry { e.Seq++; return e }, false},
		{"PrevHash", func(e Entry) Entry { e.PrevHash = "sha256:x"; return e }, false},
		{"Time", func(e Entry) Entry { e.Time = e.Time.Add(time.Nanosecond); return e }, false},
		{"Paths order", func(e Entry) Entry { e.Paths = []string{"b/c.go", "a.go"}; return e }, false},
		{"Details value", func(e Entry) Entry {
			e.Details = map[string]string{"files": "3", "z": "last"}
			return e
		}, false},
		{"Risk", func(e Entry) Entry { e.Risk = 99; return e }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.f(e).ComputeHash()
			if (got == e.Hash) != tt.same {
				t.Errorf("hash after change = %s, original %s; want same = %v", got, e.Hash, tt.same)
			}
		})
	}
	// Empty and nil Details both encode as absent, so they must hash alike.
	a, b := Entry{Kind: KindJob}, Entry{Kind: KindJob, Details: map[string]string{}, Paths: []string{}}
	if a.ComputeHash() != b.ComputeHash() {
		t.Errorf("nil and empty collections hash differently: got %s and %s, want equal", a.ComputeHash(), b.ComputeHash())
	}
}

func TestPrepare(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.FixedZone("CEST", 7200))
	long := strings.Repeat("é", MaxReason) // 2 bytes per rune
	manyPaths := make([]string, MaxPaths+5)
	for i := range manyPaths {
		manyPaths[i] = "p"
	}
	manyDetails := map[string]string{}
	for i := range MaxDetails + 3 {
		manyDetails[string(rune('A'+i))] = "v"
	}
	tests := []struct {
		name    string
		in      Entry
		code    errs.Code
		check   func(t *testing.T, got Entry)
		wantErr bool
	}{
		{name: "no kind", in: Entry{}, code: errs.InvalidArgument},
		{name: "unknown kind", in: Entry{Kind: "mutatoin"}, code: errs.InvalidArgument},
		{name: "stamps time in UTC", in: Entry{Kind: KindAsk}, check: func(t *testing.T, got Entry) {
			if !got.Time.Equal(now) || got.Time.Location() != time.UTC {
				t.Errorf("time = %v, want %v in UTC", got.Time, now)
			}
		}},
		{name: "keeps caller time", in: Entry{Kind: KindAsk, Time: t0}, check: func(t *testing.T, got Entry) {
			if !got.Time.Equal(t0) {
				t.Errorf("time = %v, want %v", got.Time, t0)
			}
		}},
		{name: "clears chain fields", in: Entry{Kind: KindJob, Seq: 9, PrevHash: "x", Hash: "y"}, check: func(t *testing.T, got Entry) {
			if got.Seq != 0 || got.PrevHash != "" || got.Hash != "" {
				t.Errorf("chain fields = %d %q %q, want zero", got.Seq, got.PrevHash, got.Hash)
			}
		}},
		{name: "redacts reason and details, not paths", in: Entry{Kind: KindRejection, Reason: "token " + secret,
			Details: map[string]string{"cmd": "curl -H 'Authorization: Bearer abc123def456'"}, Paths: []string{secret}},
			check: func(t *testing.T, got Entry) {
				if strings.Contains(got.Reason, secret) || !strings.Contains(got.Reason, "[REDACTED:github-token]") {
					t.Errorf("reason = %q, want the token redacted", got.Reason)
				}
				if strings.Contains(got.Details["cmd"], "abc123def456") {
					t.Errorf("details[cmd] = %q, want the credentials redacted", got.Details["cmd"])
				}
				if got.Paths[0] != secret {
					t.Errorf("paths = %q, want them untouched", got.Paths)
				}
			}},
		{name: "truncates long reason on a rune boundary", in: Entry{Kind: KindCheck, Reason: long}, check: func(t *testing.T, got Entry) {
			if len(got.Reason) > MaxReason || !strings.HasSuffix(got.Reason, Truncated) || !utf8.ValidString(got.Reason) {
				t.Errorf("reason: %d bytes, valid %v, want <= %d ending in %q", len(got.Reason), utf8.ValidString(got.Reason), MaxReason, Truncated)
			}
		}},
		{name: "fixes invalid utf-8", in: Entry{Kind: KindCheck, Operation: "op\xff"}, check: func(t *testing.T, got Entry) {
			if got.Operation != "op\uFFFD" {
				t.Errorf("operation = %q, want %q", got.Operation, "op\uFFFD")
			}
		}},
		{name: "caps paths and details", in: Entry{Kind: KindMutation, Paths: manyPaths, Details: manyDetails}, check: func(t *testing.T, got Entry) {
			if len(got.Paths) != MaxPaths {
				t.Errorf("paths = %d, want %d", len(got.Paths), MaxPaths)
			}
			if got.Details["paths_dropped"] != "5" || got.Details["details_dropped"] != "3" {
				t.Errorf("dropped counters = %q, %q, want 5, 3", got.Details["paths_dropped"], got.Details["details_dropped"])
			}
			if len(got.Details) != MaxDetails+2 {
				t.Errorf("details = %d, want %d", len(got.Details), MaxDetails+2)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Prepare(tt.in, now)
			if tt.code != "" {
				if errs.CodeOf(err) != tt.code {
					t.Fatalf("err = %v, want %s", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			tt.check(t, got)
			// A prepared entry hashes the same before and after storage.
			s := Seal(Entry{}, got)
			if r := roundTrip(t, s); r.ComputeHash() != s.Hash {
				t.Errorf("stored form hashes to %s, want %s", r.ComputeHash(), s.Hash)
			}
		})
	}
}

func TestRedactDoesNotModifyCaller(t *testing.T) {
	d := map[string]string{"k": "password=hunter2hunter2"}
	got := Redact(Entry{Details: d})
	if d["k"] != "password=hunter2hunter2" {
		t.Errorf("caller's map = %q, want unchanged", d["k"])
	}
	if strings.Contains(got.Details["k"], "hunter2") {
		t.Errorf("redacted = %q, want the password gone", got.Details["k"])
	}
}

func TestVerify(t *testing.T) {
	es := chain(5)
	edit := func(i int, f func(*Entry)) []Entry {
		c := append([]Entry(nil), es...)
		f(&c[i])
		return c
	}
	drop := func(i int) []Entry { return append(append([]Entry(nil), es[:i]...), es[i+1:]...) }
	resealed := edit(2, func(e *Entry) { e.Reason = "quietly changed"; e.Hash = e.ComputeHash() })
	tests := []struct {
		name    string
		es      []Entry
		checked int
		brk     *Break
	}{
		{"empty", nil, 0, nil},
		{"intact", es, 5, nil},
		{"edited reason", edit(2, func(e *Entry) { e.Reason = "x" }), 3, &Break{3, "hash mismatch"}},
		{"edited details", edit(4, func(e *Entry) { e.Details = map[string]string{"files": "1", "z": "last"} }), 5, &Break{5, "hash mismatch"}},
		{"edited and re-hashed", resealed, 4, &Break{4, "prev_hash does not match entry 3"}},
		{"deleted middle", drop(2), 3, &Break{3, "sequence gap after 2"}},
		{"deleted first", drop(0), 1, &Break{1, "sequence gap after 0"}},
		{"swapped", []Entry{es[0], es[2], es[1]}, 2, &Break{2, "sequence gap after 1"}},
		{"duplicated", []Entry{es[0], es[1], es[1]}, 3, &Break{3, "sequence out of order after 2"}},
		{"seal ignores the hash of a zero prev", []Entry{Seal(Entry{Hash: "sha256:x"}, Entry{Kind: KindJob})}, 1, nil},
		{"forged genesis", edit(0, func(e *Entry) { e.PrevHash = ""; e.Hash = e.ComputeHash() }), 1, &Break{1, "prev_hash is not the genesis value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checked, brk, err := Verify(source(tt.es))
			if err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if checked != tt.checked {
				t.Errorf("checked = %d, want %d", checked, tt.checked)
			}
			if !reflect.DeepEqual(brk, tt.brk) {
				t.Errorf("break = %+v, want %+v", brk, tt.brk)
			}
		})
	}
}

func TestVerifySourceErrors(t *testing.T) {
	es := chain(3)
	boom := errors.New("disk on fire")
	tests := []struct {
		name    string
		failAt  int
		err     error
		checked int
		brk     *Break
		wantErr error
	}{
		{"undecodable record", 1, Undecodable(2), 2, &Break{2, "undecodable"}, nil},
		{"wrapped break", 2, errors.Join(errors.New("ctx"), &Break{3, "x"}), 3, &Break{3, "x"}, nil},
		{"store error", 1, boom, 1, nil, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := 0
			checked, brk, err := Verify(func() (Entry, bool, error) {
				if i == tt.failAt {
					return Entry{}, false, tt.err
				}
				i++
				return es[i-1], true, nil
			})
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if checked != tt.checked || !reflect.DeepEqual(brk, tt.brk) {
				t.Errorf("got checked %d, break %+v; want %d, %+v", checked, brk, tt.checked, tt.brk)
			}
		})
	}
}

func TestCheckHead(t *testing.T) {
	es := chain(3)
	tests := []struct {
		name string
		last Entry
		head Head
		want *Break
	}{
		{"empty log, empty head", Entry{}, Head{}, nil},
		{"at head", es[2], HeadOf(es[2]), nil},
		{"tail truncated", es[1], HeadOf(es[2]), &Break{3, "entries after 2 are missing (head is 3)"}},
		{"all deleted", Entry{}, HeadOf(es[2]), &Break{1, "entries after 0 are missing (head is 3)"}},
		{"beyond head", es[2], HeadOf(es[1]), &Break{3, "entries after the head 2"}},
		{"head hash differs", es[2], Head{Seq: 3, Hash: "sha256:x"}, &Break{3, "last entry does not match the head"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckHead(tt.last, tt.head); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFilterMatch(t *testing.T) {
	e := chain(4)[3] // seq 4, time t0+3s
	e.Kind, e.RepoID, e.Operation, e.RequestID = KindRejection, "repo_1", "run_command", "req-1"
	tests := []struct {
		name string
		f    Filter
		want bool
	}{
		{"zero filter", Filter{}, true},
		{"kind", Filter{Kind: KindRejection}, true},
		{"other kind", Filter{Kind: KindMutation}, false},
		{"repo", Filter{RepoID: "repo_1"}, true},
		{"other repo", Filter{RepoID: "repo_2"}, false},
		{"operation", Filter{Operation: "run_command"}, true},
		{"other operation", Filter{Operation: "read_file"}, false},
		{"request", Filter{RequestID: "req-1"}, true},
		{"other request", Filter{RequestID: "req-2"}, false},
		{"since equal is inclusive", Filter{Since: e.Time}, true},
		{"since after", Filter{Since: e.Time.Add(time.Nanosecond)}, false},
		{"until equal is exclusive", Filter{Until: e.Time}, false},
		{"until after", Filter{Until: e.Time.Add(time.Nanosecond)}, true},
		{"after seq below", Filter{AfterSeq: 3}, true},
		{"after seq equal", Filter{AfterSeq: 4}, false},
		{"all fields", Filter{Kind: KindRejection, RepoID: "repo_1", Operation: "run_command", RequestID: "req-1",
			Since: t0, Until: t0.Add(time.Hour), AfterSeq: 1, Limit: 1}, true},
		{"all but one", Filter{Kind: KindRejection, RepoID: "repo_1", Operation: "run_command", RequestID: "req-9"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Match(e); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFilterValidateAndLimit(t *testing.T) {
	tests := []struct {
		name  string
		f     Filter
		code  errs.Code
		limit int
	}{
		{"zero", Filter{}, "", DefaultLimit},
		{"limit", Filter{Limit: 7}, "", 7},
		{"max limit", Filter{Limit: MaxLimit}, "", MaxLimit},
		{"too large", Filter{Limit: MaxLimit + 1}, errs.InvalidArgument, MaxLimit},
		{"negative", Filter{Limit: -1}, errs.InvalidArgument, DefaultLimit},
		{"unknown kind", Filter{Kind: "nope"}, errs.InvalidArgument, DefaultLimit},
		{"until before since", Filter{Since: t0, Until: t0.Add(-time.Second)}, errs.InvalidArgument, DefaultLimit},
		{"until equals since", Filter{Since: t0, Until: t0}, errs.InvalidArgument, DefaultLimit},
		{"window", Filter{Since: t0, Until: t0.Add(time.Second)}, "", DefaultLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errs.CodeOf(tt.f.Validate()); got != tt.code {
				t.Errorf("Validate code = %q, want %q", got, tt.code)
			}
			if got := tt.f.EffectiveLimit(); got != tt.limit {
				t.Errorf("EffectiveLimit = %d, want %d", got, tt.limit)
			}
		})
	}
}

func TestFilterOfCoversQuery(t *testing.T) {
	q := messages.AuditQuery{Kind: KindJob, RepoID: "r", Operation: "o", RequestID: "q", Since: t0, Until: t0.Add(1),
		Limit: 3, AfterSeq: 9}
	if got, want := FilterOf(q), Filter(q); got != want {
		t.Errorf("FilterOf = %+v, want %+v", got, want)
	}
}

func TestKinds(t *testing.T) {
	for _, k := range Kinds() {
		if !KnownKind(k) {
			t.Errorf("KnownKind(%q) = false, want true", k)
		}
	}
	if KnownKind("") || KnownKind("Mutation") {
		t.Error("KnownKind accepts an unknown kind, want false")
	}
}
