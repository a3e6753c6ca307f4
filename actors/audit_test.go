package actors

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

var auditT0 = time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)

// A GitHub-token-shaped secret the default redactor recognises.
var auditSecret = "ghp_" + strings.Repeat("Zq7", 12)

// quietAudit never flushes on its own: only BatchSize, kicks and explicit
// flushes persist, so tests decide when writes happen.
var quietAudit = AuditConfig{BatchSize: 64, FlushEvery: time.Hour, Now: func() time.Time { return auditT0 }}

func spawnAudit(t testing.TB, s *actor.ActorSystem, prod actor.Producer) *actor.PID {
	t.Helper()
	lg := zap.NewNop()
	props := actor.PropsFromProducer(func() actor.Actor { return crashOn{prod()} }, actor.WithReceiverMiddleware(Recover(lg)))
	pid := s.Root.Spawn(props)
	// ActorSystem.Shutdown stops no actor: stop it so its ticker ends.
	t.Cleanup(func() { _ = s.Root.PoisonFuture(pid).Wait() })
	return pid
}

func stopAudit(t testing.TB, s *actor.ActorSystem, pid *actor.PID) {
	t.Helper()
	if err := s.Root.PoisonFuture(pid).Wait(); err != nil {
		t.Fatalf("stop audit: %v", err)
	}
}

func auditEntry(i int) messages.AuditEntry {
	return messages.AuditEntry{Kind: audit.KindMutation, Operation: "apply_patch", RepoID: "repo_1",
		RequestID: "req-" + strconv.Itoa(i), Actor: "agent", Outcome: "succeeded", Reason: "entry " + strconv.Itoa(i)}
}

// storedAudit returns every entry in the store, in key order.
func storedAudit(t *testing.T, st *persistence.Store) []messages.AuditEntry {
	t.Helper()
	var out []messages.AuditEntry
	err := st.Scan([]byte(persistence.PrefixAudit), func(_ []byte, decode func(any) error) error {
		var m messages.AuditEntry
		if err := decode(&m); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func appendSync(t *testing.T, s *actor.ActorSystem, pid *actor.PID, e messages.AuditEntry) messages.AuditAppended {
	t.Helper()
	return want[messages.AuditAppended](t, request(t, s, pid, messages.AuditAppend{Entry: e}))
}

func verifyAudit(t *testing.T, s *actor.ActorSystem, pid *actor.PID) messages.AuditVerified {
	t.Helper()
	return want[messages.AuditVerified](t, request(t, s, pid, messages.AuditVerify{}))
}

func TestAuditAppendPersistsAndChains(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))

	const n = 100
	futures := map[int]*actor.Future{}
	for i := range n {
		msg := messages.AuditAppend{Entry: auditEntry(i)}
		if i%3 == 0 {
			futures[i] = s.Root.RequestFuture(pid, msg, 10*time.Second)
		} else {
			s.Root.Send(pid, msg)
		}
	}
	for i, f := range futures {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		got := want[messages.AuditAppended](t, res)
		if got.Seq != uint64(i+1) || !strings.HasPrefix(got.Hash, "sha256:") {
			t.Errorf("append %d = %+v, want seq %d and a hash", i, got, i+1)
		}
	}
	want[messages.AuditFlushed](t, request(t, s, pid, messages.AuditFlush{}))

	es := storedAudit(t, st)
	if len(es) != n {
		t.Fatalf("stored %d entries, want %d", len(es), n)
	}
	for i, e := range es {
		if e.Seq != uint64(i+1) || e.RequestID != "req-"+strconv.Itoa(i) || !e.Time.Equal(auditT0) {
			t.Fatalf("entry %d = seq %d, request %q, time %v; want seq %d, req-%d, %v", i, e.Seq, e.RequestID, e.Time, i+1, i, auditT0)
		}
	}
	var head audit.Head
	if err := st.Get(AuditHeadKey, &head); err != nil || head != (audit.Head{Seq: n, Hash: es[n-1].Hash}) {
		t.Fatalf("head = %+v, %v; want {%d %s}", head, err, n, es[n-1].Hash)
	}
	if v := verifyAudit(t, s, pid); !v.OK || v.Checked != n {
		t.Fatalf("verify = %+v, want OK with %d checked", v, n)
	}
}

func TestAuditRestartContinuesChain(t *testing.T) {
	tests := []struct {
		name    string
		restart func(t *testing.T, s *actor.ActorSystem, st *persistence.Store, pid *actor.PID) *actor.PID
	}{
		{"stop and spawn again", func(t *testing.T, s *actor.ActorSystem, st *persistence.Store, pid *actor.PID) *actor.PID {
			stopAudit(t, s, pid)
			return spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
		}},
		{"head record lost", func(t *testing.T, s *actor.ActorSystem, st *persistence.Store, pid *actor.PID) *actor.PID {
			stopAudit(t, s, pid)
			if err := st.DeleteSync(AuditHeadKey); err != nil {
				t.Fatal(err)
			}
			return spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
		}},
		{"head record stale", func(t *testing.T, s *actor.ActorSystem, st *persistence.Store, pid *actor.PID) *actor.PID {
			stopAudit(t, s, pid)
			if err := st.PutSync(AuditHeadKey, audit.Head{Seq: 2, Hash: "sha256:x"}); err != nil {
				t.Fatal(err)
			}
			return spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
		}},
		{"panic and supervisor restart", func(t *testing.T, s *actor.ActorSystem, _ *persistence.Store, pid *actor.PID) *actor.PID {
			f := want[messages.Failed](t, request(t, s, pid, crash{}))
			if errs.CodeOf(ErrorOf(f)) != errs.Internal {
				t.Fatalf("crash reply = %v, want INTERNAL", ErrorOf(f))
			}
			return pid
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st := newTestSystem(t), newStore(t)
			pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
			for i := range 4 {
				appendSync(t, s, pid, auditEntry(i))
			}
			// Buffered only: the stop (or restart) must flush it.
			s.Root.Send(pid, messages.AuditAppend{Entry: auditEntry(4)})

			pid = tt.restart(t, s, st, pid)
			got := appendSync(t, s, pid, auditEntry(5))
			if got.Seq != 6 {
				t.Fatalf("seq after restart = %d, want 6", got.Seq)
			}
			es := storedAudit(t, st)
			if len(es) != 6 || es[5].PrevHash != es[4].Hash || es[4].RequestID != "req-4" {
				t.Fatalf("stored %d entries, last prev_hash %q; want 6 chained onto %q", len(es), es[len(es)-1].PrevHash, es[4].Hash)
			}
			if v := verifyAudit(t, s, pid); !v.OK || v.Checked != 6 {
				t.Fatalf("verify = %+v, want OK with 6 checked", v)
			}
		})
	}
}

func TestAuditVerifyDetectsTampering(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(tx *persistence.Txn, es []messages.AuditEntry) error
		seq    uint64
		reason string
	}{
		{"edited reason", func(tx *persistence.Txn, es []messages.AuditEntry) error {
			e := es[3]
			e.Reason = "nothing to see here"
			return tx.Put(persistence.AuditKey(e.Seq), e)
		}, 4, "hash mismatch"},
		{"edited and re-hashed", func(tx *persistence.Txn, es []messages.AuditEntry) error {
			e := audit.Entry(es[6])
			e.Outcome = "failed"
			e.Hash = e.ComputeHash()
			return tx.Put(persistence.AuditKey(e.Seq), messages.AuditEntry(e))
		}, 8, "prev_hash does not match entry 7"},
		{"deleted entry", func(tx *persistence.Txn, _ []messages.AuditEntry) error {
			return tx.Delete(persistence.AuditKey(6))
		}, 6, "sequence gap after 5"},
		{"deleted first entry", func(tx *persistence.Txn, _ []messages.AuditEntry) error {
			return tx.Delete(persistence.AuditKey(1))
		}, 1, "sequence gap after 0"},
		{"truncated tail", func(tx *persistence.Txn, _ []messages.AuditEntry) error {
			if err := tx.Delete(persistence.AuditKey(10)); err != nil {
				return err
			}
			return tx.Put(AuditHeadKey, audit.Head{Seq: 9})
		}, 10, "entries after 9 are missing (head is 10)"},
		{"garbage record", func(tx *persistence.Txn, _ []messages.AuditEntry) error {
			return tx.Put(persistence.AuditKey(5), "garbage")
		}, 5, "undecodable"},
		{"entry moved to another key", func(tx *persistence.Txn, es []messages.AuditEntry) error {
			return tx.Put(persistence.AuditKey(3), es[1])
		}, 3, "entry 2 stored under this seq"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st := newTestSystem(t), newStore(t)
			pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
			for i := range 10 {
				appendSync(t, s, pid, auditEntry(i))
			}
			es := storedAudit(t, st)
			if err := st.Update(true, func(tx *persistence.Txn) error { return tt.tamper(tx, es) }); err != nil {
				t.Fatal(err)
			}
			v := verifyAudit(t, s, pid)
			if v.OK || v.BrokenSeq != tt.seq || v.BrokenReason != tt.reason {
				t.Fatalf("verify = %+v, want broken at %d: %q", v, tt.seq, tt.reason)
			}
		})
	}
}

func TestAuditRedactsBeforeStoring(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
	e := auditEntry(0)
	e.Reason = "push failed: remote said token " + auditSecret + " is invalid"
	e.Details = map[string]string{"stderr": "fatal: https://bot:" + auditSecret + "@example.com"}
	appendSync(t, s, pid, e)

	err := st.ScanRaw(nil, func(key, value []byte) error {
		if bytes.Contains(value, []byte(auditSecret)) || bytes.Contains(value, []byte(auditSecret[4:])) {
			t.Errorf("secret reached the store under %s: %s", persistence.Readable(key), value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := want[messages.AuditEntries](t, request(t, s, pid, messages.AuditQuery{}))
	if len(got.Entries) != 1 || !strings.Contains(got.Entries[0].Reason, "[REDACTED:github-token]") {
		t.Fatalf("query = %+v, want one entry with a redacted reason", got.Entries)
	}
	if v := verifyAudit(t, s, pid); !v.OK {
		t.Fatalf("verify = %+v, want OK", v)
	}
}

func TestAuditQuery(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
	kinds := []audit.Kind{audit.KindMutation, audit.KindRejection, audit.KindAsk}
	for i := range 30 {
		e := auditEntry(i)
		e.Kind = kinds[i%3]
		e.RepoID = "repo_" + strconv.Itoa(i%2)
		e.Time = auditT0.Add(time.Duration(i) * time.Minute)
		if i%5 == 0 {
			e.Operation = "run_command"
		}
		s.Root.Send(pid, messages.AuditAppend{Entry: e}) // the query flushes first
	}
	seqs := func(es []messages.AuditEntry) []uint64 {
		out := []uint64{}
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return out
	}
	tests := []struct {
		name string
		q    messages.AuditQuery
		want []uint64
		more bool
	}{
		{"kind and repo", messages.AuditQuery{Kind: audit.KindAsk, RepoID: "repo_1"}, []uint64{6, 12, 18, 24, 30}, false},
		{"operation", messages.AuditQuery{Operation: "run_command"}, []uint64{1, 6, 11, 16, 21, 26}, false},
		{"request", messages.AuditQuery{RequestID: "req-7"}, []uint64{8}, false},
		{"time window", messages.AuditQuery{Since: auditT0.Add(10 * time.Minute), Until: auditT0.Add(13 * time.Minute)}, []uint64{11, 12, 13}, false},
		{"limit", messages.AuditQuery{Limit: 3}, []uint64{1, 2, 3}, true},
		{"next page", messages.AuditQuery{Limit: 3, AfterSeq: 3}, []uint64{4, 5, 6}, true},
		{"last page exactly full", messages.AuditQuery{Limit: 3, AfterSeq: 27}, []uint64{28, 29, 30}, false},
		{"page with filter", messages.AuditQuery{Kind: audit.KindMutation, Limit: 2, AfterSeq: 10}, []uint64{13, 16}, true},
		{"nothing", messages.AuditQuery{RepoID: "repo_9"}, []uint64{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := want[messages.AuditEntries](t, request(t, s, pid, tt.q))
			if g := seqs(got.Entries); !equalSeqs(g, tt.want) || got.More != tt.more {
				t.Errorf("got %v more=%v, want %v more=%v", g, got.More, tt.want, tt.more)
			}
		})
	}
	bad := []messages.AuditQuery{{Limit: -1}, {Limit: audit.MaxLimit + 1}, {Kind: "nope"}, {Since: auditT0, Until: auditT0}}
	for _, q := range bad {
		f := want[messages.Failed](t, request(t, s, pid, q))
		if errs.CodeOf(ErrorOf(f)) != errs.InvalidArgument {
			t.Errorf("query %+v: got %v, want INVALID_ARGUMENT", q, ErrorOf(f))
		}
	}
}

func equalSeqs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAuditRejectsBadEntries(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
	for _, k := range []audit.Kind{"", "mutatoin"} {
		f := want[messages.Failed](t, request(t, s, pid, messages.AuditAppend{Entry: messages.AuditEntry{Kind: k}}))
		if errs.CodeOf(ErrorOf(f)) != errs.InvalidArgument {
			t.Errorf("kind %q: got %v, want INVALID_ARGUMENT", k, ErrorOf(f))
		}
	}
	s.Root.Send(pid, messages.AuditAppend{}) // fire-and-forget: logged, dropped
	// Caller-supplied chain fields are ignored; no seq was consumed.
	e := auditEntry(0)
	e.Seq, e.PrevHash, e.Hash = 77, "sha256:forged", "sha256:forged"
	if got := appendSync(t, s, pid, e); got.Seq != 1 {
		t.Fatalf("seq = %d, want 1", got.Seq)
	}
	if v := verifyAudit(t, s, pid); !v.OK || v.Checked != 1 {
		t.Fatalf("verify = %+v, want OK with 1 checked", v)
	}
}

func TestAuditFlushTriggers(t *testing.T) {
	t.Run("batch size", func(t *testing.T) {
		s, st := newTestSystem(t), newStore(t)
		cfg := quietAudit
		cfg.BatchSize = 5
		pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), cfg))
		for i := range 4 {
			s.Root.Send(pid, messages.AuditAppend{Entry: auditEntry(i)})
		}
		want[messages.Pong](t, request(t, s, pid, messages.Ping{}))
		if n := len(storedAudit(t, st)); n != 0 {
			t.Fatalf("stored %d entries below the batch size, want 0", n)
		}
		s.Root.Send(pid, messages.AuditAppend{Entry: auditEntry(4)})
		want[messages.Pong](t, request(t, s, pid, messages.Ping{}))
		if n := len(storedAudit(t, st)); n != 5 {
			t.Fatalf("stored %d entries at the batch size, want 5", n)
		}
	})
	t.Run("tick", func(t *testing.T) {
		s, st := newTestSystem(t), newStore(t)
		cfg := quietAudit
		cfg.BatchSize, cfg.FlushEvery = 1000, 5*time.Millisecond
		pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), cfg))
		s.Root.Send(pid, messages.AuditAppend{Entry: auditEntry(0)})
		deadline := time.Now().Add(5 * time.Second)
		for len(storedAudit(t, st)) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("tick did not flush within 5s")
			}
			pollPause()
		}
	})
}

// pollPause is the interval of a deadline-bounded poll.
func pollPause() { <-time.After(time.Millisecond) }

func TestAuditFlushFailureKeepsEntries(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	cfg := quietAudit
	cfg.BatchSize, cfg.MaxPending = 2, 3
	a := newAudit(st, zap.NewNop(), cfg)
	var failing atomic.Bool
	failing.Store(true)
	write := a.persist
	a.persist = func(batch []pendingAudit, head audit.Head) error {
		if failing.Load() {
			return errors.New("disk full")
		}
		return write(batch, head)
	}
	pid := spawnAudit(t, s, func() actor.Actor { return a })

	for i := range 2 {
		f := want[messages.Failed](t, request(t, s, pid, messages.AuditAppend{Entry: auditEntry(i)}))
		if errs.CodeOf(ErrorOf(f)) != errs.Unavailable {
			t.Fatalf("append %d during failure: got %v, want UNAVAILABLE", i, ErrorOf(f))
		}
	}
	s.Root.Send(pid, messages.AuditAppend{Entry: auditEntry(2)})
	f := want[messages.Failed](t, request(t, s, pid, messages.AuditAppend{Entry: auditEntry(3)}))
	if errs.CodeOf(ErrorOf(f)) != errs.Unavailable || !strings.Contains(ErrorOf(f).Error(), "not accepting") {
		t.Fatalf("append beyond MaxPending: got %v, want UNAVAILABLE not accepting", ErrorOf(f))
	}
	if f := want[messages.Failed](t, request(t, s, pid, messages.AuditVerify{})); errs.CodeOf(ErrorOf(f)) != errs.Unavailable {
		t.Fatalf("verify during failure: got %v, want UNAVAILABLE", ErrorOf(f))
	}

	failing.Store(false)
	want[messages.AuditFlushed](t, request(t, s, pid, messages.AuditFlush{}))
	es := storedAudit(t, st)
	if len(es) != 3 || es[2].RequestID != "req-2" {
		t.Fatalf("stored %d entries after recovery, want the 3 buffered ones", len(es))
	}
	if got := appendSync(t, s, pid, auditEntry(4)); got.Seq != 4 {
		t.Fatalf("seq after recovery = %d, want 4", got.Seq)
	}
	if v := verifyAudit(t, s, pid); !v.OK || v.Checked != 4 {
		t.Fatalf("verify = %+v, want OK with 4 checked", v)
	}
}

func TestAuditChunksLargeFlushes(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	cfg := quietAudit
	cfg.BatchSize = 500
	a := newAudit(st, zap.NewNop(), cfg)
	var batches []int // touched only by the actor; read after a reply
	write := a.persist
	a.persist = func(batch []pendingAudit, head audit.Head) error {
		batches = append(batches, len(batch))
		return write(batch, head)
	}
	pid := spawnAudit(t, s, func() actor.Actor { return a })
	big := strings.Repeat("r", audit.MaxReason-100) // estimated at 6 bytes each
	for i := range 120 {
		e := auditEntry(i)
		e.Reason = big
		s.Root.Send(pid, messages.AuditAppend{Entry: e})
	}
	want[messages.AuditFlushed](t, request(t, s, pid, messages.AuditFlush{}))
	if len(batches) < 3 {
		t.Fatalf("flushed in batches %v, want at least 3 under the %d-byte transaction bound", batches, maxTxnBytes)
	}
	if n := len(storedAudit(t, st)); n != 120 {
		t.Fatalf("stored %d entries, want 120", n)
	}
	if v := verifyAudit(t, s, pid); !v.OK || v.Checked != 120 {
		t.Fatalf("verify = %+v, want OK with 120 checked", v)
	}
}

// BenchmarkAuditAppend measures request-style appends issued in bursts of
// BatchSize: each burst is redacted, sealed and written in one synced
// transaction before the replies go out.
func BenchmarkAuditAppend(b *testing.B) {
	for _, tc := range []struct {
		name     string
		inMemory bool
	}{{"mem", true}, {"disk", false}} {
		b.Run(tc.name, func(b *testing.B) {
			st, err := persistence.Open(persistence.Options{InMemory: tc.inMemory, Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			s := actor.NewActorSystemWithConfig(actor.Configure(actor.WithDeadLetterThrottleInterval(time.Millisecond)))
			b.Cleanup(s.Shutdown)
			cfg := AuditConfig{BatchSize: 64, FlushEvery: time.Hour}
			pid := spawnAudit(b, s, NewAudit(st, zap.NewNop(), cfg))
			msg := messages.AuditAppend{Entry: auditEntry(1)}
			futures := make([]*actor.Future, 0, cfg.BatchSize)
			wait := func() {
				for _, f := range futures {
					if res, err := f.Result(); err != nil {
						b.Fatal(err)
					} else if _, ok := res.(messages.AuditAppended); !ok {
						b.Fatalf("reply %T, want AuditAppended", res)
					}
				}
				futures = futures[:0]
			}
			b.ReportAllocs()
			for b.Loop() {
				futures = append(futures, s.Root.RequestFuture(pid, msg, 10*time.Second))
				if len(futures) == cfg.BatchSize {
					wait()
				}
			}
			wait()
		})
	}
}

func auditKey(t *testing.T, b byte) audit.Key {
	t.Helper()
	k, err := audit.NewKey(bytes.Repeat([]byte{b}, audit.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyedAudit(t *testing.T, cur audit.Key, old ...audit.Key) (*audit.Keyring, AuditConfig) {
	t.Helper()
	ring, err := audit.NewKeyring(cur, old, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := quietAudit
	cfg.Keys = ring
	return ring, cfg
}

// rewriteStore rewrites, as a store writer would, entry from and every
// later one: f changes each entry and reseals it; the head record follows.
func rewriteStore(t *testing.T, st *persistence.Store, from uint64, f func(e *audit.Entry)) {
	t.Helper()
	es := storedAudit(t, st)
	err := st.Update(true, func(tx *persistence.Txn) error {
		for i := from - 1; i < uint64(len(es)); i++ {
			e := audit.Entry(es[i])
			if i == from-1 {
				e.Reason = "nothing happened here"
			}
			if i > 0 {
				e.PrevHash = es[i-1].Hash
			}
			f(&e)
			es[i] = messages.AuditEntry(e)
			if err := tx.Put(persistence.AuditKey(e.Seq), es[i]); err != nil {
				return err
			}
		}
		return tx.Put(AuditHeadKey, audit.HeadOf(audit.Entry(es[len(es)-1])))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAuditKeyedCatchesFullRewrite is the attack `audit verify` missed
// before keys: a store writer edits entry 4 and rewrites every later hash
// and the head record with plain sha256. The actor restarts on the
// rewritten store (so its in-memory head is the attacker's too).
func TestAuditKeyedCatchesFullRewrite(t *testing.T) {
	k := auditKey(t, 1)
	evil := auditKey(t, 66)
	tests := []struct {
		name    string
		rewrite func(e *audit.Entry)
		reason  string
	}{
		{"plain sha256, key ids kept", func(e *audit.Entry) { e.Hash = e.ComputeHash() }, "hash mismatch"},
		{"plain sha256, key ids stripped", func(e *audit.Entry) { e.KeyID = ""; e.Hash = e.ComputeHash() }, "unkeyed entry in the keyed chain"},
		{"a wrong key under the real id", func(e *audit.Entry) { e.Hash = e.ComputeMAC(evil) }, "hash mismatch"},
		{"a wrong key under its own id", func(e *audit.Entry) { e.KeyID = evil.ID; e.Hash = e.ComputeMAC(evil) }, "not in the keyring"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st := newTestSystem(t), newStore(t)
			_, cfg := keyedAudit(t, k)
			pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), cfg))
			for i := range 10 {
				got := appendSync(t, s, pid, auditEntry(i))
				if !strings.HasPrefix(got.Hash, audit.MACPrefix) {
					t.Fatalf("hash = %q, want an HMAC", got.Hash)
				}
			}
			if v := verifyAudit(t, s, pid); !v.OK || v.Checked != 10 || v.Unkeyed != 0 {
				t.Fatalf("before the attack: %+v, want intact, 10 keyed", v)
			}
			stopAudit(t, s, pid)
			rewriteStore(t, st, 4, tt.rewrite)
			pid = spawnAudit(t, s, NewAudit(st, zap.NewNop(), cfg))
			v := verifyAudit(t, s, pid)
			if v.OK || v.BrokenSeq != 4 || !strings.Contains(v.BrokenReason, tt.reason) {
				t.Fatalf("verify = %+v, want broken at 4: %q", v, tt.reason)
			}
			// The same rewrite passes the unkeyed rules: keys are what catch it.
			if tt.name == "plain sha256, key ids stripped" {
				stopAudit(t, s, pid)
				rewriteStore(t, st, 1, func(e *audit.Entry) { e.KeyID = ""; e.Hash = e.ComputeHash() })
				pid = spawnAudit(t, s, NewAudit(st, zap.NewNop(), cfg))
				if v := verifyAudit(t, s, pid); v.OK || v.BrokenSeq != 1 {
					t.Fatalf("downgrade of the whole chain: %+v, want broken at 1", v)
				}
			}
		})
	}
}

func TestAuditKeyRotation(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	k1, k2, k3 := auditKey(t, 1), auditKey(t, 2), auditKey(t, 3)
	ring, cfg := keyedAudit(t, k1)
	pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), cfg))
	for i := range 3 {
		appendSync(t, s, pid, auditEntry(i))
	}
	if _, err := ring.Rotate(k2); err != nil {
		t.Fatal(err)
	}
	got := want[messages.AuditAppended](t, request(t, s, pid, messages.AuditRotateKey{OldKeyID: k1.ID}))
	if got.Seq != 4 {
		t.Fatalf("rotation entry seq = %d, want 4", got.Seq)
	}
	appendSync(t, s, pid, auditEntry(4))
	// A rotation the actor was not told of (a crash after the key file
	// was written): the next append hands over first.
	if _, err := ring.Rotate(k3); err != nil {
		t.Fatal(err)
	}
	appendSync(t, s, pid, auditEntry(5))

	es := storedAudit(t, st)
	if len(es) != 7 {
		t.Fatalf("stored %d entries, want 7", len(es))
	}
	for _, c := range []struct {
		i        int
		old, new audit.Key
	}{{3, k1, k2}, {5, k2, k3}} {
		e := es[c.i]
		if e.Kind != audit.KindKeyRotation || e.KeyID != c.new.ID || e.Details[audit.DetailOldKeyID] != c.old.ID {
			t.Fatalf("entry %d = %s sealed by %s from %q, want key_rotation sealed by %s from %s", e.Seq, e.Kind, e.KeyID,
				e.Details[audit.DetailOldKeyID], c.new.ID, c.old.ID)
		}
		// The hand-over is provable with the old key alone.
		if e.Details[audit.DetailHandover] != audit.Handover(c.old, audit.HeadOf(audit.Entry(es[c.i-1]))) {
			t.Errorf("entry %d: the hand-over is not the previous head's HMAC under the old key", e.Seq)
		}
	}
	if v := verifyAudit(t, s, pid); !v.OK || v.Checked != 7 {
		t.Fatalf("verify = %+v, want intact with 7 checked", v)
	}
	// Without the first key, its entries cannot be proven.
	stopAudit(t, s, pid)
	_, cfg = keyedAudit(t, k3, k2)
	pid = spawnAudit(t, s, NewAudit(st, zap.NewNop(), cfg))
	if v := verifyAudit(t, s, pid); v.OK || v.BrokenSeq != 1 || !strings.Contains(v.BrokenReason, "not in the keyring") {
		t.Fatalf("verify without the old key = %+v, want broken at 1", v)
	}
	// An unkeyed actor refuses to rotate.
	pid2 := spawnAudit(t, s, NewAudit(newStore(t), zap.NewNop(), quietAudit))
	if f := want[messages.Failed](t, request(t, s, pid2, messages.AuditRotateKey{})); f.Code != string(errs.InvalidArgument) {
		t.Errorf("unkeyed rotate: %+v, want INVALID_ARGUMENT", f)
	}
}

// TestAuditAnchorCatchesRewriteWithTheKey: someone who has the key (and
// rewrites the head record) passes the keyed chain; an anchor kept outside
// the store still catches the rewrite and a truncation below it.
func TestAuditAnchorCatchesRewriteWithTheKey(t *testing.T) {
	k := auditKey(t, 1)
	tests := []struct {
		name   string
		tamper func(t *testing.T, st *persistence.Store)
		seq    uint64
		reason string
	}{
		{"rewritten below the anchor", func(t *testing.T, st *persistence.Store) {
			rewriteStore(t, st, 2, func(e *audit.Entry) { e.Hash = e.ComputeMAC(k) })
		}, 5, "does not match the anchor"},
		{"truncated below the anchor", func(t *testing.T, st *persistence.Store) {
			es := storedAudit(t, st)
			err := st.Update(true, func(tx *persistence.Txn) error {
				for seq := uint64(4); seq <= 6; seq++ {
					if err := tx.Delete(persistence.AuditKey(seq)); err != nil {
						return err
					}
				}
				return tx.Put(AuditHeadKey, audit.HeadOf(audit.Entry(es[2])))
			})
			if err != nil {
				t.Fatal(err)
			}
		}, 4, "truncated below the anchor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st := newTestSystem(t), newStore(t)
			_, cfg := keyedAudit(t, k)
			pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), cfg))
			for i := range 5 {
				appendSync(t, s, pid, auditEntry(i))
			}
			head := want[messages.AuditHeadInfo](t, request(t, s, pid, messages.AuditGetHead{}))
			if head.Seq != 5 || head.KeyID != k.ID {
				t.Fatalf("head = %+v, want seq 5 sealed by %s", head, k.ID)
			}
			appendSync(t, s, pid, auditEntry(5))
			anchor := messages.AuditVerify{AnchorSeq: head.Seq, AnchorHash: head.Hash}
			if v := want[messages.AuditVerified](t, request(t, s, pid, anchor)); !v.OK || !v.Anchored {
				t.Fatalf("verify with the anchor before the attack = %+v, want intact and anchored", v)
			}
			stopAudit(t, s, pid)
			tt.tamper(t, st)
			pid = spawnAudit(t, s, NewAudit(st, zap.NewNop(), cfg))
			if v := verifyAudit(t, s, pid); !v.OK {
				t.Fatalf("without the anchor = %+v: the attack should pass the chain alone (else this test proves nothing)", v)
			}
			v := want[messages.AuditVerified](t, request(t, s, pid, anchor))
			if v.OK || v.Anchored || v.BrokenSeq != tt.seq || !strings.Contains(v.BrokenReason, tt.reason) {
				t.Fatalf("verify with the anchor = %+v, want broken at %d: %q", v, tt.seq, tt.reason)
			}
		})
	}
}
