package harness

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/messages"
)

// fleetJobs lets job_start's jobs outlive their node (op.FleetJobs;
// docs/fleet.md). A worktree job, or a read-only one, started on a
// clean checkout is a fleet job: its record and its attempts are in etcd
// (fleet.StartJob), it runs here under the same id, and its end is
// recorded with FinishJob, fenced by the attempt's token. Every node
// watches for fleet jobs whose node died and takes one over when it has
// a clean checkout of the same repository at the job's commit. A job
// that writes its checkout in place, or one of a dirty checkout, stays
// on its node (fleet_local says why): shipping uncommitted state to
// another node is not done.
type fleetJobs struct {
	n   *fleet.Node
	env *op.Env
	lg  *zap.Logger

	ctx    context.Context // ended by stop
	cancel context.CancelFunc
	wg     sync.WaitGroup // WatchOrphans and the followers of running attempts

	mu     sync.Mutex
	runs   map[string]fleet.JobClaim    // fleet jobs whose current attempt ran here, by id
	local  map[string]string            // jobs this process kept on this node, and why
	picked map[string]runtime.RepoEntry // canRun's checkout of a job, for takeOver
	roots  map[string][]string          // root commits by commit (fixed for a commit)
}

// fleetJobsKept bounds the ids runs, local and roots remember.
const fleetJobsKept = 4096

// fleetJobPoll is how often a local job's end, or a remote record's, is
// looked for.
const fleetJobPoll = 100 * time.Millisecond

// startFleetJobs wires the fleet's side of the jobs (after the runtime
// started): job_start's hooks and the takeover of orphaned jobs.
func (h *Harness) startFleetJobs() {
	if h.fleet == nil {
		return
	}
	fj := &fleetJobs{n: h.fleet, env: h.env, lg: h.lg.With(zap.String("component", "fleet-jobs")),
		runs: map[string]fleet.JobClaim{}, local: map[string]string{}, picked: map[string]runtime.RepoEntry{}, roots: map[string][]string{}}
	fj.ctx, fj.cancel = context.WithCancel(context.Background())
	h.env.FleetJobs = fj
	fj.wg.Add(1)
	go func() {
		defer fj.wg.Done()
		fj.n.WatchOrphans(fj.ctx, fj.canRun, fj.takeOver)
	}()
}

// stopFleetJobs stops the takeovers and the followers (before the node
// leaves: its attempts then go with its lease, for other nodes to take).
func (h *Harness) stopFleetJobs() {
	if h.env == nil {
		return
	}
	if fj, ok := h.env.FleetJobs.(*fleetJobs); ok {
		fj.cancel()
		fj.wg.Wait()
	}
}

// keep puts v at m[k], forgetting an arbitrary entry when m is full.
func keep[V any](m map[string]V, k string, v V) {
	if _, ok := m[k]; !ok && len(m) >= fleetJobsKept {
		for old := range m {
			delete(m, old)
			break
		}
	}
	m[k] = v
}

// Start is job_start's fleet step (op.FleetJobs).
func (fj *fleetJobs) Start(ctx context.Context, c *op.Call, s op.JobSpec, _, id string) (op.FleetStart, error) {
	if c.Op == nil || c.Op.Name != "job_start" {
		return op.FleetStart{}, nil // a check's durable job: the check's own single flight covers it
	}
	// The hash leaves out the node-local repo_id: the same request on
	// another node's checkout of the repository is a replay.
	hash, err := ledger.InputHashIgnoring("job_start", s.Hashed, append(slices.Clone(c.Op.HashIgnore), "repo_id"))
	if err != nil {
		return op.FleetStart{}, errs.Wrap(errs.InvalidArgument, err, "hash arguments: %v", err)
	}
	root := c.Repo.Repo.Root
	why, head, roots := fj.eligible(ctx, root, s)
	if why != "" {
		prev, err := fj.n.JobByRequest(ctx, s.RequestID)
		switch {
		case errs.CodeOf(err) == errs.NotFound:
			fj.mu.Lock()
			keep(fj.local, id, why)
			fj.mu.Unlock()
			return op.FleetStart{}, nil
		case err != nil:
			return op.FleetStart{}, err
		case prev.InputHash != hash || !slices.Equal(prev.Roots, roots):
			return op.FleetStart{}, errs.New(errs.RequestConflict,
				"request_id %q already started fleet job %s with different input or in another repository; use a new request_id", s.RequestID, prev.JobID).
				With("request_id", s.RequestID).With("job_id", prev.JobID)
		}
		return fj.existing(ctx, prev), nil
	}
	rec, claim, replayed, err := fj.n.StartJob(ctx, fleet.JobRecord{JobID: id, RequestID: s.RequestID, InputHash: hash,
		Spec:  fleet.JobSpec{Argv: s.Argv, Cwd: s.Cwd, TimeoutS: s.TimeoutS, Isolation: s.Isolation, Writes: s.Writes, Network: s.Network},
		Roots: roots, Commit: head})
	if err != nil {
		return op.FleetStart{}, err
	}
	if replayed {
		return fj.existing(ctx, rec), nil
	}
	fj.mu.Lock()
	keep(fj.runs, id, claim)
	fj.mu.Unlock()
	return op.FleetStart{}, nil
}

// eligible answers why a job_start on the checkout at root stays on this
// node ("" = it is a fleet job), the checkout's HEAD and the
// repository's root commits (sorted).
func (fj *fleetJobs) eligible(ctx context.Context, root string, s op.JobSpec) (why, head string, roots []string) {
	st, err := fj.env.Git.Status(ctx, root)
	if err != nil {
		return "the checkout's state could not be read (" + string(errs.CodeOf(err)) + "): it runs on this node only", "", nil
	}
	if st.Head == "" {
		return "the checkout has no commit yet: another node could not rebuild it; it runs on this node only", "", nil
	}
	if roots, err = fj.rootCommits(ctx, root, st.Head); err != nil {
		return "the repository's root commits could not be read (" + string(errs.CodeOf(err)) + "): it runs on this node only", "", nil
	}
	switch {
	case fleetLocalWrites(s):
		why = "it writes its checkout in place: it runs on the node whose disk holds the checkout and waits for that node (a fleet job is a worktree job or a read-only one)"
	case s.RetryMax > 0:
		why = "it asks for retry after a restart, which this node does itself; leave retry out and the fleet runs it on another node if this one dies"
	case !st.Clean:
		why = "the checkout has changes beyond HEAD: another node could not rebuild its inputs (uncommitted state is not shipped); it runs on this node only"
	}
	return why, st.Head, roots
}

// fleetLocalWrites reports whether a job writes its checkout in place
// (it then stays on its node).
func fleetLocalWrites(s op.JobSpec) bool {
	return s.Writes && s.Isolation != messages.JobIsolationWorktree
}

// rootCommits answers the root commits of head's history, sorted: the
// repository's fingerprint on every node.
func (fj *fleetJobs) rootCommits(ctx context.Context, dir, head string) ([]string, error) {
	fj.mu.Lock()
	r, ok := fj.roots[head]
	fj.mu.Unlock()
	if ok {
		return r, nil
	}
	out, _, err := fj.env.Git.Run(ctx, dir, 0, "rev-list", "--max-parents=0", head)
	if err != nil {
		return nil, err
	}
	r = strings.Fields(string(out))
	slices.Sort(r)
	fj.mu.Lock()
	keep(fj.roots, head, r)
	fj.mu.Unlock()
	return r, nil
}

// existing answers the job rec as job_start's replay: this node's record
// of it when it has one, else the fleet's.
func (fj *fleetJobs) existing(ctx context.Context, rec fleet.JobRecord) op.FleetStart {
	if j, err := fj.env.RT.Jobs.Get(ctx, rec.JobID); err == nil {
		return op.FleetStart{Existing: &j}
	}
	j := jobOfRecord(rec)
	return op.FleetStart{Existing: &j}
}

// Submitted follows the local job of a fleet job to its end (op.FleetJobs).
func (fj *fleetJobs) Submitted(id string, _ messages.Job, err error) {
	fj.mu.Lock()
	claim, ok := fj.runs[id]
	fj.mu.Unlock()
	if !ok {
		return
	}
	if err != nil {
		fj.finish(claim, messages.Job{State: messages.JobFailed, Error: &messages.JobError{Code: string(errs.CodeOf(err)), Message: err.Error()}})
		return
	}
	fj.follow(claim)
}

// follow waits for the local job of claim to end and records its end.
// If the attempt's session ends first, the local job is cancelled
// (another node takes the job over) and its end is still offered to
// FinishJob, which refuses it: the fence is etcd's, not this node's view.
func (fj *fleetJobs) follow(claim fleet.JobClaim) {
	fj.wg.Add(1)
	go func() {
		defer fj.wg.Done()
		tick := time.NewTicker(fleetJobPoll)
		defer tick.Stop()
		lost := claim.Lost
		for {
			select {
			case <-fj.ctx.Done():
				return // stopping: the attempt goes with the lease
			case <-lost:
				lost = nil
				fj.lg.Warn("fleet: this node's session ended while it ran a fleet job; cancelling it (another node takes it over)",
					zap.String("job_id", claim.JobID), zap.Int("attempt", claim.Attempt), zap.Int64("token", claim.Token))
				ctx, cancel := context.WithTimeout(fj.ctx, time.Minute)
				if _, err := fj.env.RT.Jobs.Cancel(ctx, claim.JobID); err != nil {
					fj.lg.Warn("fleet: cancelling a stale attempt failed", zap.String("job_id", claim.JobID), zap.Error(err))
				}
				cancel()
			case <-tick.C:
			}
			j, err := fj.env.RT.Jobs.Get(fj.ctx, claim.JobID)
			if err == nil && op.JobFinal(j.State) {
				fj.finish(claim, j)
				return
			}
		}
	}()
}

func (fj *fleetJobs) forget(id string) {
	fj.mu.Lock()
	delete(fj.runs, id)
	fj.mu.Unlock()
}

// finish records the end of claim's attempt (the local job j); a stale
// attempt's is refused by etcd and forgotten here.
func (fj *fleetJobs) finish(claim fleet.JobClaim, j messages.Job) {
	final := fleet.JobRecord{State: j.State, ExitCode: j.ExitCode, Tail: j.Tail, Finished: j.FinishedAt}
	if j.Error != nil {
		final.Error = j.Error.Code + ": " + j.Error.Message
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(fj.ctx), 2*fj.n.TTL())
	defer cancel()
	if err := fj.n.FinishJob(ctx, claim.JobID, claim.Token, final); err != nil {
		fj.forget(claim.JobID)
		fj.lg.Warn("fleet: the end of a fleet job's attempt was not recorded", zap.String("job_id", claim.JobID),
			zap.Int("attempt", claim.Attempt), zap.Int64("token", claim.Token), zap.Error(err))
		return
	}
	fj.lg.Info("fleet: a fleet job ended", zap.String("job_id", claim.JobID), zap.String("state", j.State),
		zap.Int("attempt", claim.Attempt), zap.Int64("token", claim.Token))
}

// canRun says whether this node can take the orphaned job rec over: it
// has no record of the job (it did not run an earlier attempt), and a
// registered checkout of the same repository (the same root commits)
// whose HEAD is the job's commit and which is clean.
func (fj *fleetJobs) canRun(rec fleet.JobRecord) bool {
	ctx, cancel := context.WithTimeout(fj.ctx, 30*time.Second)
	defer cancel()
	if _, err := fj.env.RT.Jobs.Get(ctx, rec.JobID); err == nil {
		return false
	}
	repos, err := fj.env.RT.Registry.List(ctx)
	if err != nil {
		return false
	}
	for _, r := range repos {
		e, err := fj.env.Repo(r.ID)
		if err != nil {
			continue
		}
		st, err := fj.env.Git.Status(ctx, e.Repo.Root)
		if err != nil || !st.Clean || st.Head != rec.Commit {
			continue
		}
		if roots, err := fj.rootCommits(ctx, e.Repo.Root, st.Head); err != nil || !slices.Equal(roots, rec.Roots) {
			continue
		}
		fj.mu.Lock()
		keep(fj.picked, rec.JobID, e)
		fj.mu.Unlock()
		return true
	}
	return false
}

// takeOver runs the next attempt of the job rec this node claimed, in
// the checkout canRun picked, under the same id and spec.
func (fj *fleetJobs) takeOver(rec fleet.JobRecord, claim fleet.JobClaim) {
	fj.mu.Lock()
	e, ok := fj.picked[rec.JobID]
	delete(fj.picked, rec.JobID)
	keep(fj.runs, rec.JobID, claim)
	fj.mu.Unlock()
	if !ok {
		fj.finish(claim, messages.Job{State: messages.JobFailed, Error: &messages.JobError{Code: string(errs.Internal), Message: "the takeover lost its checkout"}})
		return
	}
	ctx, cancel := context.WithTimeout(fj.ctx, time.Minute)
	defer cancel()
	_, err := fj.env.RT.Jobs.Submit(ctx, messages.Job{ID: rec.JobID, RepoID: e.Repo.ID, CheckoutID: e.Repo.CheckoutID, Root: e.Repo.Root,
		Cwd: rec.Spec.Cwd, Argv: slices.Clone(rec.Spec.Argv), RequestID: rec.RequestID, TimeoutS: rec.Spec.TimeoutS,
		Isolation: rec.Spec.Isolation, Writes: rec.Spec.Writes, Network: rec.Spec.Network})
	fj.Submitted(rec.JobID, messages.Job{}, err)
}

// Status answers job id as the fleet has it (op.FleetJobs).
func (fj *fleetJobs) Status(ctx context.Context, id string, local messages.Job, localErr error, wait time.Duration) (messages.Job, *op.FleetJob, error) {
	fj.mu.Lock()
	claim, runs := fj.runs[id]
	why, kept := fj.local[id]
	fj.mu.Unlock()
	switch {
	case localErr == nil && kept:
		return local, &op.FleetJob{Local: why}, nil
	case localErr == nil && runs: // this node runs (or ran) the job's current attempt
		local.Attempt = claim.Attempt
		return local, &op.FleetJob{Node: claim.Node, Attempt: claim.Attempt, Token: claim.Token}, nil
	case localErr != nil && errs.CodeOf(localErr) != errs.NotFound:
		return local, nil, localErr
	}
	rec, err := fj.n.Job(ctx, id)
	switch {
	case errs.CodeOf(err) == errs.NotFound:
		return local, nil, localErr // not a fleet job
	case err != nil && localErr == nil:
		return local, nil, nil // etcd does not answer: this node's record
	case err != nil:
		return local, nil, err
	}
	if wait > 0 && !rec.Final() {
		rec, err = fj.awaitEnd(ctx, rec, wait)
		if err != nil {
			return local, nil, err
		}
	}
	return jobOfRecord(rec), fleetField(rec), nil
}

// awaitEnd polls the record of rec until it is final or wait passed.
func (fj *fleetJobs) awaitEnd(ctx context.Context, rec fleet.JobRecord, wait time.Duration) (fleet.JobRecord, error) {
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(fleetJobPoll)
	defer tick.Stop()
	for !rec.Final() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return rec, nil
		case <-tick.C:
		}
		r, err := fj.n.Job(ctx, rec.JobID)
		if err != nil {
			return rec, err
		}
		rec = r
	}
	return rec, nil
}

// fleetField is the fleet field of a job's answer.
func fleetField(rec fleet.JobRecord) *op.FleetJob {
	return &op.FleetJob{Node: rec.Node, Attempt: rec.Attempt, Token: rec.Token, Waiting: rec.Waiting}
}

// jobOfRecord is a fleet job as a node that does not run it answers it.
func jobOfRecord(rec fleet.JobRecord) messages.Job {
	j := messages.Job{ID: rec.JobID, Argv: rec.Spec.Argv, Cwd: rec.Spec.Cwd, TimeoutS: rec.Spec.TimeoutS, Isolation: rec.Spec.Isolation,
		Writes: rec.Spec.Writes, Network: rec.Spec.Network, RequestID: rec.RequestID, State: rec.State, Attempt: rec.Attempt,
		CreatedAt: rec.Created, FinishedAt: rec.Finished, ExitCode: rec.ExitCode, Tail: rec.Tail}
	if rec.Error != "" {
		code, msg, ok := strings.Cut(rec.Error, ": ")
		if !ok {
			code, msg = string(errs.Internal), rec.Error
		}
		j.Error = &messages.JobError{Code: code, Message: msg}
	}
	j.TimedOut = rec.State == messages.JobTimedOut
	return j
}
