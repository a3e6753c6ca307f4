package actors

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

func queryAudit(t testing.TB, s *actor.ActorSystem, pid *actor.PID, q messages.AuditQuery) messages.AuditEntries {
	t.Helper()
	res, err := s.Root.RequestFuture(pid, q, 10*time.Second).Result()
	if err != nil {
		t.Fatalf("query %+v: %v", q, err)
	}
	out, ok := res.(messages.AuditEntries)
	if !ok {
		t.Fatalf("query %+v: got %T %+v", q, res, res)
	}
	return out
}

func seqsOf(es []messages.AuditEntry) []uint64 {
	out := make([]uint64, 0, len(es))
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

// dropIndex makes st look like a log written before the index existed:
// no index records, no record of where the index begins.
func dropIndex(t *testing.T, st *persistence.Store) {
	t.Helper()
	var keys [][]byte
	if err := st.Scan([]byte(persistence.PrefixAuditIndex), func(key []byte, _ func(any) error) error {
		keys = append(keys, key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, AuditIndexFromKey)
	if err := st.Update(true, func(tx *persistence.Txn) error {
		for _, k := range keys {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A query by request id or input hash reads through the index and
// answers what a scan of the log answers, also over a log whose older
// entries predate the index, page by page.
func TestAuditIndexAnswersAsTheScan(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	entry := func(i int) messages.AuditEntry {
		e := auditEntry(i)
		e.RequestID = "req-" + strconv.Itoa(i%7)
		if i%3 == 0 {
			e.Kind, e.Outcome, e.InputHash = audit.KindApproval, "used", "sha256:"+strconv.Itoa(i%5)
		}
		return e
	}
	pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
	for i := range 40 {
		appendSync(t, s, pid, entry(i))
	}
	stopAudit(t, s, pid)
	dropIndex(t, st) // entries 1-40 predate the index
	pid = spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
	for i := 40; i < 100; i++ {
		appendSync(t, s, pid, entry(i))
	}
	scanner := newAudit(st, zap.NewNop(), quietAudit)
	queries := []messages.AuditQuery{
		{RequestID: "req-3"},
		{RequestID: "req-3", Limit: 4},
		{RequestID: "req-0", Kind: audit.KindApproval},
		{InputHash: "sha256:2"},
		{InputHash: "sha256:2", AfterSeq: 50},
		{RequestID: "req-6", AfterSeq: 38, Limit: 2},
		{RequestID: "none"},
	}
	for _, q := range queries {
		t.Run(fmt.Sprintf("%+v", q), func(t *testing.T) {
			wantRes, err := scanner.scanQuery(audit.FilterOf(q))
			if err != nil {
				t.Fatal(err)
			}
			got := queryAudit(t, s, pid, q)
			if !equalSeqs(seqsOf(got.Entries), seqsOf(wantRes.Entries)) || got.More != wantRes.More {
				t.Fatalf("index: %v more=%v, scan: %v more=%v", seqsOf(got.Entries), got.More, seqsOf(wantRes.Entries), wantRes.More)
			}
			// Page through: the pages add up to the whole answer.
			if q.Limit > 0 && got.More {
				all, _ := scanner.scanQuery(audit.FilterOf(messages.AuditQuery{RequestID: q.RequestID, InputHash: q.InputHash, Kind: q.Kind, AfterSeq: q.AfterSeq, Limit: 1000}))
				var paged []uint64
				for page := got; ; {
					paged = append(paged, seqsOf(page.Entries)...)
					if !page.More {
						break
					}
					q.AfterSeq = page.Entries[len(page.Entries)-1].Seq
					page = queryAudit(t, s, pid, q)
				}
				if !equalSeqs(paged, seqsOf(all.Entries)) {
					t.Fatalf("pages %v, want %v", paged, seqsOf(all.Entries))
				}
			}
		})
	}
	n, err := st.Count([]byte(persistence.PrefixAuditIndex))
	if err != nil || n == 0 {
		t.Fatalf("index records: %d (%v), want those of entries 41-100", n, err)
	}
}

// An incremental verification reads only what was appended since the
// last check that held: it still catches a break there, and a full one
// still reads everything.
func TestAuditIncrementalVerify(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
	incremental := func() messages.AuditVerified {
		return want[messages.AuditVerified](t, request(t, s, pid, messages.AuditVerify{Incremental: true}))
	}
	for i := range 10 {
		appendSync(t, s, pid, auditEntry(i))
	}
	if v := incremental(); !v.OK || v.Checked != 10 {
		t.Fatalf("first incremental verify = %+v, want the whole chain of 10", v)
	}
	// The verifier's state comes back to the actor as a message: wait
	// until an incremental check starts after entry 10.
	deadline := time.Now().Add(10 * time.Second)
	for {
		v := incremental()
		if v.OK && v.Checked == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("incremental verify = %+v", v)
		}
	}
	for i := 10; i < 15; i++ {
		appendSync(t, s, pid, auditEntry(i))
	}
	if v := incremental(); !v.OK || v.Checked != 15 {
		t.Fatalf("incremental verify after 5 more = %+v, want OK with 15 counted", v)
	}
	// A break among the new entries is caught.
	for i := 15; i < 18; i++ {
		appendSync(t, s, pid, auditEntry(i))
	}
	es := storedAudit(t, st)
	bad := es[16]
	bad.Reason = "rewritten"
	if err := st.Update(true, func(tx *persistence.Txn) error { return tx.Put(persistence.AuditKey(bad.Seq), bad) }); err != nil {
		t.Fatal(err)
	}
	if v := incremental(); v.OK || v.BrokenSeq != 17 {
		t.Fatalf("incremental verify over a rewritten new entry = %+v, want broken at 17", v)
	}
	// A full verification reads the whole chain again.
	if v := verifyAudit(t, s, pid); v.OK || v.BrokenSeq != 17 {
		t.Fatalf("full verify = %+v, want broken at 17", v)
	}
}

// BenchmarkAuditLookup is what commit_verify asks of the audit log: the
// entries of one request id (its write's), of one input hash (the
// approvals it used), and an incremental chain check, over logs of 10k
// and 100k entries. Flat in the log's length.
func BenchmarkAuditLookup(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("%dk-entries", n/1000), func(b *testing.B) {
			s := actor.NewActorSystemWithConfig(actor.Configure(actor.WithDeadLetterThrottleInterval(time.Millisecond), quietLogs))
			defer s.Shutdown()
			st, err := persistence.Open(persistence.Options{InMemory: true})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = st.Close() }()
			writer := newAudit(st, zap.NewNop(), quietAudit)
			var batch []pendingAudit
			prev := audit.Entry{Hash: audit.Genesis}
			for i := range n {
				e := audit.Entry(auditEntry(i))
				e.Time, e.Seq, e.PrevHash = auditT0, uint64(i+1), prev.Hash
				if i%4 == 0 {
					e.Kind, e.Outcome, e.InputHash = audit.KindApproval, "used", "sha256:"+strconv.Itoa(i)
				}
				e.Hash = e.ComputeHash()
				prev = e
				batch = append(batch, pendingAudit{entry: e})
				if len(batch) == 1000 || i == n-1 {
					if err := writer.write(batch, audit.HeadOf(e)); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			// The log was written with the index: it covers it from entry 1.
			if err := st.PutSync(AuditIndexFromKey, uint64(1)); err != nil {
				b.Fatal(err)
			}
			pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewAudit(st, zap.NewNop(), quietAudit)), "audit")
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Root.PoisonFuture(pid).Wait() }()
			ask := func(m any) any {
				res, err := s.Root.RequestFuture(pid, m, time.Minute).Result()
				if err != nil {
					b.Fatal(err)
				}
				return res
			}
			ask(messages.AuditVerify{Incremental: true}) // the first check reads it all
			b.ResetTimer()
			for i := range b.N {
				k := (i * 7919) % n
				if r := ask(messages.AuditQuery{RequestID: "req-" + strconv.Itoa(k)}).(messages.AuditEntries); len(r.Entries) != 1 {
					b.Fatalf("request %d: %d entries", k, len(r.Entries))
				}
				ask(messages.AuditQuery{Kind: audit.KindApproval, InputHash: "sha256:" + strconv.Itoa(k-k%4)})
				if v := ask(messages.AuditVerify{Incremental: true}).(messages.AuditVerified); !v.OK {
					b.Fatalf("verify: %+v", v)
				}
			}
		})
	}
}
