package actors

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// fakeRunner counts runs; each run hands itself over to a job when
// interim is set (escalate), then blocks until release is closed (nil =
// no blocking) and returns outcome(run).
type fakeRunner struct {
	calls   atomic.Int32
	started chan struct{} // if set, gets a value as each run starts
	release chan struct{}
	outcome func(run messages.CheckRun, n int32) (messages.CheckOutcome, error)
	interim func(run messages.CheckRun, n int32) messages.CheckOutcome
}

func (f *fakeRunner) run(ctx context.Context, run messages.CheckRun, escalate func(messages.CheckOutcome)) (messages.CheckOutcome, error) {
	n := f.calls.Add(1)
	if f.interim != nil {
		escalate(f.interim(run, n))
	}
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			return messages.CheckOutcome{Cancelled: true}, nil
		}
	}
	if f.outcome != nil {
		return f.outcome(run, n)
	}
	return messages.CheckOutcome{RepoID: run.Key.RepoID, Pid: 1000 + int(n), Passed: true, Path: "fast"}, nil
}

func spawnChecks(t *testing.T, s *actor.ActorSystem, st *persistence.Store, cfg ChecksConfig) *actor.PID {
	t.Helper()
	if cfg.PruneEvery == 0 {
		cfg.PruneEvery = -1
	}
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewChecks(st, zap.NewNop(), cfg)), "checks-"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Root.PoisonFuture(pid).Wait() })
	return pid
}

func checkRun(repo, identity string) messages.CheckRun {
	return messages.CheckRun{Key: messages.CheckKey{RepoID: repo, CommonDir: "/src/.git", Identity: identity}, DefinitionDigest: "sha256:def"}
}

func stats(t *testing.T, s *actor.ActorSystem, pid *actor.PID) messages.CheckStatsReply {
	t.Helper()
	return want[messages.CheckStatsReply](t, request(t, s, pid, messages.CheckStats{}))
}

// eventually probes cond until it holds or 5 s pass. cond asks an actor
// (a mailbox round trip each time), so the probe waits on the actor rather
// than on a timer.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// settle is a barrier over the checks supervisor and the check actor of
// key: every Run sent before it has reached the check actor, been handled,
// and the supervisor has counted the notes the check actor sent.
func settle(t *testing.T, s *actor.ActorSystem, sup *actor.PID, key messages.CheckKey) {
	t.Helper()
	want[messages.Pong](t, request(t, s, sup, messages.Ping{}))
	want[messages.Pong](t, request(t, s, actor.NewPID(sup.Address, sup.Id+"/"+CheckActorName(key)), messages.Ping{}))
	want[messages.Pong](t, request(t, s, sup, messages.Ping{}))
}

func TestCheckJoinsConcurrentRunsAndReusesEvidence(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	f := &fakeRunner{release: make(chan struct{})}
	pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run})
	const n = 20
	futures := make([]*actor.Future, n)
	for i := range futures {
		futures[i] = s.Root.RequestFuture(pid, checkRun("repo_a", "sha256:aaaa"), 5*time.Second)
	}
	settle(t, s, pid, checkRun("repo_a", "sha256:aaaa").Key)
	if got := stats(t, s, pid).Joined; got != n-1 {
		t.Fatalf("joined callers = %d, want %d", got, n-1)
	}
	close(f.release)
	first := 0
	for i, fu := range futures {
		v, err := fu.Result()
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
		r := want[messages.CheckResult](t, v)
		if r.Reused || r.Outcome.Pid != 1001 || !r.Outcome.Passed {
			t.Fatalf("caller %d: got %+v, want the one run (pid 1001), not reused", i, r)
		}
		if !r.Joined {
			first++
		}
	}
	if first != 1 {
		t.Fatalf("got %d callers that started the run, want 1", first)
	}
	r := want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_a", "sha256:aaaa")))
	if !r.Reused || r.Joined || r.Outcome.Pid != 1001 {
		t.Fatalf("later call: got %+v, want reused evidence of pid 1001", r)
	}
	if got := f.calls.Load(); got != 1 {
		t.Fatalf("got %d runs, want 1", got)
	}
	var ev messages.CheckEvidence
	if err := st.Get(persistence.CheckEvidenceKey("repo_a", "sha256:aaaa"), &ev); err != nil || ev.Outcome.Pid != 1001 {
		t.Fatalf("stored evidence: got %+v, %v; want pid 1001", ev, err)
	}
}

// A Rerun runs the check although its evidence could be reused; its pass
// is the evidence from then on.
func TestCheckRerunRunsAgain(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	f := &fakeRunner{}
	pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run})
	rerun := checkRun("repo_a", "sha256:rrrr")
	rerun.Rerun = true
	for i, tc := range []struct {
		run    messages.CheckRun
		reused bool
		pid    int
	}{
		{checkRun("repo_a", "sha256:rrrr"), false, 1001},
		{checkRun("repo_a", "sha256:rrrr"), true, 1001},
		{rerun, false, 1002},
		{checkRun("repo_a", "sha256:rrrr"), true, 1002},
	} {
		r := want[messages.CheckResult](t, request(t, s, pid, tc.run))
		if r.Reused != tc.reused || r.Outcome.Pid != tc.pid {
			t.Fatalf("call %d (rerun %v): reused %v pid %d, want reused %v pid %d", i, tc.run.Rerun, r.Reused, r.Outcome.Pid, tc.reused, tc.pid)
		}
	}
	if got := f.calls.Load(); got != 2 {
		t.Fatalf("got %d runs, want 2", got)
	}
}

func TestCheckNeverReusesFailures(t *testing.T) {
	tests := []struct {
		name    string
		outcome messages.CheckOutcome
		err     error
	}{
		{name: "failed", outcome: messages.CheckOutcome{ExitCode: 1}},
		{name: "timed out", outcome: messages.CheckOutcome{ExitCode: -1, TimedOut: true}},
		{name: "cancelled", outcome: messages.CheckOutcome{ExitCode: -1, Cancelled: true, Passed: true}},
		{name: "runner error", err: errs.New(errs.NotFound, "command not found")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, st := newTestSystem(t), newStore(t)
			f := &fakeRunner{outcome: func(messages.CheckRun, int32) (messages.CheckOutcome, error) { return tc.outcome, tc.err }}
			pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run})
			for i := 0; i < 3; i++ {
				v := request(t, s, pid, checkRun("repo_a", "sha256:bbbb"))
				if tc.err != nil {
					if fl, ok := v.(messages.Failed); !ok || errs.CodeOf(ErrorOf(fl)) != errs.NotFound {
						t.Fatalf("run %d: got %#v, want Failed NOT_FOUND", i, v)
					}
					continue
				}
				if r := want[messages.CheckResult](t, v); r.Reused {
					t.Fatalf("run %d: got reused %+v, want a new run", i, r)
				}
			}
			if got := f.calls.Load(); got != 3 {
				t.Fatalf("got %d runs, want 3", got)
			}
			if n, _ := st.Count([]byte(persistence.PrefixCheck)); n != 0 {
				t.Fatalf("got %d stored check keys, want 0", n)
			}
		})
	}
}

func TestCheckPassivatesAndRestoresFromStore(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	f := &fakeRunner{}
	pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run, Idle: 20 * time.Millisecond})
	if r := want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_a", "sha256:cccc"))); r.Reused {
		t.Fatalf("first run: got reused, want a run")
	}
	eventually(t, "passivation", func() bool { st := stats(t, s, pid); return st.Passived == 1 && st.Active == 0 })
	r := want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_a", "sha256:cccc")))
	if !r.Reused || r.Outcome.Pid != 1001 {
		t.Fatalf("after passivation: got %+v, want evidence of pid 1001 reused", r)
	}
	if got := f.calls.Load(); got != 1 {
		t.Fatalf("got %d runs, want 1", got)
	}
	if got := stats(t, s, pid).Spawned; got != 2 {
		t.Fatalf("got %d spawns, want 2", got)
	}
}

func TestCheckRunsDuringPassivationAreNotLost(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	f := &fakeRunner{}
	pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run, Idle: time.Millisecond})
	for i := 0; i < 200; i++ {
		v := request(t, s, pid, checkRun("repo_a", "sha256:dddd"))
		if _, ok := v.(messages.CheckResult); !ok {
			t.Fatalf("call %d: got %#v, want a result", i, v)
		}
	}
	if got := f.calls.Load(); got != 1 {
		t.Fatalf("got %d runs, want 1", got)
	}
}

func TestCheckSharedEvidenceAcrossCheckouts(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	f := &fakeRunner{}
	pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run, Idle: time.Millisecond})
	shared := func(repo string) messages.CheckRun {
		r := checkRun(repo, "sha256:eeee")
		r.Key.Shared = true
		return r
	}
	want[messages.CheckResult](t, request(t, s, pid, shared("repo_a")))
	eventually(t, "passivation", func() bool { return stats(t, s, pid).Active == 0 })
	r := want[messages.CheckResult](t, request(t, s, pid, shared("repo_b")))
	if !r.Reused || r.Outcome.RepoID != "repo_a" {
		t.Fatalf("clean second checkout: got %+v, want repo_a's evidence reused", r)
	}
	r = want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_b", "sha256:eeee")))
	if r.Reused {
		t.Fatalf("unshared key of another checkout: got reused, want its own run")
	}
	if got := f.calls.Load(); got != 2 {
		t.Fatalf("got %d runs, want 2", got)
	}
}

func TestCheckPreviousEvidenceOfTheDefinition(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	f := &fakeRunner{}
	pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run})
	r := want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_a", "sha256:1111")))
	if r.Previous != nil {
		t.Fatalf("first identity: got previous %+v, want none", r.Previous)
	}
	r = want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_a", "sha256:2222")))
	if r.Previous == nil || r.Previous.Identity != "sha256:1111" {
		t.Fatalf("second identity: got previous %+v, want sha256:1111", r.Previous)
	}
}

// TestCheckPruneBoundsEvidence: evidence has no age bound; the
// repository's budget evicts the least recently used passes (a reuse
// counts as use), and their index entries go with them.
func TestCheckPruneBoundsEvidence(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	var mu sync.Mutex
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	f := &fakeRunner{}
	pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run, Now: clock, MaxPerRepo: 3})
	for _, id := range []string{"sha256:01", "sha256:02", "sha256:03", "sha256:04", "sha256:05"} {
		want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_a", id)))
		advance(time.Minute)
	}
	want[messages.Pong](t, request(t, s, pid, messages.Ping{}))
	kept := func(ids map[string]bool) {
		t.Helper()
		for id, k := range ids {
			ok, err := st.Has(persistence.CheckEvidenceKey("repo_a", id))
			if err != nil || ok != k {
				t.Fatalf("%s: got kept=%v (%v), want %v", id, ok, err, k)
			}
		}
	}
	kept(map[string]bool{"sha256:01": false, "sha256:02": false, "sha256:03": true, "sha256:04": true, "sha256:05": true})

	// A year on, nothing has aged out, and the oldest pass is reused
	// (recorded as its last use).
	advance(365 * 24 * time.Hour)
	if p := want[messages.CheckPruned](t, request(t, s, pid, messages.CheckPrune{})); p.Removed != 0 {
		t.Fatalf("a year later: got %d removed, want 0 (no age bound)", p.Removed)
	}
	if r := want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_a", "sha256:03"))); !r.Reused {
		t.Fatalf("a year-old pass: got %+v, want it reused", r)
	}
	used := clock()
	eventually(t, "the reuse of sha256:03 recorded", func() bool {
		var ev messages.CheckEvidence
		return st.Get(persistence.CheckEvidenceKey("repo_a", "sha256:03"), &ev) == nil && ev.UsedAt.Equal(used)
	})
	if n := f.calls.Load(); n != 5 {
		t.Fatalf("got %d runs, want 5", n)
	}

	// A new pass evicts the least recently used: 04, not the reused 03.
	advance(time.Minute)
	want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_a", "sha256:06")))
	want[messages.Pong](t, request(t, s, pid, messages.Ping{}))
	kept(map[string]bool{"sha256:03": true, "sha256:04": false, "sha256:05": true, "sha256:06": true})
	if n, _ := st.Count(persistence.CheckRepoPrefix("repo_a")); n != 4 {
		t.Fatalf("got %d keys (3 evidence + the def index), want 4", n)
	}
}

// TestCheckPruneBytesBudget: the bytes budget evicts the least recently
// used passes until the rest fits, and a failed outcome found in the
// store (written by an older build) is never kept.
func TestCheckPruneBytesBudget(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	var mu sync.Mutex
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f := &fakeRunner{outcome: func(run messages.CheckRun, n int32) (messages.CheckOutcome, error) {
		return messages.CheckOutcome{RepoID: run.Key.RepoID, Passed: true, Stdout: strings.Repeat("x", 1000)}, nil
	}}
	// Room for two passes of ~1.3 KB, not three.
	pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run, Now: clock, MaxPerRepo: -1, MaxBytesPerRepo: 3000})
	failed := messages.CheckEvidence{RepoID: "repo_a", Identity: "sha256:ff", Outcome: messages.CheckOutcome{ExitCode: 1}, StoredAt: clock().Add(time.Hour)}
	if err := st.PutSync(persistence.CheckEvidenceKey("repo_a", "sha256:ff"), &failed); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"sha256:01", "sha256:02", "sha256:03"} {
		want[messages.CheckResult](t, request(t, s, pid, checkRun("repo_a", id)))
		mu.Lock()
		now = now.Add(time.Minute)
		mu.Unlock()
	}
	want[messages.Pong](t, request(t, s, pid, messages.Ping{}))
	for id, k := range map[string]bool{"sha256:ff": false, "sha256:01": false, "sha256:02": true, "sha256:03": true} {
		if ok, err := st.Has(persistence.CheckEvidenceKey("repo_a", id)); err != nil || ok != k {
			t.Fatalf("%s: got kept=%v (%v), want %v", id, ok, err, k)
		}
	}
}

func TestCheckStopFailsWaiters(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	f := &fakeRunner{release: make(chan struct{}), started: make(chan struct{}, 1)}
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewChecks(st, zap.NewNop(), ChecksConfig{Runner: f.run, PruneEvery: -1})), "checks-stop")
	if err != nil {
		t.Fatal(err)
	}
	fu := s.Root.RequestFuture(pid, checkRun("repo_a", "sha256:ffff"), 5*time.Second)
	<-f.started
	if err := s.Root.PoisonFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	v, err := fu.Result()
	if err != nil {
		t.Fatal(err)
	}
	if fl, ok := v.(messages.Failed); !ok || errs.CodeOf(ErrorOf(fl)) != errs.Unavailable {
		t.Fatalf("got %#v, want Failed UNAVAILABLE", v)
	}
}

func TestCheckRejectsBadKeys(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	pid := spawnChecks(t, s, st, ChecksConfig{})
	tests := []struct {
		name string
		key  messages.CheckKey
	}{
		{"no identity", messages.CheckKey{RepoID: "repo_a"}},
		{"no repo", messages.CheckKey{Identity: "sha256:aa"}},
		{"shared without common dir", messages.CheckKey{RepoID: "repo_a", Identity: "sha256:aa", Shared: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := request(t, s, pid, messages.CheckRun{Key: tc.key})
			if fl, ok := v.(messages.Failed); !ok || errs.CodeOf(ErrorOf(fl)) != errs.InvalidArgument {
				t.Fatalf("got %#v, want Failed INVALID_ARGUMENT", v)
			}
		})
	}
	// Without a runner and an Exec the run fails cleanly.
	v := request(t, s, pid, checkRun("repo_a", "sha256:abab"))
	if fl, ok := v.(messages.Failed); !ok || !errors.As(ErrorOf(fl), new(*errs.Error)) {
		t.Fatalf("got %#v, want a coded Failed", v)
	}
}

func TestIsEvidenceKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"check/repo_a/sha256:01", true},
		{"check/repo_a/def/sha256:01", false},
		{"check/common/abcd/sha256:01", false},
		{"check/repo_a", false},
		{"job/repo_a/sha256:01", false},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			if got := isEvidenceKey([]byte(tc.key)); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCheckActorName(t *testing.T) {
	a := CheckActorName(messages.CheckKey{RepoID: "repo_a", Identity: "sha256:0123456789abcdef0123"})
	b := CheckActorName(messages.CheckKey{RepoID: "repo_b", Identity: "sha256:0123456789abcdef0123"})
	c := CheckActorName(messages.CheckKey{RepoID: "repo_a", CommonDir: "/x/.git", Shared: true, Identity: "sha256:0123456789abcdef0123"})
	if a == b || a == c || a[:22] != "check-0123456789abcdef" {
		t.Fatalf("names %q %q %q: want distinct per scope, prefixed by the identity", a, b, c)
	}
}

// A run handed over to a durable job answers every caller with the job at
// once (those waiting and those that come while it runs), runs once, and
// its final outcome becomes the evidence later callers reuse.
func TestCheckEscalatedRunAnswersTheJobAtOnce(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	esc := &messages.CheckEscalation{JobID: "job_7", Reason: "the focused check reached the Fast Path cap", CapMs: 300}
	f := &fakeRunner{
		release: make(chan struct{}),
		interim: func(run messages.CheckRun, _ int32) messages.CheckOutcome {
			return messages.CheckOutcome{RepoID: run.Key.RepoID, JobID: esc.JobID, Path: "durable", ExitCode: -1, Escalated: esc}
		},
		outcome: func(run messages.CheckRun, _ int32) (messages.CheckOutcome, error) {
			return messages.CheckOutcome{RepoID: run.Key.RepoID, JobID: esc.JobID, Pid: 77, Path: "durable", Passed: true, Stdout: "ok"}, nil
		},
	}
	pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run})
	run := checkRun("repo_a", "sha256:eeee")
	const n = 5
	futures := make([]*actor.Future, n)
	for i := range futures {
		futures[i] = s.Root.RequestFuture(pid, run, 5*time.Second)
	}
	first := 0
	for i, fu := range futures { // answered while the job still runs (release is open)
		v, err := fu.Result()
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
		r := want[messages.CheckResult](t, v)
		if r.Outcome.Escalated == nil || r.Outcome.Escalated.JobID != "job_7" || r.Outcome.Passed || r.Reused {
			t.Fatalf("caller %d: got %+v, want the interim answer naming job_7", i, r)
		}
		if !r.Joined {
			first++
		}
	}
	if first != 1 {
		t.Fatalf("got %d callers that started the run, want 1", first)
	}
	r := want[messages.CheckResult](t, request(t, s, pid, run))
	if r.Outcome.Escalated == nil || r.Outcome.Escalated.JobID != "job_7" || !r.Joined {
		t.Fatalf("a call while the job runs: got %+v, want job_7, joined", r)
	}
	close(f.release)
	eventually(t, "the job's outcome as evidence", func() bool {
		r = want[messages.CheckResult](t, request(t, s, pid, run))
		return r.Reused
	})
	if r.Outcome.Escalated != nil || !r.Outcome.Passed || r.Outcome.JobID != "job_7" || r.Outcome.Pid != 77 {
		t.Fatalf("reused: got %+v, want the job's final outcome", r.Outcome)
	}
	if got := f.calls.Load(); got != 1 {
		t.Fatalf("got %d runs, want 1", got)
	}
	var ev messages.CheckEvidence
	if err := st.Get(persistence.CheckEvidenceKey("repo_a", "sha256:eeee"), &ev); err != nil || ev.Outcome.JobID != "job_7" || ev.Outcome.Escalated != nil {
		t.Fatalf("stored evidence: got %+v, %v; want job_7's final outcome", ev, err)
	}
}

// An escalated run that fails leaves no evidence: the next call runs again.
func TestCheckEscalatedFailureIsNotEvidence(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	f := &fakeRunner{
		interim: func(run messages.CheckRun, n int32) messages.CheckOutcome {
			return messages.CheckOutcome{RepoID: run.Key.RepoID, JobID: "job_x", Path: "durable", ExitCode: -1,
				Escalated: &messages.CheckEscalation{JobID: "job_x", Reason: "cap"}}
		},
		outcome: func(run messages.CheckRun, _ int32) (messages.CheckOutcome, error) {
			return messages.CheckOutcome{RepoID: run.Key.RepoID, JobID: "job_x", Path: "durable", ExitCode: 1}, nil
		},
	}
	pid := spawnChecks(t, s, st, ChecksConfig{Runner: f.run})
	run := checkRun("repo_a", "sha256:ffff")
	_ = want[messages.CheckResult](t, request(t, s, pid, run))
	eventually(t, "the failed job's end", func() bool {
		return stats(t, s, pid).Running == 0
	})
	if r := want[messages.CheckResult](t, request(t, s, pid, run)); r.Reused || r.Joined {
		t.Fatalf("after a failed escalated run: got %+v, want a new run", r)
	}
	if got := f.calls.Load(); got != 2 {
		t.Fatalf("got %d runs, want 2", got)
	}
	if n, _ := st.Count([]byte(persistence.PrefixCheck)); n != 0 {
		t.Fatalf("got %d stored check keys, want 0", n)
	}
}

func TestCheckBudgetFromEnv(t *testing.T) {
	tests := []struct {
		name         string
		count, bytes string
		wantCount    int
		wantBytes    int64
	}{
		{"unset keeps the config", "", "", 7, 9},
		{"set", "50", "1048576", 50, 1 << 20},
		{"0 is no bound", "0", "0", -1, -1},
		{"invalid keeps the config", "many", "-3", 7, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvCheckEvidenceMax, tc.count)
			t.Setenv(EnvCheckEvidenceMaxBytes, tc.bytes)
			got := CheckBudgetFromEnv(ChecksConfig{MaxPerRepo: 7, MaxBytesPerRepo: 9})
			if got.MaxPerRepo != tc.wantCount || got.MaxBytesPerRepo != tc.wantBytes {
				t.Fatalf("got %d entries, %d bytes; want %d, %d", got.MaxPerRepo, got.MaxBytesPerRepo, tc.wantCount, tc.wantBytes)
			}
		})
	}
}
