package harness

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/ops/job"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/worktree"
	"github.com/harnessd/harnessd/messages"
)

// fleetJobs lets job_start's jobs outlive their node (op.FleetJobs;
// docs/fleet.md). A worktree job, or a read-only one, is a fleet job:
// its record and its attempts are in etcd (fleet.StartJob), it runs here
// under the same id, and its end is recorded with FinishJob, fenced by
// the attempt's token. A dirty checkout's uncommitted state (what a
// local worktree job gets: fleet.CaptureState) is shipped with it as a
// blob, its digest and tree id in the record. Every node watches for
// fleet jobs whose node died and takes one over when it can rebuild its
// inputs: a clean checkout of the same repository at the job's commit,
// or, for a job with shipped state, a checkout that has the commit, in
// which the state is applied to a worktree of the commit and checked
// against the record's tree id (a mismatch fails the job: it never runs
// on other inputs). A job that writes its checkout in place stays on its
// node (fleet_local says why).
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
	staged map[string]stagedInputs      // taken-over jobs that ran on rebuilt inputs, by id
}

// stagedInputs is the worktree a taken-over job's shipped state was
// rebuilt in (the job's own worktree is made from it).
type stagedInputs struct {
	dir       string // <data dir>/fleet-inputs/<job id>-<attempt>; "" once removed
	checkout  string // the registered checkout it is a worktree of
	isolation string // the job's own isolation (a read-only job runs in a worktree of its inputs)
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
		runs: map[string]fleet.JobClaim{}, local: map[string]string{}, picked: map[string]runtime.RepoEntry{}, roots: map[string][]string{},
		staged: map[string]stagedInputs{}}
	fj.ctx, fj.cancel = context.WithCancel(context.Background())
	h.env.FleetJobs = fj
	fj.wg.Add(1)
	go func() {
		defer fj.wg.Done()
		// Inputs a previous process rebuilt for jobs it ran are stale.
		if err := os.RemoveAll(fj.inputsDir()); err != nil {
			fj.lg.Warn("fleet: removing stale rebuilt inputs failed", zap.Error(err))
		}
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
	why, head, roots, dirty := fj.eligible(ctx, root, s)
	var state fleet.Digest
	var tree string
	if why == "" && dirty {
		state, tree, why = fj.ship(ctx, root, head, id)
	}
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
		Roots: roots, Commit: head, StateBlob: state, StateTree: tree})
	if state.Size > 0 && (replayed || (err != nil && !fleetOutcomeUnknown(err))) {
		// Not this job's (an etcd error whose outcome is unknown leaves
		// it: the job may be recorded; the retention lease removes it).
		fj.n.DropJobState(context.WithoutCancel(ctx), id)
	}
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
// node ("" = it is a fleet job), the checkout's HEAD, the repository's
// root commits (sorted) and whether the checkout has changes beyond
// HEAD (their state is then shipped with the job).
func (fj *fleetJobs) eligible(ctx context.Context, root string, s op.JobSpec) (why, head string, roots []string, dirty bool) {
	st, err := fj.env.Git.Status(ctx, root)
	if err != nil {
		return "the checkout's state could not be read (" + string(errs.CodeOf(err)) + "): it runs on this node only", "", nil, false
	}
	if st.Head == "" {
		return "the checkout has no commit yet: another node could not rebuild it; it runs on this node only", "", nil, false
	}
	if roots, err = fj.rootCommits(ctx, root, st.Head); err != nil {
		return "the repository's root commits could not be read (" + string(errs.CodeOf(err)) + "): it runs on this node only", "", nil, false
	}
	switch {
	case fleetLocalWrites(s):
		why = "it writes its checkout in place: it runs on the node whose disk holds the checkout and waits for that node (a fleet job is a worktree job or a read-only one)"
	case s.RetryMax > 0:
		why = "it asks for retry after a restart, which this node does itself; leave retry out and the fleet runs it on another node if this one dies"
	}
	return why, st.Head, roots, !st.Clean
}

// ship captures the uncommitted state of the checkout at root against
// head as the job's local worktree gets it (its secret files and
// hard-linked untracked files left out: job.WorktreeSkip), computes the
// tree id of head with it applied, and stores the blob for job id where
// another node finds it (fleet.PutJobState). It answers the blob's
// digest and the tree, or why the job stays on this node. A state that
// carries nothing (only secret or ignored changes) ships nothing.
func (fj *fleetJobs) ship(ctx context.Context, root, head, id string) (fleet.Digest, string, string) {
	local := func(err error) (fleet.Digest, string, string) {
		return fleet.Digest{}, "", "the checkout has changes beyond HEAD and their state could not be shipped with the job (" +
			string(errs.CodeOf(err)) + ": " + errs.From(err).Message + "): another node could not rebuild its inputs; it runs on this node only"
	}
	start := time.Now()
	skip, err := job.WorktreeSkip(fj.env)(ctx, root)
	if err != nil {
		return local(err)
	}
	st, err := fleet.CaptureState(ctx, fj.env.Git, root, head, skip)
	if err != nil {
		return local(err)
	}
	if st.Empty() {
		return fleet.Digest{}, "", ""
	}
	blob, err := fleet.EncodeState(st)
	if err != nil {
		return local(err)
	}
	tree, err := fleet.StateTree(ctx, fj.env.Git, root, head, st)
	if err != nil {
		return local(err)
	}
	d, err := fj.n.PutJobState(ctx, id, blob)
	if err != nil {
		return local(err)
	}
	fj.lg.Info("fleet: shipped a job's uncommitted state", zap.String("job_id", id), zap.Int("patch_bytes", len(st.Patch)),
		zap.Int("untracked", len(st.Files)), zap.Int64("blob_bytes", d.Size), zap.String("tree", tree),
		zap.Duration("took", time.Since(start)))
	return d, tree, ""
}

// fleetOutcomeUnknown reports whether err leaves open whether etcd
// applied the request (a timeout, a lost connection).
func fleetOutcomeUnknown(err error) bool {
	switch errs.CodeOf(err) {
	case errs.Timeout, errs.Cancelled, errs.Unavailable:
		return true
	}
	return false
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
// attempt's is refused by etcd and forgotten here. Inputs rebuilt for
// the attempt are removed.
func (fj *fleetJobs) finish(claim fleet.JobClaim, j messages.Job) {
	defer fj.unstage(claim.JobID)
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
// whose HEAD is the job's commit and which is clean; for a job with
// shipped state, one that has the job's commit (its inputs are rebuilt
// in a worktree of the commit).
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
		if rec.StateBlob.Size > 0 {
			// The roots of the job's commit: git fails when the
			// checkout does not have it.
			if roots, err := fj.rootCommits(ctx, e.Repo.Root, rec.Commit); err != nil || !slices.Equal(roots, rec.Roots) {
				continue
			}
			fj.mu.Lock()
			keep(fj.picked, rec.JobID, e)
			fj.mu.Unlock()
			return true
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
	if rec.StateBlob.Size > 0 {
		// Rebuilding the inputs fetches and checks out: not on
		// WatchOrphans' goroutine (it counts in wg: Add is safe).
		fj.wg.Add(1)
		go func() {
			defer fj.wg.Done()
			fj.takeOverState(rec, claim, e)
		}()
		return
	}
	ctx, cancel := context.WithTimeout(fj.ctx, time.Minute)
	defer cancel()
	_, err := fj.env.RT.Jobs.Submit(ctx, messages.Job{ID: rec.JobID, RepoID: e.Repo.ID, CheckoutID: e.Repo.CheckoutID, Root: e.Repo.Root,
		Cwd: rec.Spec.Cwd, Argv: slices.Clone(rec.Spec.Argv), RequestID: rec.RequestID, TimeoutS: rec.Spec.TimeoutS,
		Isolation: rec.Spec.Isolation, Writes: rec.Spec.Writes, Network: rec.Spec.Network})
	fj.Submitted(rec.JobID, messages.Job{}, err)
}

// takeOverState runs the next attempt of the job rec, which carries
// shipped state, on its inputs rebuilt from the checkout e: a job whose
// inputs cannot be rebuilt, or whose rebuilt tree is not the record's,
// does not run, and its attempt ends failed (UNAVAILABLE, saying why).
// A read-only job runs in a worktree of its inputs (it cannot run in
// this node's checkout, which lacks them), so it writes nothing shared.
func (fj *fleetJobs) takeOverState(rec fleet.JobRecord, claim fleet.JobClaim, e runtime.RepoEntry) {
	ctx, cancel := context.WithTimeout(fj.ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	dir, err := fj.rebuild(ctx, rec, e.Repo.Root)
	if err != nil && fj.ctx.Err() != nil {
		return // stopping: the attempt goes with the lease, for another node
	}
	if err != nil {
		fj.lg.Warn("fleet: a taken-over job's inputs could not be rebuilt; it does not run", zap.String("job_id", rec.JobID),
			zap.Int("attempt", claim.Attempt), zap.Int64("token", claim.Token), zap.Error(err))
		fj.finish(claim, messages.Job{State: messages.JobFailed, Error: &messages.JobError{Code: string(errs.Unavailable),
			Message: "fleet job " + rec.JobID + ": its inputs could not be rebuilt on node " + fj.n.Name() + " (" + errs.From(err).Message +
				"); it did not run there. Start it again with a new request_id"}})
		return
	}
	fj.lg.Info("fleet: rebuilt a taken-over job's inputs", zap.String("job_id", rec.JobID), zap.String("tree", rec.StateTree),
		zap.Duration("took", time.Since(start)))
	fj.mu.Lock()
	keep(fj.staged, rec.JobID, stagedInputs{dir: dir, checkout: e.Repo.Root, isolation: rec.Spec.Isolation})
	fj.mu.Unlock()
	_, err = fj.env.RT.Jobs.Submit(ctx, messages.Job{ID: rec.JobID, RepoID: e.Repo.ID, CheckoutID: e.Repo.CheckoutID, Root: dir,
		Cwd: rec.Spec.Cwd, Argv: slices.Clone(rec.Spec.Argv), RequestID: rec.RequestID, TimeoutS: rec.Spec.TimeoutS,
		Isolation: messages.JobIsolationWorktree, Writes: rec.Spec.Writes, Network: rec.Spec.Network})
	fj.Submitted(rec.JobID, messages.Job{}, err)
}

// inputsDir is where taken-over jobs' inputs are rebuilt.
func (fj *fleetJobs) inputsDir() string { return filepath.Join(fj.env.RT.DataDir(), "fleet-inputs") }

// rebuild fetches the state blob of rec (checked against its digest),
// checks that the commit with it applied has the record's tree id, and
// makes a worktree of the checkout at checkout at the commit with the
// state applied; it answers the worktree's path.
func (fj *fleetJobs) rebuild(ctx context.Context, rec fleet.JobRecord, checkout string) (string, error) {
	blob, err := fj.n.JobState(ctx, rec)
	if err != nil {
		return "", err
	}
	st, err := fleet.DecodeState(blob)
	if err != nil {
		return "", err
	}
	tree, err := fleet.StateTree(ctx, fj.env.Git, checkout, rec.Commit, st)
	if err != nil {
		return "", err
	}
	if tree != rec.StateTree {
		return "", errs.New(errs.InvalidArgument, "commit %s with the shipped state has tree %s here, not %s as recorded at job_start: refused (never run on other inputs)",
			rec.Commit, tree, rec.StateTree)
	}
	dir := filepath.Join(fj.inputsDir(), rec.JobID+"-"+strconv.Itoa(rec.Attempt))
	if err := fleet.MaterializeState(ctx, fj.env.Git, checkout, rec.Commit, dir, st); err != nil {
		return "", err
	}
	return dir, nil
}

// unstage removes the rebuilt inputs of job id, if any (the entry stays,
// without its dir, for the isolation Status answers).
func (fj *fleetJobs) unstage(id string) {
	fj.mu.Lock()
	sg, ok := fj.staged[id]
	if ok {
		fj.staged[id] = stagedInputs{isolation: sg.isolation}
	}
	fj.mu.Unlock()
	if !ok || sg.dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(fj.ctx), time.Minute)
	defer cancel()
	if err := worktree.Remove(ctx, fj.env.Git, sg.checkout, sg.dir); err != nil {
		fj.lg.Warn("fleet: removing a job's rebuilt inputs failed", zap.String("job_id", id), zap.String("dir", sg.dir), zap.Error(err))
	}
}

// Status answers job id as the fleet has it (op.FleetJobs).
func (fj *fleetJobs) Status(ctx context.Context, id string, local messages.Job, localErr error, wait time.Duration) (messages.Job, *op.FleetJob, error) {
	fj.mu.Lock()
	claim, runs := fj.runs[id]
	why, kept := fj.local[id]
	sg, staged := fj.staged[id]
	fj.mu.Unlock()
	switch {
	case localErr == nil && kept:
		return local, &op.FleetJob{Local: why}, nil
	case localErr == nil && runs: // this node runs (or ran) the job's current attempt
		if staged {
			local.Isolation = sg.isolation // the job's own, not that of the worktree of its rebuilt inputs
		}
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
