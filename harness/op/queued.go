package op

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/messages"
)

// A busy checkout offers the Durable Path. A write (apply_patch,
// git_stage, git_commit) sent with on_busy "durable" that finds its files
// busy after its wait_ms is queued as a write job instead of answering
// MUTATION_BUSY:
//
//  1. Write closes its ledger entry as never begun (nothing was written)
//     and submits a job carrying the operation, its arguments, the
//     caller and the gate's decision (messages.JobWrite), with an id
//     derived from the repository and the request id (WriteJobID). The
//     answer is the operation's own result with an empty receipt and
//     queued {job_id, state}; the job is durable before it is answered.
//  2. A retry with the same request_id joins the same live job (the
//     jobs actor answers it), or replays the write's result once it
//     landed (the ledger), so the write is never applied twice.
//  3. The jobs actor runs the job at once (it takes no run slot) through
//     Pipeline.QueuedWriter: the write waits for its lease (up to the
//     job's timeout_s, QueuedWriteWait by default), and only then begins
//     its ledger entry, so a restart during the wait leaves nothing
//     executing (the queued job simply runs again). Under the lease it
//     prepares again (the files as they are now) and runs the same write
//     protocol as the Fast Path: ledger begin, the verification gate,
//     the fenced write, one synced commit of its audit entry, ledger
//     completion and receipt. A precondition that no longer holds fails
//     it with the Fast Path's code, recorded in the job.
//
// The gate is not run again when the job writes: the call that queued it
// crossed it (its decision, an approval it consumed, its route, loop and
// history records were made and audited then), so gating it again would
// ask a person twice for one write and count it twice. The decision
// travels with the job and is enforced as the Fast Path enforces it: the
// stages it requires verified are re-verified at the moment of the write.
// What reads the world is checked again: the repository's identity, the
// caller's role, Prepare's path checks (the denylist, the root), and the
// write's paths must be among those the gate decided
// (CONCURRENT_MODIFICATION otherwise). The write runs with the caller's
// identity (run, session, client, role), in the audit and the receipt.

// The values of on_busy.
const (
	OnBusyFail    = "fail"    // MUTATION_BUSY (the default)
	OnBusyDurable = "durable" // queue the write as a job
)

// QueuedWriteWait is how long a queued write waits for its lease.
const QueuedWriteWait = time.Hour

// QueuedWrite is the answer of a write queued as a job.
type QueuedWrite struct {
	JobID string `json:"job_id"`
	// State is the job's state when answered: queued (waiting for the
	// lease) or running (writing).
	State string `json:"state"`
	// Reason is what held the files (the MUTATION_BUSY it avoided).
	Reason string `json:"reason,omitempty"`
}

// queueable reports whether a write that could not get its lease (err)
// is queued as a job: it was busy and the caller asked for on_busy
// "durable" of an operation that can be queued.
func queueable(t Txn, err error) bool {
	return errs.CodeOf(err) == errs.MutationBusy && t.OnBusy == OnBusyDurable && t.Queued != nil
}

// busyHint adds the way out to a MUTATION_BUSY of an operation that can
// be queued.
func busyHint(t Txn, err error) error {
	if errs.CodeOf(err) != errs.MutationBusy || t.Queued == nil {
		return err
	}
	return errs.From(err).With("on_busy", "pass on_busy: \"durable\" to queue the write as a job that runs when the files are free")
}

// WriteJobID is the id of the write job of request requestID in
// repository repoID: a retry of the request finds it.
func WriteJobID(repoID, requestID string) string {
	sum := sha256.Sum256([]byte(repoID + "\n" + requestID))
	return "job_w" + hex.EncodeToString(sum[:16])
}

// queue queues t, whose lease was busy (busy), as a write job and answers
// the operation's result with queued set (step 1 above).
func (c *Call) queue(ctx context.Context, t Txn, w *writing, busy error) (any, error) {
	env := c.Env
	args, aerr := json.Marshal(c.in)
	dec, derr := json.Marshal(c.gated.Decision)
	if c.in == nil || aerr != nil || derr != nil || env.RT == nil {
		return nil, w.fail(busy) // not a call of the pipeline: nothing to queue
	}
	// Nothing was written: the entry is closed as never begun, so the job
	// begins it once it holds the lease. Before the job exists, never
	// after: a job that began first would find it executing.
	if err := env.Ledger.Abandon(context.Background(), t.RequestID, w.hash); err != nil {
		return nil, w.fail(errs.From(busy).With("queue_error", errs.From(err).Message))
	}
	repo := c.Repo.Repo
	j, err := env.RT.Jobs.Submit(ctx, messages.Job{
		ID: WriteJobID(repo.ID, t.RequestID), RepoID: repo.ID, CheckoutID: repo.CheckoutID, Root: repo.Root,
		RequestID: t.RequestID, TimeoutS: int(QueuedWriteWait / time.Second), Isolation: messages.JobIsolationNone,
		CallerRunID: c.Caller.RunID,
		Write:       &messages.JobWrite{Operation: t.Op, Args: args, InputHash: w.hash, Caller: c.Caller, Decision: dec, Paths: t.Paths},
	})
	e := w.entry
	if err != nil {
		e.Outcome, e.Code, e.Reason = "failed", string(errs.CodeOf(err)), errs.From(err).Message
		env.Gov.AuditAppend(e)
		if errs.CodeOf(err) == errs.RequestConflict {
			return nil, err
		}
		return nil, errs.Wrap(errs.CodeOf(err), err, "the files are busy (%s) and the write could not be queued: %s", errs.From(busy).Message, errs.From(err).Message)
	}
	e.Outcome, e.Code, e.Reason = "queued", string(errs.MutationBusy), errs.From(busy).Message
	e.Details = map[string]string{"job_id": j.ID}
	env.Gov.AuditAppend(e)
	c.SetRoute("durable")
	rec := Receipt{RequestID: t.RequestID, Operation: t.Op, RepoID: repo.ID, CheckoutID: repo.CheckoutID, RunID: c.Caller.RunID,
		FencingTokens: map[string]uint64{}, Changes: []patch.Change{}}
	return t.Queued(rec, &QueuedWrite{JobID: j.ID, State: j.State, Reason: errs.From(busy).Message}), nil
}

// QueuedWriter returns the runner of write jobs (a dependency of the jobs
// actor, wired at Start): it runs each job's write through this pipeline.
func (p *Pipeline) QueuedWriter() actors.JobWriter {
	return p.runQueued
}

// runQueued runs the write of job j (step 3 above); leased is called once
// it holds its lease.
func (p *Pipeline) runQueued(ctx context.Context, j messages.Job, leased func()) actors.JobWritten {
	leave, err := p.Enter()
	if err != nil {
		return actors.JobWritten{Err: err, Requeue: true}
	}
	defer leave()
	out, held, err := p.writeQueued(ctx, j, leased)
	if err != nil {
		// Nothing written and harnessd is stopping (the wait was answered
		// UNAVAILABLE by the shutdown's drain, or the job's actor
		// stopped): the job stays queued and runs after the restart.
		stopping := !held && (runtime.NothingWritten(err) || p.Closed() || errors.Is(ctx.Err(), context.Canceled))
		return actors.JobWritten{Err: err, Leased: held, Requeue: stopping}
	}
	res := actors.JobWritten{Leased: held}
	if m, ok := out.(*MutationResult); ok {
		res.ReceiptID = m.ReceiptID
	}
	return res
}

// maxQueuedPrepares bounds how often a queued write leases and prepares
// again because its files moved under another key while it waited.
const maxQueuedPrepares = 3

// writeQueued is runQueued's write: a call as the job's caller, with the
// gate's decision it carries, prepared, leased, prepared again under the
// lease, then written. held reports whether it held its lease.
func (p *Pipeline) writeQueued(ctx context.Context, j messages.Job, leased func()) (out any, held bool, err error) {
	w := j.Write
	if w == nil {
		return nil, false, errs.New(errs.Internal, "job %s carries no write", j.ID)
	}
	o, ok := p.reg.Lookup(w.Operation)
	if !ok || o.repoOf == nil {
		return nil, false, errs.New(errs.Internal, "job %s: %q is not an operation that can be queued", j.ID, w.Operation)
	}
	in, _, err := o.decodeCall(w.Args)
	if err != nil {
		return nil, false, err
	}
	tr := StartTrace()
	c := &Call{Env: p.env, Op: o, pipe: p, trace: &tr, route: "durable", final: SegExecution, Caller: w.Caller, in: in, job: j.ID}
	if len(w.Decision) > 0 {
		if err := json.Unmarshal(w.Decision, &c.gated.Decision); err != nil {
			return nil, false, errs.Wrap(errs.Internal, err, "job %s: decode its gate decision: %v", j.ID, err)
		}
	}
	if err := c.checkRoleOf(o); err != nil {
		return nil, false, err
	}
	if err := c.resolve(o.repoOf(in)); err != nil {
		return nil, false, err
	}
	if c.Repo.Repo.ID != j.RepoID {
		return nil, false, errs.New(errs.Internal, "job %s: its write names repository %s, the job %s", j.ID, c.Repo.Repo.ID, j.RepoID)
	}
	// A request that landed meanwhile (a retry of it on the Fast Path)
	// answers its recorded result: nothing runs again.
	if out, done, err := p.retried(c, in); err != nil || done {
		return out, false, err
	}
	wctx := ctx
	if j.TimeoutS > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, time.Duration(j.TimeoutS)*time.Second)
		defer cancel()
	}
	for range maxQueuedPrepares {
		t, err := c.prepareQueued(wctx, in, w.Paths)
		if err != nil {
			return nil, false, err
		}
		l, lctx, err := c.waitLease(wctx, t, j.TimeoutS)
		if err != nil {
			return nil, false, err
		}
		// Under the lease: the write as the files are now.
		t, err = c.prepareQueued(wctx, in, w.Paths)
		if err != nil {
			l.Release()
			return nil, true, err
		}
		if !covers(l.Info().Keys, t.Keys) {
			l.Release()
			continue
		}
		leased()
		out, err := c.writeLeased(wctx, t, l, lctx)
		return out, true, err
	}
	return nil, false, errs.New(errs.ConcurrentModification, "the files of %s kept changing while it waited for them (%d times); nothing was written; send it again", o.Name, maxQueuedPrepares)
}

// prepareQueued prepares a queued write's call and returns its write, which
// must touch only paths among gated (those the gate decided when it was
// queued).
func (c *Call) prepareQueued(ctx context.Context, in any, gated []string) (Txn, error) {
	plan, err := c.Op.prepare(ctx, c, in)
	if err != nil {
		return Txn{}, err
	}
	if plan == nil || plan.Write == nil {
		return Txn{}, errs.New(errs.Internal, "%s planned no write", c.Op.Name)
	}
	for _, p := range plan.Write.Paths {
		if !slices.Contains(gated, p) {
			return Txn{}, errs.New(errs.ConcurrentModification, "%s would now write %q, which the gate did not decide when it was queued (the files changed while it waited); nothing was written; send it again", c.Op.Name, p).
				With("path", p)
		}
	}
	return *plan.Write, nil
}

// waitLease waits for t's lease, MaxLeaseWait at a time, until ctx ends:
// TIMEOUT at the job's timeout (timeoutS), CANCELLED when it is cancelled.
func (c *Call) waitLease(ctx context.Context, t Txn, timeoutS int) (runtime.Lease, context.Context, error) {
	for {
		l, lctx, err := c.Env.Leases.Acquire(ctx, c.Repo, runtime.LeaseRequest{Owner: t.RequestID, Operation: t.Op, Keys: t.Keys,
			Wait: runtime.MaxLeaseWait, Visibility: "ephemeral", RunID: c.Caller.RunID})
		switch {
		case err == nil:
			return l, lctx, nil
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, nil, errs.New(errs.Timeout, "the files of %s stayed busy for %ds (the job's timeout); nothing was written; send it again", t.Op, timeoutS)
		case ctx.Err() != nil:
			return nil, nil, errs.New(errs.Cancelled, "the queued %s was cancelled before its files were free; nothing was written", t.Op)
		case errs.CodeOf(err) != errs.MutationBusy:
			return nil, nil, err
		}
	}
}

// writeLeased is Write for a queued write that holds its lease l: the
// ledger's begin under the lease, then the same steps 3 and 4.
func (c *Call) writeLeased(ctx context.Context, t Txn, l runtime.Lease, lctx context.Context) (any, error) {
	hash, err := c.writeHash(t)
	if err != nil {
		l.Release()
		return nil, err
	}
	out, replayed, err := c.begin(ctx, t, hash)
	if err != nil || replayed {
		l.Release()
		return out, err
	}
	return c.leased(ctx, t, c.writing(t, hash), l, lctx)
}

// covers reports whether the held keys include every wanted key.
func covers(held, wanted []string) bool {
	for _, k := range wanted {
		if !slices.Contains(held, k) {
			return false
		}
	}
	return true
}
