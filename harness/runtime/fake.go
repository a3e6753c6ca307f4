package runtime

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// FakeLedger is an in-memory Ledger with the real transition rules
// (internal/ledger), for tests of the layers above the actors.
type FakeLedger struct {
	mu      sync.Mutex // protects entries
	entries map[string]ledger.Entry
	Now     func() time.Time
}

func (f *FakeLedger) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Begin implements Ledger.
func (f *FakeLedger) Begin(_ context.Context, m messages.LedgerBegin) (messages.LedgerBegun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var existing *ledger.Entry
	if e, ok := f.entries[m.RequestID]; ok {
		existing = &e
	}
	next, d, err := ledger.Begin(existing, m.RequestID, m.Operation, m.InputHash, m.Paths, f.now())
	if err != nil {
		return messages.LedgerBegun{}, err
	}
	if d == ledger.Proceed {
		if f.entries == nil {
			f.entries = map[string]ledger.Entry{}
		}
		f.entries[m.RequestID] = next
	}
	return messages.LedgerBegun{Entry: fakeEntry(next), Replay: d == ledger.Replay}, nil
}

// Complete implements Ledger.
func (f *FakeLedger) Complete(_ context.Context, id string, result json.RawMessage) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	if !ok {
		return errs.New(errs.NotFound, "no request %q", id)
	}
	next, err := ledger.Complete(e, result, f.now())
	if err == nil {
		f.entries[id] = next
	}
	return err
}

// Completion implements Ledger: the fake has no store, so it applies the
// completion as it decides it, and returns the record a store would write.
func (f *FakeLedger) Completion(ctx context.Context, id string, result json.RawMessage) (messages.StoreRecord, error) {
	if err := f.Complete(ctx, id, result); err != nil {
		return messages.StoreRecord{}, err
	}
	f.mu.Lock()
	e := f.entries[id]
	f.mu.Unlock()
	b, err := persistence.Encode(e)
	return messages.StoreRecord{Key: persistence.LedgerKey(id), Value: b}, err
}

// Fail implements Ledger.
func (f *FakeLedger) Fail(_ context.Context, id string, cause error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	if !ok {
		return errs.New(errs.NotFound, "no request %q", id)
	}
	next, err := ledger.Fail(e, cause, f.now())
	if err == nil {
		f.entries[id] = next
	}
	return err
}

// Abandon implements Ledger.
func (f *FakeLedger) Abandon(_ context.Context, id, inputHash string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	if !ok {
		return errs.New(errs.NotFound, "no request %q", id)
	}
	if err := ledger.Abandon(e, inputHash); err != nil {
		return err
	}
	delete(f.entries, id)
	return nil
}

// Get implements Ledger.
func (f *FakeLedger) Get(_ context.Context, id string) (messages.LedgerGot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	return messages.LedgerGot{Entry: fakeEntry(e), Found: ok}, nil
}

func fakeEntry(e ledger.Entry) messages.LedgerEntry {
	return messages.LedgerEntry{RequestID: e.RequestID, Operation: e.Operation, InputHash: e.InputHash, State: string(e.State),
		Result: e.Result, Error: e.Error, Paths: e.Paths, Created: e.Created, Updated: e.Updated}
}

// FakeAudit records appended entries.
type FakeAudit struct {
	// Store, when set, receives the records a durable append carries, as
	// the audit actor writes them with its entry (one synced transaction).
	Store *persistence.Store

	mu      sync.Mutex // protects entries
	entries []messages.AuditEntry
}

// Append implements Audit.
func (f *FakeAudit) Append(e messages.AuditEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e.Seq = uint64(len(f.entries) + 1)
	f.entries = append(f.entries, e)
}

// AppendDurable implements Audit: a fake entry is durable at once (the
// records it carries are the fake ledger's, applied when decided).
func (f *FakeAudit) AppendDurable(e messages.AuditEntry, with ...messages.StoreRecord) func() error {
	f.Append(e)
	if f.Store == nil || len(with) == 0 {
		return func() error { return nil }
	}
	err := f.Store.Update(true, func(tx *persistence.Txn) error {
		for _, r := range with {
			if err := tx.PutEncoded(r.Key, r.Value); err != nil {
				return err
			}
		}
		return nil
	})
	return func() error { return err }
}

// Entries returns a copy of what was appended.
func (f *FakeAudit) Entries() []messages.AuditEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]messages.AuditEntry(nil), f.entries...)
}

// Query implements Audit: every entry, no filter.
func (f *FakeAudit) Query(context.Context, messages.AuditQuery) (messages.AuditEntries, error) {
	return messages.AuditEntries{Entries: f.Entries()}, nil
}

// Verify implements Audit: a fake chain is always intact.
func (f *FakeAudit) Verify(context.Context) (messages.AuditVerified, error) {
	return messages.AuditVerified{Checked: len(f.Entries()), OK: true}, nil
}

// VerifyAnchored implements Audit: a fake chain is always intact.
func (f *FakeAudit) VerifyAnchored(ctx context.Context, _ messages.AuditVerify) (messages.AuditVerified, error) {
	return f.Verify(ctx)
}

// RotateKey implements Audit: a fake log has no key.
func (f *FakeAudit) RotateKey(context.Context, string) (messages.AuditAppended, error) {
	return messages.AuditAppended{}, errs.New(errs.InvalidArgument, "the fake audit log has no key")
}

// Head implements Audit: the number of entries appended.
func (f *FakeAudit) Head(context.Context) (messages.AuditHeadInfo, error) {
	return messages.AuditHeadInfo{Seq: uint64(len(f.Entries()))}, nil
}

// FakeLeases grants every lease at once, with tokens that only grow; Revoke
// makes a lease's fence fail with LEASE_LOST. It refuses what the checkout
// refuses before it looks at other leases: an invalid key, a wait past
// MaxLeaseWait.
type FakeLeases struct {
	mu      sync.Mutex // protects token, revoked and held
	token   uint64
	revoked map[string]bool
	held    map[string]bool
}

// Acquire implements Leases.
func (f *FakeLeases) Acquire(ctx context.Context, repo RepoEntry, req LeaseRequest) (Lease, context.Context, error) {
	if req.Wait < 0 || req.Wait > MaxLeaseWait {
		return nil, nil, errs.New(errs.InvalidArgument, "wait_ms must be between 0 and %d", MaxLeaseWait.Milliseconds())
	}
	for _, k := range req.Keys {
		if _, err := lease.ParseKey(k); err != nil {
			return nil, nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.token++
	id := "fake-" + strconv.FormatUint(f.token, 10)
	toks := make(map[string]uint64, len(req.Keys))
	for _, k := range req.Keys {
		toks[k] = f.token
	}
	if f.held == nil {
		f.held = map[string]bool{}
	}
	f.held[id] = true
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	return &fakeLease{f: f, cancel: cancel, info: messages.LeaseInfo{ID: id, CheckoutID: repo.Repo.CheckoutID, Owner: req.Owner,
		Operation: req.Operation, Keys: req.Keys, Tokens: toks, Visibility: req.Visibility}}, lctx, nil
}

// Revoke makes the lease's next fence fail.
func (f *FakeLeases) Revoke(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.revoked == nil {
		f.revoked = map[string]bool{}
	}
	f.revoked[id] = true
}

// Held reports the leases acquired and not released.
func (f *FakeLeases) Held() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.held)
}

type fakeLease struct {
	f      *FakeLeases
	info   messages.LeaseInfo
	cancel context.CancelCauseFunc
	once   sync.Once
}

func (l *fakeLease) Info() messages.LeaseInfo { return l.info }
func (l *fakeLease) MaxToken() uint64         { return maxToken(l.info.Tokens) }

func (l *fakeLease) Fence() error {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	if l.f.revoked[l.info.ID] {
		return errs.New(errs.LeaseLost, "lease %s was revoked", l.info.ID)
	}
	return nil
}

func (l *fakeLease) Release() {
	l.once.Do(func() {
		l.f.mu.Lock()
		delete(l.f.held, l.info.ID)
		l.f.mu.Unlock()
		l.cancel(context.Canceled)
	})
}
