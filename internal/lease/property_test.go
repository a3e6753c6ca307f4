package lease

import (
	"slices"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"pgregory.net/rapid"
)

// universe is the small set of keys the property test draws from; it has
// nested paths, git keys that overlap through HEAD, and a second checkout.
var universe = []Key{
	WorkspaceKey("a"),
	PathKey("a", "src"),
	PathKey("a", "src/x.go"),
	PathKey("a", "src/y.go"),
	PathKey("a", "doc"),
	GitIndexKey("a"),
	GitHeadKey("a"),
	GitRefKey("a", "refs/heads/main"),
	GitRefKey("a", "refs/heads/main/sub"),
	PathKey("b", "src"),
	WorkspaceKey("b"),
}

// model is what the property test expects. Since the lease's own actor took
// its clock over, the test drives the pair the actors drive: the Table (the
// checkout's overlap index) and one Held per granted lease (each lease
// actor), releasing a lease from the Table when its Held ends, as the
// checkout does when a lease actor reports its end.
type model struct {
	tb       *Table
	held     map[string]*Held // the lease actors of the recorded leases
	clock    time.Time
	leases   map[string]Lease          // recorded leases, Expires as renewed
	lastTok  map[Key]uint64            // newest token issued per key, across restarts
	holderOf map[Key]map[uint64]string // key -> token -> lease id that got it
	ids      map[string]bool           // every id ever issued
}

func (m *model) recordedOverlap(keys []Key) bool {
	for _, l := range m.leases {
		if _, _, ok := overlapAny(l.Keys, keys); ok {
			return true
		}
	}
	return false
}

func (m *model) pickID(t *rapid.T) string {
	ids := []string{"l-0-nosuchlease"}
	for id := range m.leases {
		ids = append(ids, id)
	}
	// Sort for reproducible draws.
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	return rapid.SampledFrom(ids).Draw(t, "id")
}

// end releases id from the table once its holder ended it.
func (m *model) end(t *rapid.T, id string) {
	if _, ok := m.tb.Release(id); !ok {
		t.Fatalf("Release(%s) of an ended lease = false, want true", id)
	}
	delete(m.held, id)
	delete(m.leases, id)
}

func TestTableProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &model{
			tb:       NewTable(nil),
			held:     map[string]*Held{},
			clock:    t0,
			leases:   map[string]Lease{},
			lastTok:  map[Key]uint64{},
			holderOf: map[Key]map[uint64]string{},
			ids:      map[string]bool{},
		}
		t.Repeat(map[string]func(*rapid.T){
			"acquire": func(t *rapid.T) {
				keys := rapid.SliceOfNDistinct(rapid.SampledFrom(universe), 1, 3, func(k Key) Key { return k }).Draw(t, "keys")
				ttl := rapid.SampledFrom([]time.Duration{0, MinTTL, 10 * time.Second, MaxTTL}).Draw(t, "ttl")
				vis := rapid.SampledFrom([]Visibility{Ephemeral, Durable}).Draw(t, "vis")
				r := Request{Owner: "o", Operation: "op", Keys: keys, TTL: ttl, Visibility: vis}
				// A recorded lease blocks until its holder ended it, also
				// past its expiry: the index never overtakes a holder.
				blocked := m.recordedOverlap(keys)
				if b := m.tb.Check(r); (b != nil) != blocked {
					t.Fatalf("Check blocker %v, model blocked %v", b, blocked)
				}
				l, err := m.tb.Prepare(r, m.clock)
				if blocked {
					if errs.CodeOf(err) != errs.MutationBusy {
						t.Fatalf("Prepare err %v, want %s", err, errs.MutationBusy)
					}
					return
				}
				if err != nil {
					t.Fatalf("Prepare = %v, want a grant", err)
				}
				for _, k := range l.Keys {
					if tok := l.Tokens[k]; tok <= m.lastTok[k] {
						t.Fatalf("token %d for %s, but %d was issued before", tok, k, m.lastTok[k])
					}
				}
				if m.ids[l.ID] {
					t.Fatalf("lease id %s issued twice", l.ID)
				}
				m.tb.Commit(l)
				if _, ok := m.tb.Get(l.ID); !ok {
					t.Fatalf("Commit did not record %s", l.ID)
				}
				h := Hold(l)
				m.held[l.ID] = &h
				m.ids[l.ID] = true
				m.leases[l.ID] = l
				for _, k := range l.Keys {
					m.lastTok[k] = l.Tokens[k]
					if m.holderOf[k] == nil {
						m.holderOf[k] = map[uint64]string{}
					}
					m.holderOf[k][l.Tokens[k]] = l.ID
				}
			},
			"renew": func(t *rapid.T) {
				id := m.pickID(t)
				l, ok := m.leases[id]
				if !ok {
					return // no holder to ask: the checkout answers LEASE_LOST itself
				}
				got, err := m.held[id].Renew(m.clock)
				if l.Live(m.clock) {
					if err != nil {
						t.Fatalf("Renew(%s) = %v, want nil", id, err)
					}
					want := m.clock.Add(l.TTL)
					if l.Expires.After(want) {
						want = l.Expires
					}
					if !got.Equal(want) {
						t.Fatalf("Renew(%s) until %v, want %v", id, got, want)
					}
					l.Expires = got
					m.leases[id] = l
					return
				}
				if errs.CodeOf(err) != errs.LeaseLost {
					t.Fatalf("Renew(%s) = %v, want %s", id, err, errs.LeaseLost)
				}
			},
			"release": func(t *rapid.T) {
				id := m.pickID(t)
				_, want := m.leases[id]
				if h := m.held[id]; h != nil {
					if !h.Release(m.clock) {
						t.Fatalf("holder of %s: Release = false, want true", id)
					}
				}
				if _, ok := m.tb.Release(id); ok != want {
					t.Fatalf("Release(%s) = %v, want %v", id, ok, want)
				}
				delete(m.held, id)
				delete(m.leases, id)
			},
			"expire": func(t *rapid.T) {
				// Every lease actor ticks at the same time.
				want := 0
				for _, l := range m.leases {
					if !l.Live(m.clock) {
						want++
					}
				}
				got := 0
				for _, id := range sortedIDs(m.held) {
					if m.held[id].Expire(m.clock) {
						got++
						m.end(t, id)
					}
				}
				if got != want {
					t.Fatalf("holders expired %d leases, want %d", got, want)
				}
			},
			"advance": func(t *rapid.T) {
				d := rapid.Int64Range(0, int64(2*MaxTTL)).Draw(t, "advance")
				m.clock = m.clock.Add(time.Duration(d))
			},
			"restart": func(t *rapid.T) {
				// The durable leases come back as their holders last
				// persisted them (each renewal); those expired meanwhile
				// are not restored.
				old, holders := m.tb, m.held
				m.tb, m.held = NewTable(old.HighWater()), map[string]*Held{}
				for _, l := range old.Leases() {
					cur := holders[l.ID].Lease
					if l.Visibility != Durable || !cur.Live(m.clock) {
						delete(m.leases, l.ID)
						continue
					}
					m.tb.Restore(cur)
					h := Hold(cur)
					m.held[l.ID] = &h
				}
			},
			"": func(t *rapid.T) {
				ls := m.tb.Leases()
				if len(ls) != len(m.leases) || len(m.held) != len(m.leases) {
					t.Fatalf("table has %d leases and %d holders, model %d", len(ls), len(m.held), len(m.leases))
				}
				for i, a := range ls {
					if i > 0 && ls[i-1].ID >= a.ID {
						t.Fatalf("Leases not sorted: %s before %s", ls[i-1].ID, a.ID)
					}
					if _, ok := m.leases[a.ID]; !ok {
						t.Fatalf("table has lease %s the model does not", a.ID)
					}
					for _, b := range ls[i+1:] {
						if x, y, ok := overlapAny(a.Keys, b.Keys); ok {
							t.Fatalf("recorded leases %s and %s overlap on %s / %s", a.ID, b.ID, x, y)
						}
					}
				}
				hw := m.tb.HighWater()
				for _, k := range universe {
					if hw[k] != m.lastTok[k] {
						t.Fatalf("high water of %s = %d, want %d", k, hw[k], m.lastTok[k])
					}
					for tok := uint64(0); tok <= m.lastTok[k]+1; tok++ {
						id, issued := m.holderOf[k][tok]
						l, recorded := m.leases[id]
						newest := issued && tok == m.lastTok[k] && recorded
						if m.tb.Current(k, tok) != newest {
							t.Fatalf("Current(%s, %d) = %v, want %v", k, tok, !newest, newest)
						}
						// A write site's whole check: the index's token and
						// the holder's liveness.
						fenced := m.tb.Current(k, tok) && m.held[id].Fence(m.clock) == nil
						if want := newest && l.Live(m.clock); fenced != want {
							t.Fatalf("fence of (%s, %d) = %v, want %v", k, tok, fenced, want)
						}
					}
				}
			},
		})
	})
}

func sortedIDs(m map[string]*Held) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
