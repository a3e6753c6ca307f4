package ledger

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	hashA = "sha256:aaaa"
	hashB = "sha256:bbbb"
)

func TestValidateRequestID(t *testing.T) {
	tests := []struct {
		name string
		id   string
		code errs.Code
	}{
		{"simple", "req-1", ""},
		{"all classes", "Ab9._:/-", ""},
		{"uuid", "0b6f4f3e-6d0c-4f4e-9f8e-2f6a3b1c9d00", ""},
		{"max length", strings.Repeat("a", 255), ""},
		{"empty", "", errs.RequestIDRequired},
		{"too long", strings.Repeat("a", 256), errs.InvalidArgument},
		{"space", "a b", errs.InvalidArgument},
		{"newline", "a\n", errs.InvalidArgument},
		{"unicode", "réq", errs.InvalidArgument},
		{"quote", `a"b`, errs.InvalidArgument},
		{"plus", "a+b", errs.InvalidArgument},
		{"nul", "a\x00", errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errs.CodeOf(ValidateRequestID(tt.id)); got != tt.code {
				t.Fatalf("got code %q, want %q", got, tt.code)
			}
		})
	}
}

func TestBegin(t *testing.T) {
	entry := func(s State, hash string) *Entry {
		return &Entry{RequestID: "r1", Operation: "apply_patch", InputHash: hash, State: s,
			Result: json.RawMessage(`{"ok":true}`), Paths: []string{"old.go"}, Created: t0, Updated: t0}
	}
	failed := entry(StateFailed, hashA)
	failed.Result = nil
	failed.Error = json.RawMessage(`{"code":"PATCH_CONFLICT"}`)
	tests := []struct {
		name      string
		existing  *Entry
		id, op    string
		hash      string
		want      Decision
		code      errs.Code
		wantState State
	}{
		{"new", nil, "r1", "apply_patch", hashA, Proceed, "", StateExecuting},
		{"replay", entry(StateSucceeded, hashA), "r1", "apply_patch", hashA, Replay, "", StateSucceeded},
		{"conflict on succeeded", entry(StateSucceeded, hashA), "r1", "apply_patch", hashB, Conflict, errs.RequestConflict, StateSucceeded},
		{"conflict on executing", entry(StateExecuting, hashA), "r1", "apply_patch", hashB, Conflict, errs.RequestConflict, StateExecuting},
		{"conflict on failed", failed, "r1", "apply_patch", hashB, Conflict, errs.RequestConflict, StateFailed},
		{"conflict on other operation", entry(StateSucceeded, hashA), "r1", "git_commit", hashA, Conflict, errs.RequestConflict, StateSucceeded},
		{"in progress", entry(StateExecuting, hashA), "r1", "apply_patch", hashA, InProgress, errs.RequestInProgress, StateExecuting},
		{"retry failed", failed, "r1", "apply_patch", hashA, Proceed, "", StateExecuting},
		{"unknown", entry(StateUnknown, hashA), "r1", "apply_patch", hashA, Unknown, errs.RequestOutcomeUnknown, StateUnknown},
		{"empty id", nil, "", "apply_patch", hashA, 0, errs.RequestIDRequired, ""},
		{"bad id", nil, "r 1", "apply_patch", hashA, 0, errs.InvalidArgument, ""},
		{"no operation", nil, "r1", "", hashA, 0, errs.InvalidArgument, ""},
		{"no hash", nil, "r1", "apply_patch", "", 0, errs.InvalidArgument, ""},
		{"entry of another id", entry(StateSucceeded, hashA), "r2", "apply_patch", hashA, 0, errs.Internal, ""},
		{"corrupt state", entry("bogus", hashA), "r1", "apply_patch", hashA, 0, errs.Internal, "bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before Entry
			if tt.existing != nil {
				before = *tt.existing
			}
			now := t0.Add(time.Minute)
			paths := []string{"a.go", "b.go"}
			next, d, err := Begin(tt.existing, tt.id, tt.op, tt.hash, paths, now)
			if d != tt.want {
				t.Fatalf("got decision %v, want %v", d, tt.want)
			}
			if got := errs.CodeOf(err); got != tt.code {
				t.Fatalf("got code %q, want %q (err %v)", got, tt.code, err)
			}
			if next.State != tt.wantState {
				t.Fatalf("got state %q, want %q", next.State, tt.wantState)
			}
			if tt.existing != nil && (tt.existing.State != before.State || !tt.existing.Updated.Equal(before.Updated)) {
				t.Fatalf("Begin modified the existing entry")
			}
			if d != Proceed {
				return
			}
			if next.RequestID != tt.id || next.Operation != tt.op || next.InputHash != tt.hash {
				t.Fatalf("got entry %+v, want id/op/hash %s/%s/%s", next, tt.id, tt.op, tt.hash)
			}
			if !next.Updated.Equal(now) || next.Result != nil || next.Error != nil {
				t.Fatalf("got updated %v result %s error %s, want %v and none", next.Updated, next.Result, next.Error, now)
			}
			if strings.Join(next.Paths, ",") != "a.go,b.go" {
				t.Fatalf("got paths %v, want [a.go b.go]", next.Paths)
			}
			paths[0] = "changed"
			if next.Paths[0] != "a.go" {
				t.Fatalf("entry shares the caller's paths slice")
			}
			wantCreated := now
			if tt.existing != nil {
				wantCreated = tt.existing.Created
			}
			if !next.Created.Equal(wantCreated) {
				t.Fatalf("got created %v, want %v", next.Created, wantCreated)
			}
		})
	}
}

func TestBeginReplayKeepsResult(t *testing.T) {
	e := &Entry{RequestID: "r1", Operation: "op", InputHash: hashA, State: StateSucceeded, Result: json.RawMessage(`{"n":1}`)}
	next, d, err := Begin(e, "r1", "op", hashA, nil, t0)
	if err != nil || d != Replay || string(next.Result) != `{"n":1}` {
		t.Fatalf("got %s %v %v, want the stored result, Replay, nil", next.Result, d, err)
	}
}

func TestBeginUnknownDetails(t *testing.T) {
	e := &Entry{RequestID: "r1", Operation: "op", InputHash: hashA, State: StateUnknown, Paths: []string{"x.go"}}
	_, _, err := Begin(e, "r1", "op", hashA, nil, t0)
	var ce *errs.Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want *errs.Error", err)
	}
	if p, _ := ce.Details["paths"].([]string); len(p) != 1 || p[0] != "x.go" {
		t.Fatalf("got details %v, want paths [x.go]", ce.Details)
	}
}

func TestComplete(t *testing.T) {
	tests := []struct {
		name       string
		state      State
		result     any
		wantResult string
		wantErr    bool
	}{
		{"executing with struct", StateExecuting, struct {
			N int `json:"n"`
		}{3}, `{"n":3}`, false},
		{"executing with raw", StateExecuting, json.RawMessage(`{"a":1}`), `{"a":1}`, false},
		{"executing with nil", StateExecuting, nil, `null`, false},
		{"executing with invalid raw", StateExecuting, json.RawMessage(`{`), "", true},
		{"executing with unencodable", StateExecuting, make(chan int), "", true},
		{"already succeeded", StateSucceeded, 1, "", true},
		{"failed", StateFailed, 1, "", true},
		{"unknown", StateUnknown, 1, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Entry{RequestID: "r1", Operation: "op", InputHash: hashA, State: tt.state, Created: t0, Updated: t0}
			now := t0.Add(time.Second)
			got, err := Complete(e, tt.result, now)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got nil error, want one")
				}
				if errs.CodeOf(err) != errs.Internal {
					t.Fatalf("got code %q, want %q", errs.CodeOf(err), errs.Internal)
				}
				if got.State != tt.state || !got.Updated.Equal(t0) {
					t.Fatalf("entry changed on error: %+v", got)
				}
				if tt.state != StateExecuting && !errors.Is(err, ErrNotExecuting) {
					t.Fatalf("got %v, want ErrNotExecuting in the chain", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			if got.State != StateSucceeded || string(got.Result) != tt.wantResult || !got.Updated.Equal(now) {
				t.Fatalf("got %s %s %v, want succeeded %s %v", got.State, got.Result, got.Updated, tt.wantResult, now)
			}
		})
	}
}

func TestFail(t *testing.T) {
	tests := []struct {
		name     string
		state    State
		cause    error
		wantCode string
		wantErr  bool
	}{
		{"coded", StateExecuting, errs.New(errs.PatchConflict, "hunk 2 does not apply").With("path", "a.go"), "PATCH_CONFLICT", false},
		{"uncoded", StateExecuting, errors.New("boom"), "INTERNAL", false},
		{"nil cause", StateExecuting, nil, "INTERNAL", false},
		{"unencodable details", StateExecuting, errs.New(errs.Timeout, "slow").With("f", func() {}), "TIMEOUT", false},
		{"not executing", StateSucceeded, errors.New("x"), "", true},
		{"unknown", StateUnknown, errors.New("x"), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Entry{RequestID: "r1", State: tt.state, Result: json.RawMessage(`1`), Updated: t0}
			got, err := Fail(e, tt.cause, t0.Add(time.Second))
			if tt.wantErr {
				if !errors.Is(err, ErrNotExecuting) || got.State != tt.state {
					t.Fatalf("got %v state %s, want ErrNotExecuting and state %s", err, got.State, tt.state)
				}
				return
			}
			if err != nil || got.State != StateFailed || got.Result != nil {
				t.Fatalf("got %v state %s result %s, want nil, failed, no result", err, got.State, got.Result)
			}
			var stored errs.Error
			if err := json.Unmarshal(got.Error, &stored); err != nil {
				t.Fatalf("stored error %s does not decode: %v", got.Error, err)
			}
			if string(stored.Code) != tt.wantCode || stored.Message == "" {
				t.Fatalf("got stored %+v, want code %s and a message", stored, tt.wantCode)
			}
		})
	}
}

func TestMarkUnknown(t *testing.T) {
	tests := []struct {
		state   State
		want    State
		changed bool
	}{
		{StateExecuting, StateUnknown, true},
		{StateSucceeded, StateSucceeded, false},
		{StateFailed, StateFailed, false},
		{StateUnknown, StateUnknown, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.state), func(t *testing.T) {
			got, changed := MarkUnknown(Entry{State: tt.state, Updated: t0}, t0.Add(time.Hour))
			if got.State != tt.want || changed != tt.changed {
				t.Fatalf("got %s %v, want %s %v", got.State, changed, tt.want, tt.changed)
			}
			if changed != got.Updated.Equal(t0.Add(time.Hour)) {
				t.Fatalf("got updated %v, changed %v", got.Updated, changed)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	tests := []struct {
		name      string
		state     State
		updated   time.Time
		created   time.Time
		now       time.Time
		retention time.Duration
		want      bool
	}{
		{"succeeded fresh", StateSucceeded, t0, t0, t0.Add(time.Hour), 0, false},
		{"succeeded at default retention", StateSucceeded, t0, t0, t0.Add(24 * time.Hour), 0, true},
		{"failed just before", StateFailed, t0, t0, t0.Add(24*time.Hour - 1), 0, false},
		{"unknown old", StateUnknown, t0, t0, t0.Add(48 * time.Hour), 0, true},
		{"custom retention", StateSucceeded, t0, t0, t0.Add(2 * time.Hour), time.Hour, true},
		{"negative retention is default", StateSucceeded, t0, t0, t0.Add(2 * time.Hour), -time.Hour, false},
		{"executing never", StateExecuting, t0, t0, t0.Add(1000 * time.Hour), time.Hour, false},
		{"zero updated uses created", StateSucceeded, time.Time{}, t0, t0.Add(25 * time.Hour), 0, true},
		{"retention counts from update", StateSucceeded, t0.Add(20 * time.Hour), t0, t0.Add(25 * time.Hour), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Entry{State: tt.state, Created: tt.created, Updated: tt.updated}
			if got := Expired(e, tt.now, tt.retention); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	h, err := InputHash("apply_patch", map[string]any{"path": "a.go", "request_id": "r1"})
	if err != nil {
		t.Fatal(err)
	}
	e, d, err := Begin(nil, "r1", "apply_patch", h, []string{"a.go"}, t0)
	if err != nil || d != Proceed {
		t.Fatalf("Begin = %v %v, want Proceed", d, err)
	}
	e, err = Fail(e, errs.New(errs.PatchConflict, "stale"), t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	e, d, err = Begin(&e, "r1", "apply_patch", h, []string{"a.go"}, t0.Add(2*time.Second))
	if err != nil || d != Proceed || e.Error != nil {
		t.Fatalf("retry Begin = %v %v (error %s), want Proceed and a cleared error", d, err, e.Error)
	}
	e, err = Complete(e, map[string]int{"changed": 1}, t0.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Entry
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, d, err := Begin(&back, "r1", "apply_patch", h, nil, t0.Add(4*time.Second))
	if err != nil || d != Replay || string(got.Result) != `{"changed":1}` {
		t.Fatalf("replay after round trip = %s %v %v", got.Result, d, err)
	}
	if !strings.Contains(string(b), `"request_id":"r1"`) || !strings.Contains(string(b), `"state":"succeeded"`) {
		t.Fatalf("JSON form %s lacks snake_case fields", b)
	}
}

func TestDecisionString(t *testing.T) {
	tests := []struct {
		d    Decision
		want string
	}{
		{Proceed, "proceed"}, {Replay, "replay"}, {Conflict, "conflict"},
		{InProgress, "in_progress"}, {Unknown, "unknown"}, {0, "decision(0)"},
	}
	for _, tt := range tests {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func FuzzValidateRequestID(f *testing.F) {
	for _, s := range []string{"", "r1", "a b", strings.Repeat("x", 255), strings.Repeat("x", 256), "é", "a/b:c.d_e-f", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := ValidateRequestID(id)
		want := id != "" && len(id) <= MaxRequestIDLen
		for i := 0; i < len(id) && want; i++ {
			want = strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:/-", id[i]) >= 0
		}
		if (err == nil) != want {
			t.Fatalf("ValidateRequestID(%q) = %v, want valid=%v", id, err, want)
		}
		if err != nil {
			code := errs.CodeOf(err)
			if id == "" && code != errs.RequestIDRequired || id != "" && code != errs.InvalidArgument {
				t.Fatalf("ValidateRequestID(%q) code %s", id, code)
			}
			return
		}
		// A valid id is usable as a ledger key.
		if _, d, err := Begin(nil, id, "op", "sha256:x", nil, time.Time{}); err != nil || d != Proceed {
			t.Fatalf("Begin with valid id %q = %v %v", id, d, err)
		}
	})
}

func BenchmarkBegin(b *testing.B) {
	existing := &Entry{RequestID: "req-0b6f4f3e", Operation: "apply_patch", InputHash: hashA, State: StateSucceeded,
		Result: json.RawMessage(`{"ok":true}`), Created: t0, Updated: t0}
	paths := []string{"src/a.go", "src/b.go"}
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, d, _ := Begin(nil, "req-0b6f4f3e", "apply_patch", hashA, paths, t0); d != Proceed {
				b.Fatal(d)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, d, _ := Begin(existing, "req-0b6f4f3e", "apply_patch", hashA, paths, t0); d != Replay {
				b.Fatal(d)
			}
		}
	})
}

func TestAbandon(t *testing.T) {
	entry := func(s State, hash string) Entry {
		return Entry{RequestID: "r1", Operation: "apply_patch", InputHash: hash, State: s, Created: t0, Updated: t0}
	}
	tests := []struct {
		name       string
		e          Entry
		hash       string
		wantErr    bool
		notExecErr bool
	}{
		{"executing", entry(StateExecuting, hashA), hashA, false, false},
		{"another input", entry(StateExecuting, hashA), hashB, true, false},
		{"succeeded", entry(StateSucceeded, hashA), hashA, true, true},
		{"failed", entry(StateFailed, hashA), hashA, true, true},
		{"unknown", entry(StateUnknown, hashA), hashA, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Abandon(tt.e, tt.hash)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Abandon = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && errs.CodeOf(err) != errs.Internal {
				t.Fatalf("code = %s, want INTERNAL", errs.CodeOf(err))
			}
			if got := errors.Is(err, ErrNotExecuting); got != tt.notExecErr {
				t.Fatalf("errors.Is(err, ErrNotExecuting) = %v, want %v", got, tt.notExecErr)
			}
		})
	}
	// After an abandon the owner deletes the entry: the same request begins
	// anew, as if never seen.
	if _, d, err := Begin(nil, "r1", "apply_patch", hashA, nil, t0); err != nil || d != Proceed {
		t.Fatalf("Begin after abandon = %s, %v; want proceed", d, err)
	}
}
