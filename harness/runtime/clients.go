package runtime

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/supervisors"
)

// RepoEntry is one registered repository and its checkout actor.
type RepoEntry = actors.RepoEntry

// Registry is the client of the registry actor.
type Registry struct {
	r   *Runtime
	pid *actor.PID
}

// Register records a canonical, already checked work tree.
func (c Registry) Register(ctx context.Context, root, commonDir string, id messages.RootIdentity, now time.Time) (messages.Registered, error) {
	return Ask[messages.Registered](ctx, c.r, c.pid, messages.Register{Root: root, CommonDir: commonDir, Identity: id, Now: now})
}

// RegisterGranted records a canonical, already checked work tree with who
// granted it (a person's grant replaces an area's).
func (c Registry) RegisterGranted(ctx context.Context, m messages.Register) (messages.Registered, error) {
	return Ask[messages.Registered](ctx, c.r, c.pid, m)
}

// Unregister forgets a repository.
func (c Registry) Unregister(ctx context.Context, repoID string) (messages.Unregistered, error) {
	return Ask[messages.Unregistered](ctx, c.r, c.pid, messages.Unregister{RepoID: repoID})
}

// List returns every registered repository, sorted by root.
func (c Registry) List(ctx context.Context) ([]messages.Repository, error) {
	r, err := Ask[messages.Repos](ctx, c.r, c.pid, messages.ListRepos{})
	return r.Repos, err
}

// Lookup resolves a repo_id through the published index, without a round
// trip through the mailbox.
func (c Registry) Lookup(repoID string) (RepoEntry, bool) { return c.r.index.Lookup(repoID) }

// Ledger is the request ledger as the mutation engine uses it.
type Ledger interface {
	// Begin is create-if-absent: proceed, or the stored result to replay;
	// conflicts, in-progress and unknown outcomes are errors.
	Begin(ctx context.Context, m messages.LedgerBegin) (messages.LedgerBegun, error)
	// Complete records success (compare-and-set from executing).
	Complete(ctx context.Context, requestID string, result json.RawMessage) error
	// Completion decides success as Complete does without writing it: the
	// record is the completed entry, for the caller to write in its own
	// synced transaction (AppendDurable's with: the audit's group commit).
	Completion(ctx context.Context, requestID string, result json.RawMessage) (messages.StoreRecord, error)
	// Fail records failure; the request may be retried.
	Fail(ctx context.Context, requestID string, cause error) error
	// Abandon closes an executing entry as never begun (deletes it): the
	// request gave up before it wrote anything, so the same request runs
	// normally later. inputHash must be the executing attempt's.
	Abandon(ctx context.Context, requestID, inputHash string) error
	// Get returns one entry.
	Get(ctx context.Context, requestID string) (messages.LedgerGot, error)
}

type actorLedger struct {
	r   *Runtime
	pid *actor.PID
}

func (c actorLedger) Begin(ctx context.Context, m messages.LedgerBegin) (messages.LedgerBegun, error) {
	return Ask[messages.LedgerBegun](ctx, c.r, c.pid, m)
}

func (c actorLedger) Complete(ctx context.Context, id string, result json.RawMessage) error {
	_, err := Ask[messages.LedgerDone](ctx, c.r, c.pid, messages.LedgerComplete{RequestID: id, Result: result})
	return err
}

func (c actorLedger) Completion(ctx context.Context, id string, result json.RawMessage) (messages.StoreRecord, error) {
	d, err := Ask[messages.LedgerDone](ctx, c.r, c.pid, messages.LedgerComplete{RequestID: id, Result: result, Deferred: true})
	return d.Record, err
}

func (c actorLedger) Fail(ctx context.Context, id string, cause error) error {
	e := errs.From(cause)
	_, err := Ask[messages.LedgerDone](ctx, c.r, c.pid, messages.LedgerFail{RequestID: id, Code: string(e.Code), Message: e.Message})
	return err
}

func (c actorLedger) Abandon(ctx context.Context, id, inputHash string) error {
	_, err := Ask[messages.LedgerDone](ctx, c.r, c.pid, messages.LedgerAbandon{RequestID: id, InputHash: inputHash})
	return err
}

func (c actorLedger) Get(ctx context.Context, id string) (messages.LedgerGot, error) {
	return Ask[messages.LedgerGot](ctx, c.r, c.pid, messages.LedgerGet{RequestID: id})
}

// Audit is the audit log.
type Audit interface {
	// Append seals and stores an entry without waiting (a failure to audit
	// never turns a success into a failure).
	Append(e messages.AuditEntry)
	// AppendDurable seals and stores an entry and returns a wait that
	// answers once the entry is durable (the audit actor's group commit),
	// so a caller can overlap the wait with its own work. with are records
	// other owners decided, written in the same synced transaction.
	AppendDurable(e messages.AuditEntry, with ...messages.StoreRecord) func() error
	// Query returns the entries matching the filter, oldest first.
	Query(ctx context.Context, q messages.AuditQuery) (messages.AuditEntries, error)
	// Verify checks the hash chain.
	Verify(ctx context.Context) (messages.AuditVerified, error)
	// VerifyAnchored checks the chain and that it holds the anchor of m.
	VerifyAnchored(ctx context.Context, m messages.AuditVerify) (messages.AuditVerified, error)
	// RotateKey seals the key_rotation entry of a keyring rotation away
	// from oldKeyID, durably.
	RotateKey(ctx context.Context, oldKeyID string) (messages.AuditAppended, error)
	// Head flushes and returns the head.
	Head(ctx context.Context) (messages.AuditHeadInfo, error)
}

type actorAudit struct {
	r   *Runtime
	pid *actor.PID
}

func (c actorAudit) Append(e messages.AuditEntry) {
	c.r.system.Root.Send(c.pid, messages.AuditAppend{Entry: e})
}

func (c actorAudit) AppendDurable(e messages.AuditEntry, with ...messages.StoreRecord) func() error {
	msg := messages.AuditAppend{Entry: e, With: with}
	timeout := c.r.cfg.RequestTimeout
	f := c.r.system.Root.RequestFuture(c.pid, msg, timeout)
	return func() error {
		res, err := f.Result()
		_, err = replyAs[messages.AuditAppended](c.pid, msg, res, err, timeout)
		return err
	}
}

func (c actorAudit) Query(ctx context.Context, q messages.AuditQuery) (messages.AuditEntries, error) {
	return Ask[messages.AuditEntries](ctx, c.r, c.pid, q)
}

func (c actorAudit) Verify(ctx context.Context) (messages.AuditVerified, error) {
	return Ask[messages.AuditVerified](ctx, c.r, c.pid, messages.AuditVerify{})
}

func (c actorAudit) VerifyAnchored(ctx context.Context, m messages.AuditVerify) (messages.AuditVerified, error) {
	return Ask[messages.AuditVerified](ctx, c.r, c.pid, m)
}

func (c actorAudit) RotateKey(ctx context.Context, oldKeyID string) (messages.AuditAppended, error) {
	return Ask[messages.AuditAppended](ctx, c.r, c.pid, messages.AuditRotateKey{OldKeyID: oldKeyID})
}

func (c actorAudit) Head(ctx context.Context) (messages.AuditHeadInfo, error) {
	return Ask[messages.AuditHeadInfo](ctx, c.r, c.pid, messages.AuditGetHead{})
}

// LeaseRequest asks a checkout for a write lease.
type LeaseRequest struct {
	Owner      string
	Operation  string
	Keys       []string
	Wait       time.Duration // 0 = fail at once with MUTATION_BUSY
	Visibility string        // "ephemeral" (default) or "durable"
	TTL        time.Duration // 0 = the checkout's default
	// RunID is the run the lease is taken for ("" = none); a waiting
	// request of a run takes part in deadlock detection across runs.
	RunID string
}

// MaxLeaseWait bounds how long a mutation waits for a busy resource.
const MaxLeaseWait = 30 * time.Second

// Leases grants write leases.
type Leases interface {
	// Acquire asks the checkout of repo for a lease and returns it with a
	// context that is cancelled (cause LEASE_LOST) when the lease is lost.
	// ctx bounds the wait for the grant, not the lease: the lease's
	// context does not end with ctx (a write that holds its lease runs
	// to its end), and a grant that comes after ctx ended is given back
	// at once, never left held until its TTL.
	Acquire(ctx context.Context, repo RepoEntry, req LeaseRequest) (Lease, context.Context, error)
}

// Lease is the owner's side of a granted lease.
type Lease interface {
	Info() messages.LeaseInfo
	// MaxToken is the highest fencing token of the lease.
	MaxToken() uint64
	// Fence checks that the lease still holds the newest tokens: every
	// write site calls it immediately before writing.
	Fence() error
	// Release stops renewing and gives the lease back; idempotent.
	Release()
}

type actorLeases struct{ r *Runtime }

func (c actorLeases) Acquire(ctx context.Context, repo RepoEntry, req LeaseRequest) (Lease, context.Context, error) {
	if req.Wait < 0 || req.Wait > MaxLeaseWait {
		return nil, nil, errs.New(errs.InvalidArgument, "wait_ms must be between 0 and %d", MaxLeaseWait.Milliseconds())
	}
	rctx, cancel := context.WithTimeout(ctx, req.Wait+c.r.cfg.RequestTimeout)
	defer cancel()
	system := c.r.system
	acq, err := askLate(rctx, c.r, repo.Checkout, messages.Acquire{
		Owner: req.Owner, Operation: req.Operation, Keys: req.Keys, Wait: req.Wait, Visibility: req.Visibility, TTL: req.TTL, RunID: req.RunID,
	}, func(late messages.Acquired) { // the caller stopped waiting: give it back
		system.Root.Send(repo.Checkout, messages.Release{LeaseID: late.Lease.ID})
	})
	if err != nil {
		return nil, nil, err
	}
	lctx, lcancel := context.WithCancelCause(context.WithoutCancel(ctx))
	l := &heldLease{r: c.r, checkout: repo.Checkout, info: acq.Lease, cancel: lcancel, stopc: make(chan struct{}), donec: make(chan struct{})}
	go l.renewLoop()
	return l, lctx, nil
}

// heldLease renews every TTL/3 while the operation runs and cancels the
// operation's context with LEASE_LOST when a renewal is refused.
type heldLease struct {
	r        *Runtime
	checkout *actor.PID
	info     messages.LeaseInfo
	cancel   context.CancelCauseFunc
	stopc    chan struct{}
	donec    chan struct{}
	once     sync.Once
}

func (l *heldLease) Info() messages.LeaseInfo { return l.info }

func (l *heldLease) MaxToken() uint64 { return maxToken(l.info.Tokens) }

func maxToken(toks map[string]uint64) uint64 {
	var m uint64
	for _, t := range toks {
		m = max(m, t)
	}
	return m
}

func (l *heldLease) renewLoop() {
	defer close(l.donec)
	every := l.info.TTL / 3
	if every <= 0 {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stopc:
			return
		case <-t.C:
			_, err := askWithin[messages.Renewed](l.r, l.checkout, messages.Renew{LeaseID: l.info.ID}, every)
			if errs.CodeOf(err) == errs.LeaseLost {
				l.r.lg.Warn("lease lost while the operation ran")
				l.r.Audit.Append(messages.AuditEntry{Kind: audit.KindLeaseLost, Operation: l.info.Operation, Outcome: "lost",
					Reason: errs.From(err).Message, Actor: "daemon", Details: map[string]string{"lease_id": l.info.ID, "owner": l.info.Owner}})
				l.cancel(err)
				return
			}
		}
	}
}

func (l *heldLease) Fence() error {
	_, err := askWithin[messages.Fenced](l.r, l.checkout, messages.Fence{LeaseID: l.info.ID}, l.r.cfg.RequestTimeout)
	return err
}

func (l *heldLease) Release() {
	l.once.Do(func() {
		close(l.stopc)
		<-l.donec
		if _, err := askWithin[messages.Released](l.r, l.checkout, messages.Release{LeaseID: l.info.ID}, l.r.cfg.RequestTimeout); err != nil {
			l.r.lg.Warn("release lease: it will expire on its own")
		}
		l.cancel(context.Canceled)
	})
}

// Jobs is the client of the jobs actor.
type Jobs struct {
	r   *Runtime
	pid *actor.PID
}

// Submit queues a job; answered once the queued record is durable, with
// the records of with in the same synced transaction.
func (c Jobs) Submit(ctx context.Context, j messages.Job, with ...messages.StoreRecord) (messages.Job, error) {
	info, err := Ask[messages.JobInfo](ctx, c.r, c.pid, messages.JobSubmit{Job: j, With: with})
	return info.Job, err
}

// Get returns a job's current record.
func (c Jobs) Get(ctx context.Context, id string) (messages.Job, error) {
	info, err := Ask[messages.JobInfo](ctx, c.r, c.pid, messages.JobGet{ID: id})
	return info.Job, err
}

// Cancel cancels a job and waits (up to the context's deadline, default
// RequestTimeout + 30 s: killing a tree takes the grace and the sweep) for
// its final state.
func (c Jobs) Cancel(ctx context.Context, id string) (messages.Job, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.r.cfg.RequestTimeout+30*time.Second)
		defer cancel()
	}
	info, err := Ask[messages.JobInfo](ctx, c.r, c.pid, messages.JobCancel{ID: id})
	return info.Job, err
}

// List returns jobs, newest first.
func (c Jobs) List(ctx context.Context, q messages.JobList) ([]messages.Job, error) {
	r, err := Ask[messages.JobListReply](ctx, c.r, c.pid, q)
	return r.Jobs, err
}

// Clean removes kept worktrees of jobs that finished before before.
func (c Jobs) Clean(ctx context.Context, before time.Time) ([]string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
	}
	r, err := Ask[messages.JobCleaned](ctx, c.r, c.pid, messages.JobClean{Before: before})
	return r.Removed, err
}

// Stats returns the jobs figures.
func (c Jobs) Stats(ctx context.Context) (messages.JobStatsReply, error) {
	return Ask[messages.JobStatsReply](ctx, c.r, c.pid, messages.JobStats{})
}

// Checks is the client of the checks supervisor.
type Checks struct {
	r   *Runtime
	pid *actor.PID
}

// Run asks for a check's result (reused, joined or a new run) and waits up
// to wait for it, calling tick every period while it waits.
func (c Checks) Run(ctx context.Context, run messages.CheckRun, wait, period time.Duration, tick func(elapsed time.Duration)) (messages.CheckResult, error) {
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	if wait <= 0 {
		return messages.CheckResult{}, errs.New(errs.Timeout, "deadline passed before the check was sent")
	}
	f := c.r.system.Root.RequestFuture(c.pid, run, wait)
	type answer struct {
		v   any
		err error
	}
	done := make(chan answer, 1)
	go func() { v, err := f.Result(); done <- answer{v, err} }()
	start := time.Now()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case a := <-done:
			return replyAs[messages.CheckResult](c.pid, run, a.v, a.err, wait)
		case <-t.C:
			if tick != nil {
				tick(time.Since(start))
			}
		case <-ctx.Done():
			// The run goes on for the other callers; its evidence answers
			// the next identical call.
			return messages.CheckResult{}, errs.Wrap(errs.CodeOf(ctx.Err()), ctx.Err(), "stopped waiting for the check: %v", ctx.Err())
		}
	}
}

// Stats returns the checks figures.
func (c Checks) Stats(ctx context.Context) (messages.CheckStatsReply, error) {
	return Ask[messages.CheckStatsReply](ctx, c.r, c.pid, messages.CheckStats{})
}

// Lanes is the client of the read lanes.
type Lanes struct{ r *Runtime }

// Submit queues step on lane i and returns a function that waits up to wait
// for its LaneDone.
func (c Lanes) Submit(i int, step messages.LaneRun, wait time.Duration) func() (messages.LaneDone, error) {
	pid := supervisors.LanePID(c.r.root, i%actors.NumLanes)
	f := c.r.system.Root.RequestFuture(pid, step, wait)
	return func() (messages.LaneDone, error) {
		res, err := f.Result()
		return replyAs[messages.LaneDone](pid, step, res, err, wait)
	}
}

// Cancel cancels a group's steps on every lane.
func (c Lanes) Cancel(group, reason string) {
	for i := range actors.NumLanes {
		c.r.system.Root.Send(supervisors.LanePID(c.r.root, i), messages.LaneCancel{Group: group, Reason: reason})
	}
}

// Status returns each lane's counters.
func (c Lanes) Status(ctx context.Context) []messages.LaneStatusReply {
	out := make([]messages.LaneStatusReply, 0, actors.NumLanes)
	for i := range actors.NumLanes {
		st, err := Ask[messages.LaneStatusReply](ctx, c.r, supervisors.LanePID(c.r.root, i), messages.LaneStatus{})
		if err != nil {
			st = messages.LaneStatusReply{Lane: actors.LaneName(i)}
		}
		out = append(out, st)
	}
	return out
}
