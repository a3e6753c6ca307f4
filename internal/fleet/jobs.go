package fleet

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
)

// Jobs that outlive their node (docs/fleet.md).
//
//	jobs/<job_id>           the JobRecord (no lease): spec, repository, state, attempt, node, token, result
//	jobs/<job_id>/attempt   the running attempt's claim {node, attempt, epoch}, bound to the
//	                        session lease of the node running it; its create revision is the token
//	req/<request_id>        the job id a job_start's request id started (no lease): fleet-wide replay
//
// A job is orphaned when its record is not final and its attempt key is
// gone (the node's lease expired): a node that can run it (WatchOrphans'
// canRun) takes it over with a create-if-absent of the attempt key, so
// the next attempt's token is higher. FinishJob compares the attempt
// key's ModRevision with the token: a stale attempt records nothing.

// JobRunning is the state of a fleet job until an attempt finishes it
// (also while it waits for a node to take it over); every other state
// FinishJob records (succeeded, failed, timed_out, cancelled,
// interrupted) is final.
const JobRunning = "running"

// JobTailMax bounds the output tail a record keeps (etcd values stay small).
const JobTailMax = 4 << 10

// JobSpec is what a fleet job runs, as job_start accepted it.
type JobSpec struct {
	Argv      []string `json:"argv"`
	Cwd       string   `json:"cwd,omitempty"` // relative to the repository root
	TimeoutS  int      `json:"timeout_s"`
	Isolation string   `json:"isolation"` // "worktree" or "none" (a read-only job)
	Writes    bool     `json:"writes,omitempty"`
	Network   bool     `json:"network,omitempty"`
}

// JobRecord is a fleet job as etcd has it.
type JobRecord struct {
	JobID     string `json:"job_id"`
	RequestID string `json:"request_id"`
	// InputHash is the hash of job_start's arguments without the
	// node-local repo_id: a replay with other arguments is a conflict.
	InputHash string  `json:"input_hash"`
	Spec      JobSpec `json:"spec"`
	// Roots are the root commits of the repository (its fingerprint on
	// every node); Commit is the commit the job runs at (HEAD where it started).
	Roots  []string `json:"roots"`
	Commit string   `json:"commit"`
	Origin string   `json:"origin"` // the node job_start was asked on
	// StateBlob is the digest of the checkout's uncommitted state (an
	// EncodeState blob, PutJobState) the job runs on top of Commit; zero
	// for a clean checkout. StateTree is the tree id of Commit with it
	// applied (StateTree): a node taking the job over rebuilds the inputs
	// and runs the job only if it gets the same id.
	StateBlob Digest `json:"state_blob,omitzero"`
	StateTree string `json:"state_tree,omitempty"`

	State    string    `json:"state"`
	Attempt  int       `json:"attempt"`
	Node     string    `json:"node"`  // the node of the current (or last) attempt
	Token    int64     `json:"token"` // the create revision of that attempt's key
	ExitCode *int      `json:"exit_code,omitempty"`
	Tail     string    `json:"tail,omitempty"`
	Error    string    `json:"error,omitempty"`
	Created  time.Time `json:"created"`
	Finished time.Time `json:"finished,omitzero"`
	// Waiting is true (when read) for a job whose attempt's node is gone
	// and no node took it over yet; never stored.
	Waiting bool `json:"waiting,omitempty"`
	// Seal is the HMAC under the fleet key (Config.SealKey) of what the
	// job runs and where (sealJob); "" without a key. A node with the key
	// takes over no job whose seal is missing or wrong: whoever can write
	// etcd but does not hold the key cannot have a node run a command.
	Seal string `json:"seal,omitempty"`
}

// jobSealDomain separates job seals from every other use of the key.
const jobSealDomain = "harnessd-fleet-job-v1"

// sealJob answers the seal of r under key: the hex HMAC-SHA256 over an
// unambiguous encoding of its fields fixed at job_start (id, request,
// input hash, spec, repository, commit, origin, creation time, the
// uncommitted state's digest and tree).
func sealJob(key []byte, r JobRecord) string {
	m := hmac.New(sha256.New, key)
	w := sealWriter{h: m}
	w.str(jobSealDomain)
	w.str(r.JobID)
	w.str(r.RequestID)
	w.str(r.InputHash)
	w.u64(uint64(len(r.Spec.Argv)))
	for _, a := range r.Spec.Argv {
		w.str(a)
	}
	w.str(r.Spec.Cwd)
	w.u64(uint64(int64(r.Spec.TimeoutS)))
	w.str(r.Spec.Isolation)
	w.flag(r.Spec.Writes)
	w.flag(r.Spec.Network)
	w.u64(uint64(len(r.Roots)))
	for _, c := range r.Roots {
		w.str(c)
	}
	w.str(r.Commit)
	w.str(r.Origin)
	w.u64(uint64(r.Created.UnixNano()))
	w.str(r.StateBlob.Hash)
	w.u64(uint64(r.StateBlob.Size))
	w.str(r.StateTree)
	return hex.EncodeToString(m.Sum(nil))
}

// jobSealValid reports whether r carries its seal under key (compared in
// constant time).
func jobSealValid(key []byte, r JobRecord) bool {
	return hmac.Equal([]byte(r.Seal), []byte(sealJob(key, r)))
}

// Final reports whether the record's state is final.
func (r JobRecord) Final() bool { return JobStateFinal(r.State) }

// JobStateFinal reports whether a fleet job state is final.
func JobStateFinal(state string) bool { return state != "" && state != JobRunning && state != "queued" }

// JobClaim is one attempt of a fleet job this node holds.
type JobClaim struct {
	JobID   string
	Attempt int
	Token   int64
	Node    string
	Epoch   int64
	// Lost is closed when the session holding the attempt ends: the
	// attempt key went with it and FinishJob will refuse this attempt.
	Lost <-chan struct{}
}

// attemptValue is the value of jobs/<id>/attempt.
type attemptValue struct {
	Node    string `json:"node"`
	Attempt int    `json:"attempt"`
	Epoch   int64  `json:"epoch"`
}

// jobs is <prefix>jobs/, the prefix WatchOrphans watches.
func (k keys) jobs() string { return k.prefix + "jobs/" }

// job is <prefix>jobs/<id>: the record.
func (k keys) job(id string) string { return k.jobs() + id }

// jobAttempt is <prefix>jobs/<id>/attempt: the running attempt's claim.
func (k keys) jobAttempt(id string) string { return k.job(id) + "/attempt" }

// req is <prefix>req/<request_id>: the job id a request started.
func (k keys) req(rid string) string { return k.prefix + "req/" + rid }

// jobOfKey answers the job id of a record or attempt key under jobs/ and
// whether it is the attempt key; "" for any other key.
func (k keys) jobOfKey(key string) (id string, attempt bool) {
	rest, ok := strings.CutPrefix(key, k.jobs())
	if !ok {
		return "", false
	}
	if id, ok := strings.CutSuffix(rest, "/attempt"); ok {
		rest, attempt = id, true
	}
	if rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	return rest, attempt
}

// validJobStart checks a record StartJob is given.
func validJobStart(r JobRecord) error {
	switch {
	case r.JobID == "" || len(r.JobID) > 128 || strings.ContainsAny(r.JobID, "/ \t\n"):
		return errs.New(errs.InvalidArgument, "fleet job: job id %q must be 1-128 characters without '/' or spaces", r.JobID)
	case r.RequestID == "" || len(r.RequestID) > 255:
		return errs.New(errs.InvalidArgument, "fleet job %s: the request id must be 1-255 characters", r.JobID)
	case len(r.Spec.Argv) == 0 || r.Spec.Argv[0] == "":
		return errs.New(errs.InvalidArgument, "fleet job %s: argv is empty; give the command and its arguments", r.JobID)
	case r.Spec.Isolation != "worktree" && !(r.Spec.Isolation == "none" && !r.Spec.Writes):
		return errs.New(errs.InvalidArgument, "fleet job %s: only a worktree job or a read-only job runs fleet-wide (isolation %q, writes %t); a job that writes its checkout stays on its node",
			r.JobID, r.Spec.Isolation, r.Spec.Writes)
	case len(r.Roots) == 0 || !slices.IsSortedFunc(r.Roots, strings.Compare):
		return errs.New(errs.InvalidArgument, "fleet job %s: the repository's root commits are missing or not sorted", r.JobID)
	case !isCommit(r.Commit):
		return errs.New(errs.InvalidArgument, "fleet job %s: commit %q is not a full object id (40 or 64 hex digits)", r.JobID, r.Commit)
	}
	for _, c := range r.Roots {
		if !isCommit(c) {
			return errs.New(errs.InvalidArgument, "fleet job %s: root commit %q is not a full object id", r.JobID, c)
		}
	}
	if r.StateBlob != (Digest{}) || r.StateTree != "" {
		if err := r.StateBlob.valid(); err != nil || r.StateBlob.Size == 0 || !isCommit(r.StateTree) {
			return errs.New(errs.InvalidArgument, "fleet job %s: its uncommitted state needs a sha256 digest and the full id of its tree (got %s, %q)", r.JobID, r.StateBlob, r.StateTree)
		}
	}
	return nil
}

// isCommit reports whether s is a full SHA-1 or SHA-256 object id.
func isCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// StartJob records a new fleet job and its first attempt (bound to this
// node's session) in ONE Txn that creates <prefix>req/<request_id> if
// absent. If the request id already started a job (on any node), that
// job's record is answered with replayed true; a replay with other
// arguments or of another repository is REQUEST_CONFLICT. The claim is
// the first attempt's (zero when replayed).
func (n *Node) StartJob(ctx context.Context, rec JobRecord) (JobRecord, JobClaim, bool, error) {
	if err := validJobStart(rec); err != nil {
		return JobRecord{}, JobClaim{}, false, err
	}
	if n.isLeaving() {
		return JobRecord{}, JobClaim{}, false, errs.New(errs.Unavailable, "fleet: node %s is leaving the fleet; ask another node", n.cfg.Node)
	}
	s, err := n.liveSession()
	if err != nil {
		return JobRecord{}, JobClaim{}, false, err
	}
	rec.State, rec.Attempt, rec.Node, rec.Token, rec.Origin = JobRunning, 1, n.cfg.Node, 0, n.cfg.Node
	rec.ExitCode, rec.Tail, rec.Error, rec.Finished, rec.Waiting = nil, "", "", time.Time{}, false
	if rec.Created.IsZero() {
		rec.Created = time.Now().UTC()
	}
	rec.Seal = ""
	if key := n.cfg.SealKey; key != nil {
		rec.Seal = sealJob(key, rec)
	}
	rk, jk, ak := n.keys.req(rec.RequestID), n.keys.job(rec.JobID), n.keys.jobAttempt(rec.JobID)
	rb, _ := json.Marshal(rec)
	av, _ := json.Marshal(attemptValue{Node: n.cfg.Node, Attempt: 1, Epoch: s.epoch})
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(rk), "=", 0), clientv3.Compare(clientv3.CreateRevision(jk), "=", 0)).
		Then(clientv3.OpPut(rk, rec.JobID), clientv3.OpPut(jk, string(rb)), clientv3.OpPut(ak, string(av), clientv3.WithLease(s.lease))).
		Else(clientv3.OpGet(rk)).Commit()
	if err != nil {
		return JobRecord{}, JobClaim{}, false, etcdError(err, "start fleet job "+rec.JobID)
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return JobRecord{}, JobClaim{}, false, errs.New(errs.Internal, "fleet: job id %s is already taken by another request; start it again (a new job id is drawn)", rec.JobID)
		}
		if v := kvs[0].Value; len(v) > 0 && v[0] == '{' {
			// A mutation's request record (reqs.go), not a job id.
			return JobRecord{}, JobClaim{}, false, errs.New(errs.RequestConflict,
				"request_id %q was already used by another operation in the fleet; use a new request_id", rec.RequestID).
				With("request_id", rec.RequestID)
		}
		prev, err := n.Job(ctx, string(kvs[0].Value))
		if err != nil {
			return JobRecord{}, JobClaim{}, false, err
		}
		if prev.InputHash != rec.InputHash || !slices.Equal(prev.Roots, rec.Roots) {
			return JobRecord{}, JobClaim{}, false, errs.New(errs.RequestConflict,
				"request_id %q already started fleet job %s with different input or in another repository; use a new request_id", rec.RequestID, prev.JobID).
				With("request_id", rec.RequestID).With("job_id", prev.JobID)
		}
		return prev, JobClaim{}, true, nil
	}
	rec.Token = resp.Header.Revision
	n.noteToken(ctx, rec)
	return rec, JobClaim{JobID: rec.JobID, Attempt: 1, Token: rec.Token, Node: n.cfg.Node, Epoch: s.epoch, Lost: s.ctx.Done()}, false, nil
}

// noteToken writes the attempt's token into the record (the Txn that
// created the attempt could not know its own revision), while the
// attempt is still rec's. Readers overlay it from the attempt key
// anyway, so a failure here only costs a log line.
func (n *Node) noteToken(ctx context.Context, rec JobRecord) {
	jk, ak := n.keys.job(rec.JobID), n.keys.jobAttempt(rec.JobID)
	rb, _ := json.Marshal(rec)
	if _, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(ak), "=", rec.Token),
		clientv3.Compare(clientv3.ModRevision(jk), "=", rec.Token)).
		Then(clientv3.OpPut(jk, string(rb))).Commit(); err != nil {
		n.lg.Warn("fleet: noting a job's token failed", zap.String("job_id", rec.JobID), zap.Error(err))
	}
}

// FinishJob records the end of the attempt of token: final's State
// (which must be final), ExitCode, Tail (cut to JobTailMax), Error and
// Finished, in one Txn that compares the attempt key's ModRevision with
// token and deletes the key. An attempt that is no longer the job's (its
// node's session ended, another node took the job over, or it already
// finished) is refused with LEASE_LOST and records nothing. The job's
// uncommitted state leaves etcd in the same Txn (no attempt needs it).
func (n *Node) FinishJob(ctx context.Context, jobID string, token int64, final JobRecord) error {
	if !JobStateFinal(final.State) {
		return errs.New(errs.InvalidArgument, "fleet job %s: %q is not a final state (succeeded, failed, timed_out, cancelled or interrupted)", jobID, final.State)
	}
	if err := n.Live(); err != nil {
		return err
	}
	jk, ak := n.keys.job(jobID), n.keys.jobAttempt(jobID)
	backoff := 50 * time.Millisecond
	for {
		resp, err := n.cli.Txn(ctx).Then(clientv3.OpGet(jk), clientv3.OpGet(ak)).Commit()
		if err == nil {
			rkv, akv := firstKV(resp, 0), firstKV(resp, 1)
			if rkv == nil {
				return errs.New(errs.NotFound, "fleet job %s has no record", jobID)
			}
			if akv == nil || akv.ModRevision != token {
				return staleAttempt(jobID, token, akv)
			}
			var rec JobRecord
			if err := json.Unmarshal(rkv.Value, &rec); err != nil {
				return errs.Wrap(errs.Internal, err, "fleet job %s: its record is unreadable: %v", jobID, err)
			}
			rec.State, rec.ExitCode, rec.Error, rec.Token = final.State, final.ExitCode, final.Error, token
			rec.Tail = tailOf(final.Tail)
			rec.Finished = final.Finished
			if rec.Finished.IsZero() {
				rec.Finished = time.Now().UTC()
			}
			rb, _ := json.Marshal(rec)
			var tr *clientv3.TxnResponse
			tr, err = n.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(ak), "=", token),
				clientv3.Compare(clientv3.ModRevision(jk), "=", rkv.ModRevision)).
				Then(clientv3.OpPut(jk, string(rb)), clientv3.OpDelete(ak), clientv3.OpDelete(n.keys.jobState(jobID), clientv3.WithPrefix())).Commit()
			if err == nil && tr.Succeeded {
				return nil
			}
			if err == nil {
				continue // the attempt or the record changed since the read: read again
			}
		}
		if ctx.Err() != nil {
			return etcdError(err, "record the end of fleet job "+jobID)
		}
		n.lg.Warn("fleet: recording a job's end failed; retrying", zap.String("job_id", jobID), zap.Error(err))
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, time.Second)
	}
}

// staleAttempt is the LEASE_LOST answer of a FinishJob whose token is no
// longer the job's attempt (akv: the attempt key now, or nil).
func staleAttempt(jobID string, token int64, akv *mvccpb.KeyValue) error {
	now := "no attempt holds the job now"
	if akv != nil {
		now = "the job's attempt now has token " + itoa(akv.ModRevision)
	}
	return errs.New(errs.LeaseLost, "fleet job %s: attempt token %d is stale (%s); its result was not recorded", jobID, token, now).
		With("job_id", jobID).With("token", token)
}

// tailOf cuts s to its last JobTailMax bytes, on a UTF-8 boundary.
func tailOf(s string) string {
	if len(s) <= JobTailMax {
		return s
	}
	s = s[len(s)-JobTailMax:]
	for i := 0; i < 4 && i < len(s); i++ {
		if c := s[i]; c < 0x80 || c >= 0xC0 {
			return s[i:]
		}
	}
	return s
}

func firstKV(resp *clientv3.TxnResponse, i int) *mvccpb.KeyValue {
	if kvs := resp.Responses[i].GetResponseRange().GetKvs(); len(kvs) > 0 {
		return kvs[0]
	}
	return nil
}

// Job answers the record of fleet job id (NOT_FOUND if none): Token from
// the attempt key while an attempt holds the job, Waiting when none does
// and it is not final.
func (n *Node) Job(ctx context.Context, id string) (JobRecord, error) {
	resp, err := n.cli.Txn(ctx).Then(clientv3.OpGet(n.keys.job(id)), clientv3.OpGet(n.keys.jobAttempt(id))).Commit()
	if err != nil {
		return JobRecord{}, etcdError(err, "read fleet job "+id)
	}
	rec, _, err := jobOf(id, firstKV(resp, 0), firstKV(resp, 1))
	return rec, err
}

// jobOf decodes a record (rkv) and its attempt key (akv, or nil) and
// answers the record's ModRevision.
func jobOf(id string, rkv, akv *mvccpb.KeyValue) (JobRecord, int64, error) {
	if rkv == nil {
		return JobRecord{}, 0, errs.New(errs.NotFound, "fleet job %s is not known to the fleet", id).With("job_id", id)
	}
	var rec JobRecord
	if err := json.Unmarshal(rkv.Value, &rec); err != nil {
		return JobRecord{}, 0, errs.Wrap(errs.Internal, err, "fleet job %s: its record is unreadable: %v", id, err)
	}
	if akv != nil {
		var av attemptValue
		if json.Unmarshal(akv.Value, &av) == nil && av.Attempt == rec.Attempt {
			rec.Token, rec.Node = akv.CreateRevision, av.Node
		}
	}
	rec.Waiting = akv == nil && !rec.Final()
	return rec, rkv.ModRevision, nil
}

// JobByRequest answers the fleet job request id rid started (NOT_FOUND
// if none).
func (n *Node) JobByRequest(ctx context.Context, rid string) (JobRecord, error) {
	resp, err := n.cli.Get(ctx, n.keys.req(rid))
	if err != nil {
		return JobRecord{}, etcdError(err, "read request "+rid)
	}
	if len(resp.Kvs) == 0 {
		return JobRecord{}, errs.New(errs.NotFound, "request_id %q started no fleet job", rid).With("request_id", rid)
	}
	return n.Job(ctx, string(resp.Kvs[0].Value))
}

// WatchOrphans takes over orphaned jobs until ctx ends or the node
// leaves: it scans <prefix>jobs/ at start, again every TTL and whenever
// its watch ends, and watches it for attempt keys that go. A job that is
// not final and whose attempt key is gone is claimed (create-if-absent
// of the attempt key bound to this node's session, attempt+1, a higher
// token) if canRun says this node can run it, and start is called with
// the record as claimed. A node whose session is lost claims nothing.
// canRun and start are called on WatchOrphans' goroutine, one at a time.
func (n *Node) WatchOrphans(ctx context.Context, canRun func(JobRecord) bool, start func(JobRecord, JobClaim)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(n.stopCtx, cancel)
	defer stop()
	go func() {
		select {
		case <-n.leavingc:
			cancel()
		case <-ctx.Done():
		}
	}()
	w := orphanWatch{n: n, canRun: canRun, start: start, forged: map[string]bool{}}
	tick := time.NewTicker(n.cfg.TTL)
	defer tick.Stop()
	for ctx.Err() == nil {
		rev, err := w.scan(ctx)
		if err != nil {
			if ctx.Err() == nil {
				n.lg.Warn("fleet: scanning for orphaned jobs failed; retrying", zap.Error(err))
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
			continue
		}
		w.watch(ctx, rev+1, tick.C)
	}
}

// orphanWatch is one WatchOrphans loop.
type orphanWatch struct {
	n      *Node
	canRun func(JobRecord) bool
	start  func(JobRecord, JobClaim)
	forged map[string]bool // jobs refused for their seal (logged once)
}

// scan takes over every orphan under jobs/ and answers the revision it read at.
func (w orphanWatch) scan(ctx context.Context) (int64, error) {
	n := w.n
	resp, err := n.cli.Get(ctx, n.keys.jobs(), clientv3.WithPrefix())
	if err != nil {
		return 0, etcdError(err, "scan the fleet's jobs")
	}
	records := map[string]*mvccpb.KeyValue{}
	attempts := map[string]*mvccpb.KeyValue{}
	for _, kv := range resp.Kvs {
		id, attempt := n.keys.jobOfKey(string(kv.Key))
		switch {
		case id == "":
		case attempt:
			attempts[id] = kv
		default:
			records[id] = kv
		}
	}
	for id, rkv := range records {
		if attempts[id] != nil {
			continue
		}
		rec, rev, err := jobOf(id, rkv, nil)
		if err == nil && rec.Waiting {
			w.take(ctx, rec, rev)
		}
	}
	return resp.Header.Revision, nil
}

// watch follows jobs/ from rev until ctx ends, the watch ends, or tick
// (a rescan is due).
func (w orphanWatch) watch(ctx context.Context, rev int64, tick <-chan time.Time) {
	n := w.n
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := n.cli.Watch(wctx, n.keys.jobs(), clientv3.WithPrefix(), clientv3.WithRev(rev))
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			return
		case wr, ok := <-wch:
			if !ok || wr.Canceled || wr.Err() != nil {
				return
			}
			for _, ev := range wr.Events {
				id, attempt := n.keys.jobOfKey(string(ev.Kv.Key))
				if id == "" || !attempt || ev.Type != mvccpb.DELETE {
					continue
				}
				resp, err := n.cli.Txn(ctx).Then(clientv3.OpGet(n.keys.job(id)), clientv3.OpGet(n.keys.jobAttempt(id))).Commit()
				if err != nil {
					return // rescan
				}
				rec, rrev, err := jobOf(id, firstKV(resp, 0), firstKV(resp, 1))
				if err == nil && rec.Waiting {
					w.take(ctx, rec, rrev)
				}
			}
		}
	}
}

// take claims the orphan rec (read at record revision rev) for this node
// if canRun says it can run it, and starts it.
func (w orphanWatch) take(ctx context.Context, rec JobRecord, rev int64) {
	n := w.n
	s, err := n.liveSession()
	if err != nil || n.isLeaving() {
		return
	}
	if key := n.cfg.SealKey; key != nil && !jobSealValid(key, rec) {
		if !w.forged[rec.JobID] {
			if len(w.forged) >= 4096 {
				clear(w.forged)
			}
			w.forged[rec.JobID] = true
			n.lg.Warn("fleet: an orphaned job's record is not sealed with the fleet key; not taken over (forged, or written by a node without the key)",
				zap.String("job_id", rec.JobID))
		}
		return
	}
	if !w.canRun(rec) {
		return
	}
	prevNode, prevToken := rec.Node, rec.Token
	rec.Attempt++
	rec.Node, rec.Token, rec.Waiting = n.cfg.Node, 0, false
	jk, ak := n.keys.job(rec.JobID), n.keys.jobAttempt(rec.JobID)
	rb, _ := json.Marshal(rec)
	av, _ := json.Marshal(attemptValue{Node: n.cfg.Node, Attempt: rec.Attempt, Epoch: s.epoch})
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(ak), "=", 0), clientv3.Compare(clientv3.ModRevision(jk), "=", rev)).
		Then(clientv3.OpPut(jk, string(rb)), clientv3.OpPut(ak, string(av), clientv3.WithLease(s.lease))).Commit()
	if err != nil || !resp.Succeeded {
		return // another node took it (or etcd did not answer: the next scan retries)
	}
	rec.Token = resp.Header.Revision
	n.noteToken(ctx, rec)
	n.lg.Info("fleet: took over an orphaned job", zap.String("job_id", rec.JobID), zap.Int("attempt", rec.Attempt),
		zap.Int64("token", rec.Token), zap.String("from_node", prevNode), zap.Int64("from_token", prevToken))
	w.start(rec, JobClaim{JobID: rec.JobID, Attempt: rec.Attempt, Token: rec.Token, Node: n.cfg.Node, Epoch: s.epoch, Lost: s.ctx.Done()})
}
