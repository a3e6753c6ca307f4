package lease

import (
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// held grants req at t0 in a fresh table and returns its Held.
func held(t *testing.T, r Request) Held {
	t.Helper()
	return Hold(grant(t, NewTable(nil), r, t0))
}

// These cases were the table's renewals (TestRenewReleaseExpire) before the
// lease's own actor took its clock over: same times, same answers.
func TestHeldRenew(t *testing.T) {
	k := WorkspaceKey(co)
	tests := []struct {
		name      string
		renewAt   time.Duration // after grant; <0 means release first
		wantErr   errs.Code
		wantUntil time.Duration
	}{
		{"renew early", 10 * time.Second, "", 40 * time.Second},
		{"renew just before expiry", DefaultTTL - time.Nanosecond, "", 2*DefaultTTL - time.Nanosecond},
		{"renew at expiry", DefaultTTL, errs.LeaseLost, 0},
		{"renew after expiry", time.Hour, errs.LeaseLost, 0},
		{"renew after release", -1, errs.LeaseLost, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := held(t, req(k))
			at := t0.Add(tt.renewAt)
			if tt.renewAt < 0 {
				if !h.Release(t0) {
					t.Fatalf("Release = false, want true")
				}
				at = t0
			}
			got, err := h.Renew(at)
			if errs.CodeOf(err) != tt.wantErr {
				t.Fatalf("got err %v, want code %q", err, tt.wantErr)
			}
			if tt.wantErr == "" && (!got.Equal(t0.Add(tt.wantUntil)) || !h.Expires.Equal(got)) {
				t.Fatalf("got expires %v (held %v), want %v", got, h.Expires, t0.Add(tt.wantUntil))
			}
			if tt.wantErr != "" && errs.From(err).Details["lease_id"] != h.ID {
				t.Fatalf("LEASE_LOST details %v do not name the lease", errs.From(err).Details)
			}
		})
	}
	t.Run("never shortens", func(t *testing.T) {
		h := held(t, req(k))
		later, _ := h.Renew(t0.Add(20 * time.Second))
		if got, err := h.Renew(t0.Add(10 * time.Second)); err != nil || !got.Equal(later) {
			t.Fatalf("renew at an earlier time = %v, %v; want %v", got, err, later)
		}
	})
}

func TestHeldExpiry(t *testing.T) {
	t.Run("expires at exactly Expires", func(t *testing.T) {
		h := held(t, req(WorkspaceKey(co)))
		if h.Expire(t0.Add(DefaultTTL - 1)) {
			t.Fatalf("expired one ns before Expires")
		}
		if err := h.Fence(t0.Add(DefaultTTL - 1)); err != nil {
			t.Fatalf("Fence one ns before Expires = %v, want nil", err)
		}
		if err := h.Fence(t0.Add(DefaultTTL)); errs.CodeOf(err) != errs.LeaseLost {
			t.Fatalf("Fence at Expires = %v, want %s", err, errs.LeaseLost)
		}
		if !h.Expire(t0.Add(DefaultTTL)) || h.End != Expired || !h.Ended.Equal(t0.Add(DefaultTTL)) {
			t.Fatalf("Expire at Expires: end %q at %v, want expired at %v", h.End, h.Ended, t0.Add(DefaultTTL))
		}
		if h.Expire(t0.Add(time.Hour)) {
			t.Fatalf("a lease expired twice")
		}
		if h.Release(t0.Add(time.Hour)) {
			t.Fatalf("Release of an expired lease = true, want false")
		}
	})
	t.Run("each by its own TTL", func(t *testing.T) {
		a := held(t, Request{Keys: []Key{PathKey(co, "a")}, TTL: 5 * time.Second})
		b := held(t, Request{Keys: []Key{PathKey(co, "b")}, TTL: 10 * time.Second})
		if a.Expire(t0.Add(4*time.Second)) || b.Expire(t0.Add(4*time.Second)) {
			t.Fatalf("expired at +4s, want none")
		}
		if !a.Expire(t0.Add(5*time.Second)) || b.Expire(t0.Add(5*time.Second)) {
			t.Fatalf("at +5s: a %v b %v, want only a expired", a.End, b.End)
		}
	})
	t.Run("a renewed lease expires later", func(t *testing.T) {
		h := held(t, Request{Keys: []Key{PathKey(co, "a")}, TTL: 5 * time.Second})
		if _, err := h.Renew(t0.Add(4 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if h.Expire(t0.Add(8 * time.Second)) {
			t.Fatalf("expired before its renewed expiry")
		}
		if !h.Expire(t0.Add(9 * time.Second)) {
			t.Fatalf("not expired at its renewed expiry")
		}
	})
}

func TestHeldRelease(t *testing.T) {
	h := held(t, req(WorkspaceKey(co)))
	if !h.Release(t0.Add(time.Second)) || h.End != Released || h.Holding() {
		t.Fatalf("first Release: end %q holding %v, want released", h.End, h.Holding())
	}
	if h.Release(t0.Add(2 * time.Second)) {
		t.Fatalf("second Release = true, want false")
	}
	if err := h.Fence(t0.Add(time.Second)); errs.CodeOf(err) != errs.LeaseLost {
		t.Fatalf("Fence after release = %v, want %s", err, errs.LeaseLost)
	}
	if h.Expire(t0.Add(time.Hour)) || h.End != Released {
		t.Fatalf("a released lease expired: end %q", h.End)
	}
	// Past its expiry but not yet expired by its tick: released, as the
	// table released whatever it recorded.
	late := held(t, req(WorkspaceKey(co)))
	if !late.Release(t0.Add(time.Hour)) || late.End != Released {
		t.Fatalf("late Release: end %q, want released", late.End)
	}
}

// A restarted lease actor adopts its predecessor's state: the later expiry
// and the end, never an older expiry.
func TestHeldAdopt(t *testing.T) {
	k := WorkspaceKey(co)
	granted := held(t, Request{Keys: []Key{k}, TTL: 5 * time.Second})
	renewed := granted
	if _, err := renewed.Renew(t0.Add(4 * time.Second)); err != nil {
		t.Fatal(err)
	}
	fresh := Hold(granted.Lease)
	fresh.Adopt(renewed)
	if !fresh.Expires.Equal(renewed.Expires) {
		t.Fatalf("adopted expiry %v, want %v", fresh.Expires, renewed.Expires)
	}
	fresh.Adopt(granted) // older: no change
	if !fresh.Expires.Equal(renewed.Expires) || !fresh.Holding() {
		t.Fatalf("adopting an older state moved expiry to %v", fresh.Expires)
	}
	ended := renewed
	ended.Release(t0.Add(5 * time.Second))
	fresh.Adopt(ended)
	if fresh.End != Released || !fresh.Ended.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("adopted end %q at %v, want released at +5s", fresh.End, fresh.Ended)
	}
	other := held(t, Request{Keys: []Key{PathKey(co, "other")}})
	before := other
	other.Adopt(ended)
	if other.End != before.End || !other.Expires.Equal(before.Expires) {
		t.Fatalf("adopted the state of another lease")
	}
}

// Hold copies the lease: the Held's renewals never reach the caller's.
func TestHoldCopies(t *testing.T) {
	l := grant(t, NewTable(nil), req(WorkspaceKey(co)), t0)
	h := Hold(l)
	h.Keys[0] = "changed"
	h.Tokens[WorkspaceKey(co)] = 99
	if l.Keys[0] != WorkspaceKey(co) || l.Tokens[WorkspaceKey(co)] != 1 {
		t.Fatalf("Hold shares the lease's keys or tokens")
	}
}
