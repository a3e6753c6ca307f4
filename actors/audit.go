package actors

import (
	"errors"
	"iter"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// AuditHeadKey is where the audit head {seq, hash} is stored, written in the
// same transaction as every batch of entries.
var AuditHeadKey = persistence.MetaKey("audit-head")

// AuditIndexFromKey holds the first seq the audit index covers: entries
// before it were written before the index existed and are scanned.
var AuditIndexFromKey = persistence.MetaKey("audit-index-from")

// AuditPolicyIndexFromKey holds the first seq whose policy loads the index
// covers by digest (audit.Filter.ByPolicy), a later term than the others:
// entries before it are scanned for a query by policy.
var AuditPolicyIndexFromKey = persistence.MetaKey("audit-policy-index-from")

// AuditConfig configures the audit actor. Zero fields mean "use the default".
type AuditConfig struct {
	// BatchSize flushes once this many entries are buffered; 0 = 64.
	BatchSize int
	// FlushEvery flushes buffered entries at least this often; 0 = 50ms.
	FlushEvery time.Duration
	// Now stamps entries appended without a Time; nil = time.Now.
	Now func() time.Time
	// MaxPending caps the entries buffered while the store fails; appends
	// beyond it are refused with UNAVAILABLE. 0 = 8192.
	MaxPending int
	// Tasks runs the walks of queries and verifications; nil = untracked
	// goroutines.
	Tasks *Tasks
	// Keys seal new entries (an HMAC under the current key) and verify
	// keyed ones; nil = an unkeyed chain (plain sha256), the form of logs
	// written before keys existed.
	Keys *audit.Keyring
}

func (c AuditConfig) withDefaults() AuditConfig {
	if c.BatchSize <= 0 {
		c.BatchSize = 64
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = 50 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 8192
	}
	if c.MaxPending < c.BatchSize {
		c.MaxPending = c.BatchSize
	}
	return c
}

// maxTxnBytes bounds the estimated size of one flush transaction, well below
// Badger's batch limit for the store's 16 MiB memtables.
const maxTxnBytes = 1 << 20

// Audit is the batched writer of the hash-chained audit log. It redacts and
// seals every appended entry against its in-memory head, buffers it, and
// persists buffered entries together with the head record in one synced
// transaction when BatchSize entries are buffered, on every FlushEvery tick,
// before a query or verification, and on stop.
//
// An append may carry records other owners decided (AuditAppend.With: a
// mutation's ledger completion and receipt); they are written in the same
// transaction as the entry, so one synced commit makes all of them durable
// together, and they are checked when appended (a bad one refuses its
// append, never the batch it would join).
//
// A request-style AuditAppend is answered only once its entry is durable.
// To keep that wait short without giving up batching, such an append also
// queues a flush message behind itself: every append already in the mailbox
// joins the same transaction (group commit). Fire-and-forget appends wait
// for the batch or the tick.
//
// A failed flush answers the waiting requesters with Failed (UNAVAILABLE),
// is logged once until a flush succeeds again, and keeps the entries
// buffered for the next tick: an audit failure is reported, never turned
// into a failure of the audited operation by this actor.
type Audit struct {
	store *persistence.Store
	lg    *zap.Logger
	cfg   AuditConfig

	// persist writes one batch and the head; a seam for tests.
	persist func(batch []pendingAudit, head audit.Head) error

	head    audit.Entry // last sealed entry, buffered or durable
	pending []pendingAudit
	kicked  bool // an auditKick is queued
	failing bool // the last flush failed (logged once)

	// indexFrom is the first seq the index covers (AuditIndexFromKey);
	// indexFromNew: it is not stored yet (the next flush stores it).
	indexFrom    uint64
	indexFromNew bool
	// policyFrom, policyFromNew: the same for AuditPolicyIndexFromKey.
	policyFrom    uint64
	policyFromNew bool
	// verified is the state of the last chain check that held (nil =
	// none yet): an incremental check carries on from it.
	verified *audit.Verifier

	flusher *ticker
}

type pendingAudit struct {
	entry  audit.Entry
	waiter *actor.PID // nil for fire-and-forget
	// with are the records written in the entry's transaction
	// (AuditAppend.With).
	with []messages.StoreRecord
}

// auditTick is sent by the actor's ticker goroutine every FlushEvery.
type auditTick struct{}

// auditKick is sent by the actor to itself after a request-style append.
type auditKick struct{}

// NewAudit returns the audit actor's producer.
func NewAudit(store *persistence.Store, lg *zap.Logger, cfg AuditConfig) actor.Producer {
	return func() actor.Actor { return newAudit(store, lg, cfg) }
}

func newAudit(store *persistence.Store, lg *zap.Logger, cfg AuditConfig) *Audit {
	if lg == nil {
		lg = zap.NewNop()
	}
	a := &Audit{store: store, lg: lg, cfg: cfg.withDefaults()}
	a.persist = a.write
	return a
}

// Receive dispatches the audit actor's messages.
func (a *Audit) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.lg.With(zap.String("actor", "audit"), zap.Stringer("pid", ctx.Self()))
		a.restore()
		a.startTicker(ctx)
	case messages.AuditAppend:
		a.append(ctx, m)
	case auditTick:
		_ = a.flush(ctx)
	case auditKick:
		a.kicked = false
		_ = a.flush(ctx)
	case messages.AuditFlush:
		err := a.flush(ctx)
		reply(ctx, messages.AuditFlushed{}, err)
	case messages.AuditQuery:
		a.query(ctx, audit.FilterOf(m))
	case messages.AuditVerify:
		a.verify(ctx, m)
	case auditChecked:
		if a.verified == nil || m.v.Position() > a.verified.Position() {
			a.verified = m.v
		}
	case messages.AuditRotateKey:
		a.rotateKey(ctx, m)
	case messages.AuditGetHead:
		err := a.flush(ctx)
		reply(ctx, messages.AuditHeadInfo{Seq: a.head.Seq, Hash: a.head.Hash, KeyID: a.head.KeyID}, err)
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping:
		a.shutdown(ctx)
	case *actor.Restarting:
		// The old instance hands over: the fresh one restores from the
		// store, so persist what this one buffered.
		a.shutdown(ctx)
	}
}

// restore loads the head: the stored head record, checked against the
// entry it names, or (no record, or one that does not match) the last
// entry found by a scan. Idempotent.
func (a *Audit) restore() {
	a.head, a.pending, a.kicked, a.failing = audit.Entry{}, nil, false, false
	defer a.restoreIndex()
	var h audit.Head
	err := a.store.Get(AuditHeadKey, &h)
	switch {
	case err == nil:
		if e, ok := a.headEntry(h); ok {
			a.head = e
			return
		}
		a.lg.Error("audit head record does not match the log; rebuilding it from a scan",
			zap.Uint64("head_seq", h.Seq))
	case errors.Is(err, persistence.ErrNotFound):
	default:
		// A store we cannot read is a broken invariant: crash and let the
		// supervisor decide.
		panic("audit: restore head: " + err.Error())
	}
	last, err := a.scanLast()
	if err != nil {
		panic("audit: restore: " + err.Error())
	}
	// Never reuse a sequence number, even if the head record is ahead of
	// the entries: continuing after it leaves a detectable gap instead of
	// overwriting an entry.
	if last.Seq < h.Seq {
		last = audit.Entry{Seq: h.Seq, Hash: h.Hash}
	}
	a.head = last
}

// restoreIndex loads where the index begins; a log without the record
// (written before the index existed, or new) is indexed from the entry
// after its head on, and the record is written with the next flush.
func (a *Audit) restoreIndex() {
	a.indexFrom, a.indexFromNew = a.indexStart(AuditIndexFromKey)
	a.policyFrom, a.policyFromNew = a.indexStart(AuditPolicyIndexFromKey)
}

// indexStart reads the start stored at key, or returns the entry after the
// head and whether that start is still to be stored.
func (a *Audit) indexStart(key []byte) (uint64, bool) {
	var from uint64
	err := a.store.Get(key, &from)
	if err == nil {
		return from, false
	}
	if !errors.Is(err, persistence.ErrNotFound) {
		a.lg.Warn("audit index start unreadable: entries before the head are scanned", zap.ByteString("key", key), zap.Error(err))
		return a.head.Seq + 1, false
	}
	return a.head.Seq + 1, true
}

// headEntry returns the entry the head record names if it is intact and
// the last one in the log.
func (a *Audit) headEntry(h audit.Head) (audit.Entry, bool) {
	if h.Seq == 0 {
		n, err := a.store.Count([]byte(persistence.PrefixAudit))
		return audit.Entry{}, err == nil && n == 0
	}
	var m messages.AuditEntry
	if err := a.store.Get(persistence.AuditKey(h.Seq), &m); err != nil {
		return audit.Entry{}, false
	}
	e := audit.Entry(m)
	if e.Seq != h.Seq || e.Hash != h.Hash || !a.sealedOK(e) {
		return audit.Entry{}, false
	}
	if more, err := a.store.Has(persistence.AuditKey(h.Seq + 1)); err != nil || more {
		return audit.Entry{}, false
	}
	return e, true
}

// sealedOK reports whether e's Hash is its plain hash (unkeyed) or its MAC
// under the key it names.
func (a *Audit) sealedOK(e audit.Entry) bool {
	if e.KeyID == "" {
		return e.ComputeHash() == e.Hash
	}
	k, ok := a.cfg.Keys.Lookup(e.KeyID)
	return ok && e.ComputeMAC(k) == e.Hash
}

// scanLast returns the last entry of the log. An undecodable last record
// yields an entry with only Seq set, so the chain continues after it.
func (a *Audit) scanLast() (audit.Entry, error) {
	var lastKey []byte
	err := a.store.Scan([]byte(persistence.PrefixAudit), func(key []byte, _ func(any) error) error {
		lastKey = key
		return nil
	})
	if err != nil || lastKey == nil {
		return audit.Entry{}, err
	}
	seq, _ := persistence.SeqOf(lastKey)
	var m messages.AuditEntry
	if err := a.store.Get(lastKey, &m); err != nil || m.Seq != seq {
		a.lg.Error("last audit entry is unreadable; continuing the chain after it", zap.Uint64("seq", seq), zap.Error(err))
		return audit.Entry{Seq: seq}, nil
	}
	return audit.Entry(m), nil
}

func (a *Audit) startTicker(ctx actor.Context) {
	a.flusher = startTicker(ctx, a.cfg.FlushEvery, func() any { return auditTick{} })
}

func (a *Audit) stopTicker() {
	a.flusher.stop()
	a.flusher = nil
}

func (a *Audit) shutdown(ctx actor.Context) {
	a.stopTicker()
	if err := a.flush(ctx); err != nil {
		a.lg.Error("audit entries lost on stop", zap.Int("entries", len(a.pending)), zap.Error(err))
		a.pending = nil
	}
}

// append seals m's entry onto the chain and buffers it.
func (a *Audit) append(ctx actor.Context, m messages.AuditAppend) {
	if len(a.pending) >= a.cfg.MaxPending {
		err := errs.New(errs.Unavailable, "audit log is not accepting entries: %d are waiting for the store", len(a.pending))
		if ctx.Sender() == nil {
			a.lg.Warn("audit entry dropped: buffer full", zap.String("kind", string(m.Entry.Kind)),
				zap.String("request_id", m.Entry.RequestID))
		}
		reply(ctx, nil, err)
		return
	}
	e, err := audit.Prepare(audit.Entry(m.Entry), a.cfg.Now())
	for _, r := range m.With {
		if err != nil {
			break
		}
		if cerr := persistence.CheckEncoded(r.Key, r.Value); cerr != nil {
			err = errs.Wrap(errs.InvalidArgument, cerr, "audit: a record to write with the entry: %v", cerr)
		}
	}
	if err != nil {
		if ctx.Sender() == nil {
			a.lg.Warn("audit entry rejected", zap.Error(err))
		}
		reply(ctx, nil, err)
		return
	}
	a.seal(e, ctx.Sender(), m.With)
	switch {
	case len(a.pending) >= a.cfg.BatchSize && !a.failing:
		_ = a.flush(ctx)
	case ctx.Sender() != nil && !a.kicked:
		a.kicked = true
		ctx.Send(ctx.Self(), auditKick{})
	}
}

// seal chains e onto the head and buffers it. With keys, it seals under the
// current key; when the head was sealed with another key (the key was
// rotated, possibly before a restart), a key_rotation entry handing over
// from the head's key goes first.
func (a *Audit) seal(e audit.Entry, waiter *actor.PID, with []messages.StoreRecord) {
	if a.cfg.Keys == nil {
		e = audit.Seal(a.head, e)
	} else {
		cur := a.cfg.Keys.Current()
		if a.head.KeyID != "" && a.head.KeyID != cur.ID {
			a.sealRotation(a.head.KeyID, cur, nil)
		}
		e = audit.SealWith(a.head, e, cur)
	}
	a.head = e
	a.pending = append(a.pending, pendingAudit{entry: e, waiter: waiter, with: with})
}

// sealRotation buffers a key_rotation entry from oldID to cur after the head.
func (a *Audit) sealRotation(oldID string, cur audit.Key, waiter *actor.PID) {
	old, ok := a.cfg.Keys.Lookup(oldID)
	e := audit.Rotation(a.head, old, oldID, ok)
	e.Time = a.cfg.Now().UTC()
	if !ok {
		a.lg.Error("audit key rotation without the previous key: entries it sealed can no longer be verified",
			zap.String("old_key_id", oldID), zap.String("key_id", cur.ID))
	}
	e = audit.SealWith(a.head, e, cur)
	a.head = e
	a.pending = append(a.pending, pendingAudit{entry: e, waiter: waiter})
}

// rotateKey seals the key_rotation entry of a rotation of the keyring from
// m.OldKeyID (or from the head's key, if the head is keyed) to the current
// key, and answers AuditAppended once it is durable. If an append already
// sealed the rotation, it answers with the head.
func (a *Audit) rotateKey(ctx actor.Context, m messages.AuditRotateKey) {
	if a.cfg.Keys == nil {
		reply(ctx, nil, errs.New(errs.InvalidArgument, "the audit log has no key to rotate"))
		return
	}
	if len(a.pending) >= a.cfg.MaxPending {
		reply(ctx, nil, errs.New(errs.Unavailable, "audit log is not accepting entries: %d are waiting for the store", len(a.pending)))
		return
	}
	cur := a.cfg.Keys.Current()
	switch {
	case a.head.KeyID == cur.ID:
	case a.head.KeyID != "":
		a.sealRotation(a.head.KeyID, cur, nil)
	default:
		a.sealRotation(m.OldKeyID, cur, nil)
	}
	err := a.flush(ctx)
	reply(ctx, messages.AuditAppended{Seq: a.head.Seq, Hash: a.head.Hash}, err)
}

// flush persists every buffered entry, in chunks of at most BatchSize
// entries and maxTxnBytes, each with the head record in one synced
// transaction, and answers the waiters of each durable chunk. On failure the
// rest stays buffered and its waiters get Failed.
func (a *Audit) flush(ctx actor.Context) error {
	for len(a.pending) > 0 {
		n, size := 0, 0
		for n < len(a.pending) && n < a.cfg.BatchSize {
			size += approxSize(a.pending[n].entry) + recordsSize(a.pending[n].with)
			if n > 0 && size > maxTxnBytes {
				break
			}
			n++
		}
		batch := a.pending[:n]
		if err := a.persist(batch, audit.HeadOf(batch[n-1].entry)); err != nil {
			return a.flushFailed(ctx, err)
		}
		for _, p := range batch {
			if p.waiter != nil {
				ctx.Send(p.waiter, messages.AuditAppended{Seq: p.entry.Seq, Hash: p.entry.Hash})
			}
		}
		clear(batch)
		a.pending = a.pending[n:]
	}
	a.pending = nil
	if a.failing {
		a.failing = false
		a.lg.Info("audit log writes recovered")
	}
	return nil
}

func (a *Audit) flushFailed(ctx actor.Context, err error) error {
	ce := errs.Wrap(errs.Unavailable, err, "audit log write failed: %v", err)
	for i := range a.pending {
		if pid := a.pending[i].waiter; pid != nil {
			ctx.Send(pid, Failure(ce))
			a.pending[i].waiter = nil
		}
	}
	if !a.failing {
		a.failing = true
		a.lg.Error("audit log write failed; keeping entries buffered and retrying",
			zap.Int("pending", len(a.pending)), zap.Error(err))
	}
	return ce
}

// write is the default persist: the batch, the records its entries carry
// and the head in one synced transaction.
func (a *Audit) write(batch []pendingAudit, head audit.Head) error {
	err := a.store.Update(true, func(tx *persistence.Txn) error {
		for _, p := range batch {
			if err := tx.Put(persistence.AuditKey(p.entry.Seq), messages.AuditEntry(p.entry)); err != nil {
				return err
			}
			for _, term := range audit.IndexTerms(p.entry) {
				if err := tx.Put(persistence.AuditIndexKey(term, p.entry.Seq), p.entry.Seq); err != nil {
					return err
				}
			}
			for _, r := range p.with {
				if err := tx.PutEncoded(r.Key, r.Value); err != nil {
					return err
				}
			}
		}
		if a.indexFromNew {
			if err := tx.Put(AuditIndexFromKey, a.indexFrom); err != nil {
				return err
			}
		}
		if a.policyFromNew {
			if err := tx.Put(AuditPolicyIndexFromKey, a.policyFrom); err != nil {
				return err
			}
		}
		return tx.Put(AuditHeadKey, head)
	})
	if err == nil {
		a.indexFromNew, a.policyFromNew = false, false
	}
	return err
}

// recordsSize is the size of the records an entry carries.
func recordsSize(with []messages.StoreRecord) int {
	n := 0
	for _, r := range with {
		n += len(r.Key) + len(r.Value) + 16
	}
	return n
}

// approxSize bounds an entry's encoded size from above: every string byte
// may take 6 bytes as JSON (\u00XX), plus room for the field names.
func approxSize(e audit.Entry) int {
	n := len(e.Operation) + len(e.RepoID) + len(e.RequestID) + len(e.Actor) + len(e.Outcome) +
		len(e.Code) + len(e.Reason) + len(e.RuleID) + len(e.InputHash) + len(e.PolicyDigest) +
		len(e.PrevHash) + len(e.Hash) + len(e.KeyID)
	for _, p := range e.Paths {
		n += len(p) + 3
	}
	for k, v := range e.Details {
		n += len(k) + len(v) + 6
	}
	return 6*n + 512
}

// query flushes, then scans the log in Seq order for entries matching f
// in a goroutine that answers the requester: a long walk never holds up the
// appends every operation sends here.
func (a *Audit) query(ctx actor.Context, f audit.Filter) {
	if err := f.Validate(); err != nil {
		reply(ctx, nil, err)
		return
	}
	if err := a.flush(ctx); err != nil {
		reply(ctx, nil, err)
		return
	}
	if term, from := f.IndexTerm(), a.indexFrom; term != "" {
		if f.ByPolicy() {
			from = max(from, a.policyFrom)
		}
		a.walk(ctx, func() (any, error) { return a.indexQuery(f, term, from) })
		return
	}
	a.walk(ctx, func() (any, error) { return a.scanQuery(f) })
}

// indexQuery answers a query that names an index term: the entries before
// the index began are scanned (a log that predates it), the others read
// through the index, so the cost follows the entries the term names, not
// the log's length.
func (a *Audit) indexQuery(f audit.Filter, term string, from uint64) (messages.AuditEntries, error) {
	limit := f.EffectiveLimit()
	out := messages.AuditEntries{Entries: []messages.AuditEntry{}}
	errFull := errors.New("full")
	take := func(m messages.AuditEntry) error {
		if !f.Match(audit.Entry(m)) {
			return nil
		}
		if len(out.Entries) == limit {
			out.More = true
			return errFull
		}
		out.Entries = append(out.Entries, m)
		return nil
	}
	if f.AfterSeq+1 < from {
		err := a.store.ScanFrom([]byte(persistence.PrefixAudit), persistence.AuditKey(f.AfterSeq+1), func(key []byte, decode func(any) error) error {
			if seq, ok := persistence.SeqOf(key); ok && seq >= from {
				return errStopScan
			}
			var m messages.AuditEntry
			if err := decode(&m); err != nil {
				return nil // Verify reports it; a query shows what it can read.
			}
			return take(m)
		})
		if errors.Is(err, errFull) {
			return out, nil
		}
		if err != nil && !errors.Is(err, errStopScan) {
			return messages.AuditEntries{}, errs.Wrap(errs.Unavailable, err, "audit query: %v", err)
		}
	}
	start := max(f.AfterSeq+1, from)
	err := a.store.ScanFrom(persistence.AuditIndexPrefix(term), persistence.AuditIndexKey(term, start), func(key []byte, _ func(any) error) error {
		seq, ok := persistence.SeqOf(key)
		if !ok {
			return nil
		}
		var m messages.AuditEntry
		if err := a.store.Get(persistence.AuditKey(seq), &m); err != nil {
			if errors.Is(err, persistence.ErrNotFound) {
				return nil // pruned
			}
			return err
		}
		return take(m)
	})
	if err != nil && !errors.Is(err, errFull) {
		return messages.AuditEntries{}, errs.Wrap(errs.Unavailable, err, "audit query: %v", err)
	}
	return out, nil
}

// errStopScan ends a scan early.
var errStopScan = errors.New("stop")

// walk runs a read of the store in a goroutine and answers the current
// requester with its result.
func (a *Audit) walk(ctx actor.Context, f func() (any, error)) {
	sender, root := ctx.Sender(), ctx.ActorSystem().Root
	if sender == nil {
		return
	}
	a.cfg.Tasks.Go(func() {
		v, err := f()
		if err != nil {
			root.Send(sender, Failure(err))
			return
		}
		root.Send(sender, v)
	})
}

// scanQuery reads the entries matching f from the store.
func (a *Audit) scanQuery(f audit.Filter) (messages.AuditEntries, error) {
	limit := f.EffectiveLimit()
	out := messages.AuditEntries{Entries: []messages.AuditEntry{}}
	errFull := errors.New("full")
	err := a.store.Scan([]byte(persistence.PrefixAudit), func(key []byte, decode func(any) error) error {
		// Store exposes no Seek: skip earlier pages by key without decoding.
		if seq, ok := persistence.SeqOf(key); ok && seq <= f.AfterSeq {
			return nil
		}
		var m messages.AuditEntry
		if err := decode(&m); err != nil {
			return nil // Verify reports it; a query shows what it can read.
		}
		if !f.Match(audit.Entry(m)) {
			return nil
		}
		if len(out.Entries) == limit {
			out.More = true
			return errFull
		}
		out.Entries = append(out.Entries, m)
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return messages.AuditEntries{}, errs.Wrap(errs.Unavailable, err, "audit query: %v", err)
	}
	return out, nil
}

// verify flushes, then checks in a goroutine the persisted chain up to the
// head as it was at the flush, and that it ends at that head. Entries
// appended meanwhile are left to the next verification.
func (a *Audit) verify(ctx actor.Context, m messages.AuditVerify) {
	if err := a.flush(ctx); err != nil {
		reply(ctx, nil, err)
		return
	}
	head := a.head
	anchor := audit.Head{Seq: m.AnchorSeq, Hash: m.AnchorHash}
	var from *audit.Verifier
	if m.Incremental && anchor.Seq == 0 && a.verified != nil && a.verified.Position() <= head.Seq {
		from = a.verified.Fork()
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	a.walk(ctx, func() (any, error) {
		out, v, err := a.checkChain(head, anchor, from)
		if err == nil && out.OK && anchor.Seq == 0 {
			root.Send(self, auditChecked{v: v})
		}
		return out, err
	})
}

// auditChecked hands the state of a chain check that held back to the
// actor (an incremental check carries on from it).
type auditChecked struct{ v *audit.Verifier }

// checkChain checks the stored chain up to head: all of it, or, given
// from (the state of an earlier check that held), the entries after it.
// It returns the verifier's final state too.
func (a *Audit) checkChain(head audit.Entry, anchor audit.Head, from *audit.Verifier) (messages.AuditVerified, *audit.Verifier, error) {
	v := from
	if v == nil {
		v = audit.NewVerifier(audit.Options{Keys: a.cfg.Keys, Anchor: anchor})
	}
	start := []byte(persistence.PrefixAudit) // every record, odd keys included
	if from != nil {
		start = persistence.AuditKey(v.Position() + 1)
	}
	next, stop := iter.Pull2(a.records(start, head.Seq))
	defer stop()
	r, err := v.Run(func() (audit.Entry, bool, error) {
		e, err, ok := next()
		return e, ok, err
	})
	if err != nil {
		return messages.AuditVerified{}, nil, errs.Wrap(errs.Unavailable, err, "audit verify: %v", err)
	}
	brk := r.Break
	if brk == nil {
		brk = audit.CheckHead(r.Last, audit.HeadOf(head))
	}
	out := messages.AuditVerified{Checked: r.Checked, Unkeyed: r.Unkeyed, Anchored: r.Anchored}
	if brk != nil {
		a.lg.Error("audit chain broken", zap.Uint64("seq", brk.Seq), zap.String("reason", brk.Reason))
		out.BrokenSeq, out.BrokenReason, out.Anchored = brk.Seq, brk.Reason, false
		return out, v, nil
	}
	out.OK = true
	return out, v, nil
}

// records streams the stored log in key order, from key start up to seq
// upTo. A record that does not decode, or whose Seq is not the one of its
// key, is reported as an undecodable *audit.Break at the key's seq.
func (a *Audit) records(start []byte, upTo uint64) iter.Seq2[audit.Entry, error] {
	return func(yield func(audit.Entry, error) bool) {
		errStop := errors.New("stop")
		err := a.store.ScanFrom([]byte(persistence.PrefixAudit), start, func(key []byte, decode func(any) error) error {
			seq, ok := persistence.SeqOf(key)
			if ok && seq > upTo {
				return errStop
			}
			var m messages.AuditEntry
			var rec error
			if !ok || len(key) != len(persistence.AuditKey(0)) {
				rec = audit.Undecodable(seq)
			} else if err := decode(&m); err != nil {
				rec = audit.Undecodable(seq)
			} else if m.Seq != seq {
				rec = &audit.Break{Seq: seq, Reason: "entry " + strconv.FormatUint(m.Seq, 10) + " stored under this seq"}
			}
			if !yield(audit.Entry(m), rec) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			yield(audit.Entry{}, err)
		}
	}
}
