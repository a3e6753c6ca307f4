package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/contract/errs"
)

const (
	commitA = "0123456789abcdef0123456789abcdef01234567"
	rootA   = "89abcdef0123456789abcdef0123456789abcdef"
)

// jobRec answers a valid record to start: a worktree job of request rid.
func jobRec(id, rid string) JobRecord {
	return JobRecord{JobID: id, RequestID: rid, InputHash: "sha256:in-" + rid,
		Spec:  JobSpec{Argv: []string{"sh", "-c", "sleep 3; echo done"}, TimeoutS: 60, Isolation: "worktree"},
		Roots: []string{rootA}, Commit: commitA}
}

func TestValidJobStart(t *testing.T) {
	ok := jobRec("job_1", "r1")
	for _, tc := range []struct {
		name string
		mod  func(*JobRecord)
		want string // "" = valid, else a part of the message
	}{
		{"worktree job", func(*JobRecord) {}, ""},
		{"read-only job in place", func(r *JobRecord) { r.Spec.Isolation = "none" }, ""},
		{"worktree job that writes its worktree", func(r *JobRecord) { r.Spec.Writes = true }, ""},
		{"sha-256 repository", func(r *JobRecord) { r.Commit = strings.Repeat("a", 64); r.Roots = []string{strings.Repeat("b", 64)} }, ""},
		{"two roots, sorted", func(r *JobRecord) { r.Roots = []string{strings.Repeat("1", 40), strings.Repeat("2", 40)} }, ""},
		{"writes in place", func(r *JobRecord) { r.Spec.Isolation, r.Spec.Writes = "none", true }, "stays on its node"},
		{"unknown isolation", func(r *JobRecord) { r.Spec.Isolation = "" }, "stays on its node"},
		{"no job id", func(r *JobRecord) { r.JobID = "" }, "job id"},
		{"job id with a slash", func(r *JobRecord) { r.JobID = "job_1/attempt" }, "without '/'"},
		{"no request id", func(r *JobRecord) { r.RequestID = "" }, "request id"},
		{"empty argv", func(r *JobRecord) { r.Spec.Argv = nil }, "argv is empty"},
		{"no roots", func(r *JobRecord) { r.Roots = nil }, "root commits"},
		{"roots unsorted", func(r *JobRecord) { r.Roots = []string{strings.Repeat("2", 40), strings.Repeat("1", 40)} }, "not sorted"},
		{"short commit", func(r *JobRecord) { r.Commit = "0123abc" }, "not a full object id"},
		{"upper-case commit", func(r *JobRecord) { r.Commit = strings.ToUpper(commitA) }, "not a full object id"},
		{"bad root", func(r *JobRecord) { r.Roots = []string{"HEAD"} }, "root commit"},
		{"shipped state", func(r *JobRecord) { r.StateBlob, r.StateTree = DigestOf([]byte("s")), rootA }, ""},
		{"state without its tree", func(r *JobRecord) { r.StateBlob = DigestOf([]byte("s")) }, "uncommitted state"},
		{"tree without its state", func(r *JobRecord) { r.StateTree = rootA }, "uncommitted state"},
		{"empty state", func(r *JobRecord) { r.StateBlob, r.StateTree = DigestOf(nil), rootA }, "uncommitted state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			r.Spec.Argv = append([]string(nil), ok.Spec.Argv...)
			tc.mod(&r)
			err := validJobStart(r)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("validJobStart = %v, want valid", err)
			case tc.want != "" && (errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("validJobStart = %v, want INVALID_ARGUMENT naming %q", err, tc.want)
			}
		})
	}
}

func TestJobKeysAndStates(t *testing.T) {
	k := keys{"/p/"}
	for _, tc := range []struct {
		key     string
		id      string
		attempt bool
	}{
		{k.job("job_1"), "job_1", false},
		{k.jobAttempt("job_1"), "job_1", true},
		{"/p/jobs/", "", false},
		{"/p/jobs//attempt", "", false},
		{"/p/jobs/a/b", "", false},
		{"/p/check/x/run", "", false},
		{k.req("r1"), "", false},
	} {
		id, attempt := k.jobOfKey(tc.key)
		if id != tc.id || attempt != tc.attempt {
			t.Errorf("jobOfKey(%q) = %q, %t; want %q, %t", tc.key, id, attempt, tc.id, tc.attempt)
		}
	}
	for state, final := range map[string]bool{"": false, "queued": false, JobRunning: false, "succeeded": true,
		"failed": true, "timed_out": true, "cancelled": true, "interrupted": true} {
		if JobStateFinal(state) != final {
			t.Errorf("JobStateFinal(%q) = %t", state, !final)
		}
	}
	long := strings.Repeat("é", JobTailMax) // 2 bytes each: the cut lands inside one
	if got := tailOf(long); len(got) > JobTailMax || !strings.HasPrefix(got, "é") || !strings.HasSuffix(long, got) {
		t.Errorf("tailOf cut %d bytes, not on a character boundary", len(got))
	}
	if tailOf("short") != "short" {
		t.Error("tailOf changed a short tail")
	}
}

func TestStartJobReplayedByRequestOnAnotherNode(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec, claim, replayed, err := nodes[0].StartJob(ctx, jobRec("job_a", "req-1"))
	if err != nil || replayed {
		t.Fatalf("StartJob = %v, replayed %t", err, replayed)
	}
	if rec.Attempt != 1 || rec.Node != "n1" || rec.State != JobRunning || rec.Token <= 0 || claim.Token != rec.Token || claim.Attempt != 1 {
		t.Fatalf("started %+v with claim %+v, want attempt 1 on n1 with a token", rec, claim)
	}
	// The same request on another node: the same job, not a second one.
	other := jobRec("job_b", "req-1")
	got, claim2, replayed, err := nodes[1].StartJob(ctx, other)
	if err != nil || !replayed || got.JobID != "job_a" || got.Node != "n1" || got.Token != rec.Token || claim2.Token != 0 {
		t.Fatalf("replay = %+v, %+v, replayed %t, %v; want job_a on n1, replayed, no claim", got, claim2, replayed, err)
	}
	if _, err := nodes[1].Job(ctx, "job_b"); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("Job(job_b) = %v, want NOT_FOUND: the replay recorded nothing", err)
	}
	byReq, err := nodes[1].JobByRequest(ctx, "req-1")
	if err != nil || byReq.JobID != "job_a" || byReq.Token != rec.Token || byReq.Waiting {
		t.Fatalf("JobByRequest = %+v, %v", byReq, err)
	}
	// Other arguments, or another repository, under the same request id.
	for _, mod := range []func(*JobRecord){
		func(r *JobRecord) { r.InputHash = "sha256:other" },
		func(r *JobRecord) { r.Roots = []string{strings.Repeat("c", 40)} },
	} {
		r := jobRec("job_c", "req-1")
		mod(&r)
		if _, _, _, err := nodes[1].StartJob(ctx, r); errs.CodeOf(err) != errs.RequestConflict || !strings.Contains(err.Error(), "job_a") {
			t.Fatalf("conflicting replay = %v, want REQUEST_CONFLICT naming job_a", err)
		}
	}
	// A request id a mutation holds fleet-wide (reqs.go): job_start with
	// it is the same reuse of a request id, not a missing job.
	if _, err := nodes[0].ReserveRequest(ctx, Request{RequestID: "req-mut", Op: "apply_patch", InputHash: "sha256:a"}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := nodes[1].StartJob(ctx, jobRec("job_d", "req-mut")); errs.CodeOf(err) != errs.RequestConflict {
		t.Fatalf("job_start with a mutation's request id = %v, want REQUEST_CONFLICT", err)
	}
	if _, err := nodes[1].Job(ctx, "job_d"); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("Job(job_d) = %v, want NOT_FOUND: the refusal recorded nothing", err)
	}
	if _, err := nodes[0].JobByRequest(ctx, "nope"); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("JobByRequest(nope) = %v, want NOT_FOUND", err)
	}
	if _, _, _, err := nodes[0].StartJob(ctx, JobRecord{JobID: "job_x"}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("StartJob of an invalid record = %v, want INVALID_ARGUMENT", err)
	}
}

// TestStartJobOnceUnderRace has 24 callers on 3 nodes start the same
// request at once: one job, every caller answered with it.
func TestStartJobOnceUnderRace(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 3, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	ids := make([]string, 24)
	fresh := make([]bool, 24)
	errc := make([]error, 24)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _, replayed, err := nodes[i%3].StartJob(ctx, jobRec(fmt.Sprintf("job_r%d", i), "race"))
			ids[i], fresh[i], errc[i] = r.JobID, !replayed, err
		}()
	}
	wg.Wait()
	started := 0
	for i := range ids {
		if errc[i] != nil {
			t.Fatalf("caller %d: %v", i, errc[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("caller %d got %s, caller 0 %s", i, ids[i], ids[0])
		}
		if fresh[i] {
			started++
		}
	}
	if started != 1 {
		t.Fatalf("%d callers started the job, want 1", started)
	}
}

func TestFinishJobComparesTheAttemptsToken(t *testing.T) {
	prefix := testPrefix(t)
	nodes := joinN(t, ClientURLs(shared), prefix, 1, 0)
	n := nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec, claim, _, err := n.StartJob(ctx, jobRec("job_f", "req-f"))
	if err != nil {
		t.Fatal(err)
	}
	zero, one := 0, 1
	if err := n.FinishJob(ctx, "job_f", claim.Token, JobRecord{State: JobRunning}); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("FinishJob(running) = %v, want INVALID_ARGUMENT", err)
	}
	for _, tok := range []int64{claim.Token - 1, claim.Token + 1, 0} {
		err := n.FinishJob(ctx, "job_f", tok, JobRecord{State: "failed", ExitCode: &one})
		if errs.CodeOf(err) != errs.LeaseLost || !strings.Contains(err.Error(), "stale") {
			t.Fatalf("FinishJob(token %d) = %v, want LEASE_LOST (the attempt's token is %d)", tok, err, claim.Token)
		}
	}
	if got, _ := n.Job(ctx, "job_f"); got.State != JobRunning || got.ExitCode != nil {
		t.Fatalf("a refused FinishJob changed the record: %+v", got)
	}
	if err := n.FinishJob(ctx, "job_f", claim.Token, JobRecord{State: "succeeded", ExitCode: &zero, Tail: "done\n"}); err != nil {
		t.Fatalf("FinishJob(own token) = %v", err)
	}
	got, err := n.Job(ctx, "job_f")
	if err != nil || got.State != "succeeded" || got.ExitCode == nil || *got.ExitCode != 0 || got.Tail != "done\n" ||
		got.Token != rec.Token || got.Attempt != 1 || got.Finished.IsZero() || got.Waiting || got.Spec.Argv[0] != "sh" {
		t.Fatalf("finished record = %+v, %v", got, err)
	}
	// The attempt key went with the finish: the same token again is stale.
	if err := n.FinishJob(ctx, "job_f", claim.Token, JobRecord{State: "failed", ExitCode: &one}); errs.CodeOf(err) != errs.LeaseLost {
		t.Fatalf("a second FinishJob = %v, want LEASE_LOST", err)
	}
	if err := n.FinishJob(ctx, "job_none", 5, JobRecord{State: "failed"}); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("FinishJob of an unknown job = %v, want NOT_FOUND", err)
	}
}

// TestOrphanTakenOverAfterLeaseExpires: the node running a job stops
// renewing its session (a real lease expiry in etcd); a node that can
// run the job takes it over with attempt 2 and a higher token, one that
// cannot does not; the stale attempt's FinishJob is refused and the new
// one's recorded: exactly one final record.
func TestOrphanTakenOverAfterLeaseExpires(t *testing.T) {
	prefix := testPrefix(t)
	nodes := joinN(t, ClientURLs(shared), prefix, 3, 2*time.Second)
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, claim1, _, err := n1.StartJob(ctx, jobRec("job_o", "req-o"))
	if err != nil {
		t.Fatal(err)
	}

	type took struct {
		node  string
		rec   JobRecord
		claim JobClaim
	}
	tookc := make(chan took, 4)
	var asked sync.Map // node -> job ids canRun was asked about
	watch := func(n *Node, can bool) {
		wctx, wcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			n.WatchOrphans(wctx, func(r JobRecord) bool { asked.Store(n.Name(), r.JobID); return can },
				func(r JobRecord, c JobClaim) { tookc <- took{n.Name(), r, c} })
		}()
		t.Cleanup(func() { wcancel(); <-done })
	}
	watch(n2, true)
	watch(n3, false)

	select {
	case tk := <-tookc:
		t.Fatalf("%s took over job %s while its node was live", tk.node, tk.rec.JobID)
	case <-time.After(300 * time.Millisecond):
	}

	n1.pauseKeepalive.Store(true) // n1 stops renewing: etcd expires its lease
	stopped := time.Now()
	var tk took
	select {
	case tk = <-tookc:
	case <-time.After(10 * time.Second):
		t.Fatal("no node took the orphaned job over within 10 s")
	}
	t.Logf("taken over %s after n1 stopped renewing (TTL 2s)", time.Since(stopped).Round(time.Millisecond))
	if tk.node != "n2" || tk.rec.Attempt != 2 || tk.claim.Attempt != 2 || tk.claim.Token <= claim1.Token || tk.rec.Token != tk.claim.Token {
		t.Fatalf("taken over as %+v / %+v, want n2, attempt 2, token above %d", tk.rec, tk.claim, claim1.Token)
	}
	if v, _ := asked.Load("n3"); v != "job_o" {
		t.Fatalf("n3 was not asked whether it can run the orphan (asked %v)", v)
	}
	select {
	case <-claim1.Lost:
	case <-time.After(3 * time.Second):
		t.Fatal("the first attempt's Lost channel did not close after its session ended")
	}
	got, err := n3.Job(ctx, "job_o")
	if err != nil || got.Node != "n2" || got.Attempt != 2 || got.Token != tk.claim.Token || got.State != JobRunning || got.Waiting {
		t.Fatalf("the record after the takeover = %+v, %v", got, err)
	}

	// The stale attempt: refused by n1 (its session is lost) and by the
	// token compare on a live node.
	one, zero := 1, 0
	if err := n1.FinishJob(ctx, "job_o", claim1.Token, JobRecord{State: "failed", ExitCode: &one}); errs.CodeOf(err) != errs.LeaseLost {
		t.Fatalf("the stale node's FinishJob = %v, want LEASE_LOST", err)
	}
	if err := n2.FinishJob(ctx, "job_o", claim1.Token, JobRecord{State: "failed", ExitCode: &one}); errs.CodeOf(err) != errs.LeaseLost {
		t.Fatalf("FinishJob with the stale token = %v, want LEASE_LOST", err)
	}
	if err := n2.FinishJob(ctx, "job_o", tk.claim.Token, JobRecord{State: "succeeded", ExitCode: &zero, Tail: "done\n"}); err != nil {
		t.Fatalf("the new attempt's FinishJob = %v", err)
	}

	// Exactly one final record was written: the history of the record key
	// has one put with a final state, attempt 2's.
	cli := rawClient(t, ClientURLs(shared))
	finals := 0
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	hist := cli.Watch(wctx, prefix+"jobs/job_o", clientv3.WithRev(rec.Token))
	cur, _ := cli.Get(ctx, prefix+"jobs/job_o")
	for wr := range hist {
		for _, ev := range wr.Events {
			var r JobRecord
			if ev.Type == clientv3.EventTypePut && jsonInto(ev.Kv.Value, &r) && r.Final() {
				finals++
				if r.Attempt != 2 || r.Token != tk.claim.Token || r.State != "succeeded" {
					t.Fatalf("final record %+v, want attempt 2's success", r)
				}
			}
			if ev.Kv.ModRevision >= cur.Kvs[0].ModRevision {
				wcancel()
			}
		}
	}
	if finals != 1 {
		t.Fatalf("%d final records written, want 1", finals)
	}
	// A finished job is no orphan: n1, once back, takes nothing over.
	waitFor(t, 10*time.Second, "n1 rejoins", func() bool { return n1.Live() == nil })
	n1.pauseKeepalive.Store(false)
	select {
	case tk := <-tookc:
		t.Fatalf("%s took over a finished job", tk.node)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestLostNodeClaimsNoOrphan: a node whose session is lost does not
// take an orphan over, even though canRun says yes; once it rejoined,
// its next scan does.
func TestLostNodeClaimsNoOrphan(t *testing.T) {
	prefix := testPrefix(t)
	nodes := joinN(t, ClientURLs(shared), prefix, 2, 2*time.Second)
	n1, n2 := nodes[0], nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, _, err := n1.StartJob(ctx, jobRec("job_l", "req-l")); err != nil {
		t.Fatal(err)
	}
	n1.pauseKeepalive.Store(true)
	waitFor(t, 5*time.Second, "job_l orphaned", func() bool { r, err := n2.Job(ctx, "job_l"); return err == nil && r.Waiting })
	n2.pauseKeepalive.Store(true)
	waitFor(t, 5*time.Second, "n2 lost", func() bool { return n2.Live() != nil })
	var mu sync.Mutex
	var took []bool // whether n2 was live when start was called
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n2.WatchOrphans(wctx, func(JobRecord) bool { return true },
			func(JobRecord, JobClaim) { mu.Lock(); took = append(took, n2.Live() == nil); mu.Unlock() })
	}()
	defer func() { wcancel(); <-done }()
	// n2 scans at once and finds the orphan; lost (its rejoin is one TTL
	// after the loss), it claims nothing.
	time.Sleep(500 * time.Millisecond) // a window in which nothing may happen
	mu.Lock()
	early := len(took)
	mu.Unlock()
	if n2.Live() == nil {
		t.Skip("n2 rejoined within the window; the window proves nothing on this machine")
	}
	if early != 0 {
		t.Fatalf("n2 took the orphan over while its session was lost")
	}
	n2.pauseKeepalive.Store(false)
	waitFor(t, 15*time.Second, "n2 takes job_l over after it rejoined", func() bool { mu.Lock(); defer mu.Unlock(); return len(took) == 1 })
	mu.Lock()
	if !took[0] {
		t.Fatal("start was called while n2's session was lost")
	}
	mu.Unlock()
	r, err := n1.Job(ctx, "job_l")
	if err != nil || r.Node != "n2" || r.Attempt != 2 {
		t.Fatalf("record = %+v, %v", r, err)
	}
}

func jsonInto(b []byte, v any) bool { return json.Unmarshal(b, v) == nil }

func TestSealJobCoversWhatRuns(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	base := jobRec("job_1", "r1")
	base.Origin, base.Created = "n1", time.Unix(1700000000, 123)
	seal := sealJob(key, base)
	base.Seal = seal
	if !jobSealValid(key, base) {
		t.Fatal("a record's own seal does not verify")
	}
	if jobSealValid([]byte("another key, another key, anothe"), base) {
		t.Fatal("a seal verifies under another key")
	}
	// Every field fixed at job_start is covered; the state is not.
	for name, mod := range map[string]func(*JobRecord){
		"job id":     func(r *JobRecord) { r.JobID = "job_2" },
		"request":    func(r *JobRecord) { r.RequestID = "r2" },
		"input hash": func(r *JobRecord) { r.InputHash = "sha256:x" },
		"argv":       func(r *JobRecord) { r.Spec.Argv = []string{"sh", "-c", "curl evil"} },
		"argv split": func(r *JobRecord) { r.Spec.Argv = []string{"sh", "-csleep 3; echo done"} },
		"cwd":        func(r *JobRecord) { r.Spec.Cwd = "sub" },
		"timeout":    func(r *JobRecord) { r.Spec.TimeoutS = 61 },
		"isolation":  func(r *JobRecord) { r.Spec.Isolation = "none" },
		"writes":     func(r *JobRecord) { r.Spec.Writes = true },
		"network":    func(r *JobRecord) { r.Spec.Network = true },
		"roots":      func(r *JobRecord) { r.Roots = []string{commitA} },
		"commit":     func(r *JobRecord) { r.Commit = rootA },
		"origin":     func(r *JobRecord) { r.Origin = "n2" },
		"created":    func(r *JobRecord) { r.Created = r.Created.Add(time.Nanosecond) },
		"state blob": func(r *JobRecord) { r.StateBlob = DigestOf([]byte("another state")) },
		"state tree": func(r *JobRecord) { r.StateTree = commitA },
	} {
		r := base
		r.Spec.Argv = append([]string(nil), base.Spec.Argv...)
		mod(&r)
		if jobSealValid(key, r) {
			t.Errorf("changing the %s keeps the seal valid", name)
		}
	}
	r := base
	r.State, r.Attempt, r.Node, r.Token, r.Tail = "succeeded", 3, "n3", 99, "out"
	if !jobSealValid(key, r) {
		t.Error("the job's state, attempt, node, token or tail changed its seal")
	}
}

// TestForgedJobNotTakenOver: with the fleet key, a job record written to
// etcd by someone without the key (unsealed, or a sealed record whose
// argv was changed) is never taken over, nor is canRun asked; a sealed
// orphan is.
func TestForgedJobNotTakenOver(t *testing.T) {
	prefix := testPrefix(t)
	key := []byte("fleet key of the test, 32 bytes!")
	cfg := func(name string) Config {
		return Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: name, TTL: 2 * time.Second, SealKey: key}
	}
	n1, n2 := join(t, cfg("n1")), join(t, cfg("n2"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, _, _, err := n1.StartJob(ctx, jobRec("job_s", "req-s"))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := n2.Job(ctx, "job_s")
	if err != nil || stored.Seal == "" || !jobSealValid(key, stored) || stored.Seal != rec.Seal {
		t.Fatalf("stored record %+v (%v): want it sealed under the fleet key", stored, err)
	}
	cli := rawClient(t, ClientURLs(shared))
	forged := stored
	forged.JobID, forged.Spec.Argv = "job_forged", []string{"sh", "-c", "echo pwned"}
	unsealed := stored
	unsealed.JobID, unsealed.Seal = "job_unsealed", ""
	for _, r := range []JobRecord{forged, unsealed} {
		if _, err := cli.Put(ctx, prefix+"jobs/"+r.JobID, string(mustJSON(t, r))); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	var asked, took []string
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n2.WatchOrphans(wctx, func(r JobRecord) bool { mu.Lock(); asked = append(asked, r.JobID); mu.Unlock(); return true },
			func(r JobRecord, _ JobClaim) { mu.Lock(); took = append(took, r.JobID); mu.Unlock() })
	}()
	defer func() { wcancel(); <-done }()
	n1.pauseKeepalive.Store(true)
	waitFor(t, 10*time.Second, "n2 takes the sealed orphan over", func() bool { mu.Lock(); defer mu.Unlock(); return len(took) > 0 })
	// One more scan (every TTL) after the takeover: still nothing forged.
	time.Sleep(2500 * time.Millisecond) // a window in which nothing may happen
	mu.Lock()
	defer mu.Unlock()
	if len(took) != 1 || took[0] != "job_s" || slices.Contains(asked, "job_forged") || slices.Contains(asked, "job_unsealed") {
		t.Fatalf("took %v, asked %v: want job_s only, the forged records never considered", took, asked)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
