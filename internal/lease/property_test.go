package lease

import (
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

// model is what the property test expects the table to hold.
type model struct {
	tb       *Table
	clock    time.Time
	seen     time.Time                 // latest time the current table has observed
	leases   map[string]Lease          // recorded leases (live or awaiting Expire)
	lastTok  map[Key]uint64            // newest token issued per key, across restarts
	holderOf map[Key]map[uint64]string // key -> token -> lease id that got it
	ids      map[string]bool           // every id ever issued
}

func (m *model) touch() { m.seen = m.clock }

func (m *model) liveOverlap(keys []Key, now time.Time) bool {
	for _, l := range m.leases {
		if !l.Live(now) {
			continue
		}
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

func TestTableProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &model{
			tb:       NewTable(nil),
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
				m.touch()
				blocked := m.liveOverlap(keys, m.clock)
				if b := m.tb.Check(r, m.clock); (b != nil) != blocked {
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
				m.touch()
				l, ok := m.leases[id]
				got, err := m.tb.Renew(id, m.clock)
				if ok && l.Live(m.clock) {
					if err != nil {
						t.Fatalf("Renew(%s) = %v, want nil", id, err)
					}
					m.leases[id] = got
					return
				}
				if errs.CodeOf(err) != errs.LeaseLost {
					t.Fatalf("Renew(%s) = %v, want %s", id, err, errs.LeaseLost)
				}
			},
			"release": func(t *rapid.T) {
				id := m.pickID(t)
				_, want := m.leases[id]
				if _, ok := m.tb.Release(id); ok != want {
					t.Fatalf("Release(%s) = %v, want %v", id, ok, want)
				}
				delete(m.leases, id)
			},
			"expire": func(t *rapid.T) {
				m.touch()
				got := m.tb.Expire(m.clock)
				want := 0
				for id, l := range m.leases {
					if !l.Live(m.clock) {
						want++
						delete(m.leases, id)
					}
				}
				if len(got) != want {
					t.Fatalf("Expire removed %d leases, want %d", len(got), want)
				}
			},
			"advance": func(t *rapid.T) {
				d := rapid.Int64Range(0, int64(2*MaxTTL)).Draw(t, "advance")
				m.clock = m.clock.Add(time.Duration(d))
			},
			"restart": func(t *rapid.T) {
				old := m.tb
				m.tb = NewTable(old.HighWater())
				for _, l := range old.Leases() {
					if l.Visibility == Durable {
						m.tb.Restore(l)
					} else {
						delete(m.leases, l.ID)
					}
				}
				m.tb.Expire(m.clock)
				m.touch()
				for id, l := range m.leases {
					if !l.Live(m.clock) {
						delete(m.leases, id)
					}
				}
			},
			"": func(t *rapid.T) {
				ls := m.tb.Leases()
				if len(ls) != len(m.leases) {
					t.Fatalf("table has %d leases, model %d", len(ls), len(m.leases))
				}
				for i, a := range ls {
					if i > 0 && ls[i-1].ID >= a.ID {
						t.Fatalf("Leases not sorted: %s before %s", ls[i-1].ID, a.ID)
					}
					if _, ok := m.leases[a.ID]; !ok {
						t.Fatalf("table has lease %s the model does not", a.ID)
					}
					for _, b := range ls[i+1:] {
						if a.Live(m.clock) && b.Live(m.clock) {
							if x, y, ok := overlapAny(a.Keys, b.Keys); ok {
								t.Fatalf("live leases %s and %s overlap on %s / %s", a.ID, b.ID, x, y)
							}
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
						if want := newest && l.Live(m.seen); m.tb.Current(k, tok) != want {
							t.Fatalf("Current(%s, %d) = %v, want %v", k, tok, !want, want)
						}
						if want := newest && l.Live(m.clock); m.tb.CurrentAt(k, tok, m.clock) != want {
							t.Fatalf("CurrentAt(%s, %d) = %v, want %v", k, tok, !want, want)
						}
					}
				}
			},
		})
	})
}
