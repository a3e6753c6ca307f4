package lease

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

const co = "c1"

// grant prepares and commits req at now, failing the test on error.
func grant(t *testing.T, tb *Table, req Request, now time.Time) Lease {
	t.Helper()
	l, err := tb.Prepare(req, now)
	if err != nil {
		t.Fatalf("Prepare(%v) = %v, want nil", req.Keys, err)
	}
	tb.Commit(l)
	if _, ok := tb.Get(l.ID); !ok {
		t.Fatalf("Commit(%s) did not record the lease", l.ID)
	}
	return l
}

func req(keys ...Key) Request {
	return Request{Owner: "agent-1", Operation: "apply_patch", Keys: keys}
}

func TestPrepareValidation(t *testing.T) {
	tests := []struct {
		name    string
		req     Request
		code    errs.Code
		wantTTL time.Duration
		wantVis Visibility
	}{
		{"default ttl and visibility", req(WorkspaceKey(co)), "", DefaultTTL, Ephemeral},
		{"min ttl", Request{Keys: []Key{WorkspaceKey(co)}, TTL: MinTTL, Visibility: Durable}, "", MinTTL, Durable},
		{"max ttl", Request{Keys: []Key{WorkspaceKey(co)}, TTL: MaxTTL}, "", MaxTTL, Ephemeral},
		{"ttl too short", Request{Keys: []Key{WorkspaceKey(co)}, TTL: 2 * time.Second}, errs.InvalidArgument, 0, ""},
		{"ttl too long", Request{Keys: []Key{WorkspaceKey(co)}, TTL: 121 * time.Second}, errs.InvalidArgument, 0, ""},
		{"negative ttl", Request{Keys: []Key{WorkspaceKey(co)}, TTL: -time.Second}, errs.InvalidArgument, 0, ""},
		{"no keys", Request{}, errs.InvalidArgument, 0, ""},
		{"bad key", req(Key("path:c1:../etc")), errs.InvalidArgument, 0, ""},
		{"bad visibility", Request{Keys: []Key{WorkspaceKey(co)}, Visibility: "public"}, errs.InvalidArgument, 0, ""},
		{"too many keys", Request{Keys: make([]Key, MaxKeys+1)}, errs.InvalidArgument, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := NewTable(nil)
			l, err := tb.Prepare(tt.req, t0)
			if tt.code != "" {
				if got := errs.CodeOf(err); got != tt.code {
					t.Fatalf("code = %q, want %q (err %v)", got, tt.code, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Prepare = %v, want nil", err)
			}
			if l.TTL != tt.wantTTL || !l.Expires.Equal(t0.Add(tt.wantTTL)) || !l.Granted.Equal(t0) {
				t.Fatalf("got ttl %v expires %v, want ttl %v expires %v", l.TTL, l.Expires, tt.wantTTL, t0.Add(tt.wantTTL))
			}
			if l.Visibility != tt.wantVis {
				t.Fatalf("got visibility %q, want %q", l.Visibility, tt.wantVis)
			}
			if len(tb.Leases()) != 0 || len(tb.HighWater()) != 0 {
				t.Fatalf("Prepare changed the table: %v %v", tb.Leases(), tb.HighWater())
			}
		})
	}
}

func TestPrepareNormalizesKeys(t *testing.T) {
	tb := NewTable(map[Key]uint64{GitHeadKey(co): 41})
	in := []Key{GitHeadKey(co), PathKey(co, "b"), PathKey(co, "a"), GitHeadKey(co)}
	l, err := tb.Prepare(req(in...), t0)
	if err != nil {
		t.Fatalf("Prepare = %v", err)
	}
	want := []Key{GitHeadKey(co), PathKey(co, "a"), PathKey(co, "b")}
	if strings.Join(keyStrings(l.Keys), ",") != strings.Join(keyStrings(want), ",") {
		t.Fatalf("got keys %v, want %v", l.Keys, want)
	}
	if got := l.Tokens[GitHeadKey(co)]; got != 42 {
		t.Fatalf("got head token %d, want 42", got)
	}
	if got := l.Tokens[PathKey(co, "a")]; got != 1 {
		t.Fatalf("got path token %d, want 1", got)
	}
	if !strings.HasPrefix(l.ID, "l-42-") || len(l.ID) != len("l-42-")+16 {
		t.Fatalf("got id %q, want l-42-<16 hex>", l.ID)
	}
	if in[0] != GitHeadKey(co) || in[1] != PathKey(co, "b") {
		t.Fatalf("Prepare modified the caller's key slice: %v", in)
	}
}

func keyStrings(ks []Key) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

func TestPrepareBusy(t *testing.T) {
	tests := []struct {
		name     string
		held     []Key
		heldAt   time.Time
		want     []Key
		at       time.Time
		wantBusy bool
	}{
		{"same path", []Key{PathKey(co, "a.go")}, t0, []Key{PathKey(co, "a.go")}, t0, true},
		{"dir above held", []Key{PathKey(co, "src/a.go")}, t0, []Key{PathKey(co, "src")}, t0, true},
		{"workspace held", []Key{WorkspaceKey(co)}, t0, []Key{GitIndexKey(co)}, t0, true},
		{"head held, ref wanted", []Key{GitHeadKey(co)}, t0, []Key{GitRefKey(co, "refs/heads/main")}, t0, true},
		{"disjoint paths", []Key{PathKey(co, "a.go")}, t0, []Key{PathKey(co, "b.go")}, t0, false},
		{"other checkout", []Key{WorkspaceKey(co)}, t0, []Key{WorkspaceKey("c2")}, t0, false},
		// The index has no clock: a recorded lease blocks until released,
		// also past its expiry (its holder ends it: TestHeldExpiry).
		{"recorded past its expiry", []Key{WorkspaceKey(co)}, t0, []Key{WorkspaceKey(co)}, t0.Add(DefaultTTL), true},
		{"live one ns before", []Key{WorkspaceKey(co)}, t0, []Key{WorkspaceKey(co)}, t0.Add(DefaultTTL - 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := NewTable(nil)
			h := grant(t, tb, Request{Owner: "job-7", Operation: "git_commit", Keys: tt.held}, tt.heldAt)
			_, err := tb.Prepare(req(tt.want...), tt.at)
			blocker := tb.Check(req(tt.want...))
			if !tt.wantBusy {
				if err != nil || blocker != nil {
					t.Fatalf("got err %v blocker %v, want grantable", err, blocker)
				}
				return
			}
			if blocker == nil || blocker.ID != h.ID {
				t.Fatalf("got blocker %v, want %s", blocker, h.ID)
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.MutationBusy {
				t.Fatalf("got err %v, want %s", err, errs.MutationBusy)
			}
			if !strings.Contains(e.Message, "git_commit") {
				t.Fatalf("message %q does not name the holder's operation", e.Message)
			}
			wantDetails := map[string]any{
				"holder_operation": "git_commit",
				"holder_owner":     "job-7",
				"lease_id":         h.ID,
				"expires_at":       h.Expires.UTC().Format(time.RFC3339Nano),
			}
			for k, v := range wantDetails {
				if e.Details[k] != v {
					t.Fatalf("details[%s] = %v, want %v", k, e.Details[k], v)
				}
			}
			// The returned blocker is a copy.
			blocker.Tokens[tt.held[0]] = 999
			if l, _ := tb.Get(h.ID); l.Tokens[tt.held[0]] == 999 {
				t.Fatalf("Check returned the table's own lease")
			}
		})
	}
}

func TestCommit(t *testing.T) {
	k := PathKey(co, "a.go")
	t.Run("raises high water and records", func(t *testing.T) {
		tb := NewTable(map[Key]uint64{k: 9})
		l, _ := tb.Prepare(req(k), t0)
		if hw := tb.HighWaterWith(l); hw[k] != 10 {
			t.Fatalf("HighWaterWith = %d, want 10", hw[k])
		}
		if tb.HighWater()[k] != 9 {
			t.Fatalf("Prepare raised high water to %d, want 9", tb.HighWater()[k])
		}
		tb.Commit(l)
		if got := tb.HighWater()[k]; got != 10 {
			t.Fatalf("got high water %d, want 10", got)
		}
		if !tb.Current(k, 10) {
			t.Fatalf("Current(k, 10) = false, want true")
		}
	})
	t.Run("stale token is not recorded", func(t *testing.T) {
		tb := NewTable(nil)
		a, _ := tb.Prepare(req(k), t0)
		b, _ := tb.Prepare(req(k), t0) // same token: the caller misused the table
		tb.Commit(a)
		tb.Commit(b)
		if _, ok := tb.Get(b.ID); ok && b.ID != a.ID {
			t.Fatalf("stale lease %s was recorded", b.ID)
		}
		if len(tb.Leases()) != 1 {
			t.Fatalf("got %d leases, want 1", len(tb.Leases()))
		}
	})
	t.Run("overlap committed meanwhile is not recorded", func(t *testing.T) {
		tb := NewTable(nil)
		a, _ := tb.Prepare(req(PathKey(co, "src")), t0)
		b, _ := tb.Prepare(req(PathKey(co, "src/a.go")), t0)
		tb.Commit(a)
		tb.Commit(b)
		if _, ok := tb.Get(b.ID); ok {
			t.Fatalf("overlapping lease %s was recorded", b.ID)
		}
		if got := tb.HighWater()[PathKey(co, "src/a.go")]; got != 1 {
			t.Fatalf("got high water %d, want 1 (marks still rise)", got)
		}
		if tb.Current(PathKey(co, "src/a.go"), 1) {
			t.Fatalf("Current for an unrecorded lease = true, want false")
		}
	})
	t.Run("malformed is ignored", func(t *testing.T) {
		tb := NewTable(nil)
		tb.Commit(Lease{})
		tb.Commit(Lease{ID: "x", Keys: []Key{"bad"}, Tokens: map[Key]uint64{"bad": 1}, Granted: t0, Expires: t0.Add(time.Second)})
		if len(tb.Leases()) != 0 || len(tb.HighWater()) != 0 {
			t.Fatalf("malformed commit changed the table")
		}
	})
	t.Run("fencing ignores later changes to the caller's lease", func(t *testing.T) {
		tb := NewTable(nil)
		l := grant(t, tb, req(k), t0)
		l.Tokens[k] = 77 // misuse: Commit keeps the map
		if !tb.Current(k, 1) || tb.Current(k, 77) {
			t.Fatalf("Current(k, 1), Current(k, 77) = %v, %v; want true, false", tb.Current(k, 1), tb.Current(k, 77))
		}
		if got := tb.HighWater()[k]; got != 1 {
			t.Fatalf("got high water %d, want 1", got)
		}
		got, _ := tb.Get(l.ID)
		got.Tokens[k] = 5
		if again, _ := tb.Get(l.ID); again.Tokens[k] != 77 {
			t.Fatalf("Get returned shared map: got %d after changing a copy", again.Tokens[k])
		}
	})
}

// Renewal and expiry belong to the lease's holder: TestHeldRenew and
// TestHeldExpiry in held_test.go.
func TestRelease(t *testing.T) {
	k := WorkspaceKey(co)
	t.Run("release twice", func(t *testing.T) {
		tb := NewTable(nil)
		l := grant(t, tb, req(k), t0)
		if got, ok := tb.Release(l.ID); !ok || got.ID != l.ID {
			t.Fatalf("first Release = %v, %v; want the lease, true", got.ID, ok)
		}
		if _, ok := tb.Release(l.ID); ok {
			t.Fatalf("second Release = true, want false")
		}
		if tb.Current(k, 1) {
			t.Fatalf("Current after release = true, want false")
		}
		// The key is free again and the next token is higher.
		if n := grant(t, tb, req(k), t0); n.Tokens[k] != 2 {
			t.Fatalf("got token %d, want 2", n.Tokens[k])
		}
	})
	t.Run("release of the expired one leaves the other", func(t *testing.T) {
		tb := NewTable(nil)
		a := grant(t, tb, Request{Keys: []Key{PathKey(co, "a")}, TTL: 5 * time.Second}, t0)
		b := grant(t, tb, Request{Keys: []Key{PathKey(co, "b")}, TTL: 10 * time.Second}, t0)
		ha, hb := Hold(a), Hold(b)
		for _, h := range []*Held{&ha, &hb} {
			if h.Expire(t0.Add(5 * time.Second)) {
				tb.Release(h.ID)
			}
		}
		if _, ok := tb.Get(a.ID); ok {
			t.Fatalf("expired lease still recorded")
		}
		if ls := tb.Leases(); len(ls) != 1 || ls[0].ID != b.ID {
			t.Fatalf("got leases %v, want [%s]", ls, b.ID)
		}
	})
}

// TestCurrent checks the fencing check a write site makes: the index's
// Current (the token is the newest of its key, its lease recorded) and the
// holder's Fence (the lease is live at the time given; zero = not asked).
func TestCurrent(t *testing.T) {
	k := PathKey(co, "a.go")
	other := PathKey(co, "b.go")
	tests := []struct {
		name  string
		setup func(tb *Table)
		key   Key
		token uint64
		at    time.Time // zero: only the index's Current
		want  bool
	}{
		{"newest live", func(tb *Table) {}, k, 1, time.Time{}, true},
		{"wrong token", func(tb *Table) {}, k, 2, time.Time{}, false},
		{"zero token", func(tb *Table) {}, k, 0, time.Time{}, false},
		{"other key", func(tb *Table) {}, other, 1, time.Time{}, false},
		{"after release", func(tb *Table) { tb.Release(tb.Leases()[0].ID) }, k, 1, time.Time{}, false},
		{"expired, not released", func(tb *Table) {}, k, 1, t0.Add(time.Hour), false},
		{"fenced before expiry", func(tb *Table) {}, k, 1, t0.Add(DefaultTTL - 1), true},
		{"fenced at expiry", func(tb *Table) {}, k, 1, t0.Add(DefaultTTL), false},
		{"superseded", func(tb *Table) {
			tb.Release(tb.Leases()[0].ID)
			l, _ := tb.Prepare(req(k), t0)
			tb.Commit(l)
		}, k, 1, time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := NewTable(nil)
			h := Hold(grant(t, tb, req(k), t0))
			tt.setup(tb)
			got := tb.Current(tt.key, tt.token)
			if !tt.at.IsZero() {
				got = got && h.Fence(tt.at) == nil
			}
			if got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRestore(t *testing.T) {
	k := WorkspaceKey(co)
	t.Run("durable lease survives restart", func(t *testing.T) {
		tb := NewTable(nil)
		l := grant(t, tb, Request{Keys: []Key{k}, Visibility: Durable, Operation: "job"}, t0)
		re := NewTable(tb.HighWater())
		re.Restore(l)
		h := Hold(l)
		if h.Expire(t0.Add(time.Second)) {
			t.Fatalf("restored live lease expired")
		}
		if !re.Current(k, 1) {
			t.Fatalf("Current after restore = false, want true")
		}
		if _, err := h.Renew(t0.Add(2 * time.Second)); err != nil {
			t.Fatalf("Renew after restore = %v", err)
		}
		if _, err := re.Prepare(req(PathKey(co, "x")), t0.Add(2*time.Second)); errs.CodeOf(err) != errs.MutationBusy {
			t.Fatalf("got %v, want %s", err, errs.MutationBusy)
		}
	})
	t.Run("token above high water raises it", func(t *testing.T) {
		re := NewTable(nil)
		re.Restore(Lease{ID: "l-5-x", Keys: []Key{k}, Tokens: map[Key]uint64{k: 5}, TTL: DefaultTTL, Granted: t0, Expires: t0.Add(DefaultTTL)})
		if got := re.HighWater()[k]; got != 5 {
			t.Fatalf("got high water %d, want 5", got)
		}
		re.Release("l-5-x")
		if n := grant(t, re, req(k), t0); n.Tokens[k] != 6 {
			t.Fatalf("got token %d, want 6", n.Tokens[k])
		}
	})
	t.Run("token below high water does not hold the key", func(t *testing.T) {
		re := NewTable(map[Key]uint64{k: 9})
		re.Restore(Lease{ID: "l-5-x", Keys: []Key{k}, Tokens: map[Key]uint64{k: 5}, TTL: DefaultTTL, Granted: t0, Expires: t0.Add(DefaultTTL)})
		if re.Current(k, 5) {
			t.Fatalf("Current(k, 5) = true with high water 9, want false")
		}
	})
	t.Run("newer of two overlapping wins", func(t *testing.T) {
		re := NewTable(nil)
		old := Lease{ID: "l-1-a", Keys: []Key{k}, Tokens: map[Key]uint64{k: 1}, TTL: DefaultTTL, Granted: t0, Expires: t0.Add(DefaultTTL)}
		newer := Lease{ID: "l-2-b", Keys: []Key{k}, Tokens: map[Key]uint64{k: 2}, TTL: DefaultTTL, Granted: t0.Add(time.Minute), Expires: t0.Add(time.Minute + DefaultTTL)}
		re.Restore(newer)
		re.Restore(old)
		if ls := re.Leases(); len(ls) != 1 || ls[0].ID != newer.ID {
			t.Fatalf("got %v, want only %s", ls, newer.ID)
		}
		re2 := NewTable(nil)
		re2.Restore(old)
		re2.Restore(newer)
		if ls := re2.Leases(); len(ls) != 1 || ls[0].ID != newer.ID {
			t.Fatalf("got %v, want only %s", ls, newer.ID)
		}
	})
	t.Run("malformed ignored", func(t *testing.T) {
		re := NewTable(nil)
		re.Restore(Lease{ID: "l", Keys: []Key{k}, Tokens: map[Key]uint64{k: 0}, Granted: t0, Expires: t0.Add(time.Second)})
		if len(re.Leases()) != 0 {
			t.Fatalf("malformed lease restored")
		}
	})
}

func TestLeaseIDsUnique(t *testing.T) {
	tb := NewTable(nil)
	seen := map[string]bool{}
	keys := []Key{PathKey(co, "a"), PathKey(co, "b"), GitIndexKey(co), GitHeadKey(co)}
	for i := 0; i < 200; i++ {
		for _, k := range keys {
			l := grant(t, tb, req(k), t0)
			if seen[l.ID] {
				t.Fatalf("lease id %s issued twice", l.ID)
			}
			seen[l.ID] = true
			tb.Release(l.ID)
		}
		// A restart in the middle must not reuse ids either.
		if i == 100 {
			tb = NewTable(tb.HighWater())
		}
	}
}

func BenchmarkPrepareCommitRelease(b *testing.B) {
	tb := NewTable(nil)
	// A few unrelated live leases, as in a busy checkout.
	for _, p := range []string{"docs", "cmd/x", "internal/y"} {
		l, _ := tb.Prepare(Request{Keys: []Key{PathKey(co, p)}, TTL: MaxTTL}, t0)
		tb.Commit(l)
	}
	r := Request{Owner: "agent", Operation: "apply_patch", Keys: []Key{PathKey(co, "src/main.go"), PathKey(co, "src/util.go")}}
	b.ReportAllocs()
	for b.Loop() {
		l, err := tb.Prepare(r, t0)
		if err != nil {
			b.Fatal(err)
		}
		tb.Commit(l)
		tb.Release(l.ID)
	}
}

func BenchmarkOverlaps(b *testing.B) {
	x, y := PathKey(co, "src/pkg/a.go"), PathKey(co, "src/pkg")
	for b.Loop() {
		if !Overlaps(x, y) {
			b.Fatal("want overlap")
		}
	}
}
