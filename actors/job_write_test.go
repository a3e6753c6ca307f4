package actors

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

func TestWriteSlot(t *testing.T) {
	live := messages.Job{State: messages.JobQueued}
	running := messages.Job{State: messages.JobRunning}
	failed := messages.Job{State: messages.JobFailed}
	for _, tc := range []struct {
		name     string
		jobs     map[string]messages.Job
		wantID   string
		wantLive bool
	}{
		{"a new request takes the base id", nil, "b", false},
		{"a retry joins the queued job", map[string]messages.Job{"b": live}, "b", true},
		{"a retry joins the writing job", map[string]messages.Job{"b": running}, "b", true},
		{"after an attempt that ended, the next id", map[string]messages.Job{"b": failed}, "br2", false},
		{"a retry joins the live later attempt", map[string]messages.Job{"b": failed, "br2": live}, "br2", true},
		{"two ended attempts", map[string]messages.Job{"b": failed, "br2": failed}, "br3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, j := writeSlot("b", func(id string) (messages.Job, bool) { x, ok := tc.jobs[id]; return x, ok })
			if id != tc.wantID || (j != nil) != tc.wantLive {
				t.Fatalf("writeSlot = %q live %v, want %q live %v", id, j != nil, tc.wantID, tc.wantLive)
			}
		})
	}
}

func TestWriteEvent(t *testing.T) {
	busy := errs.New(errs.PatchConflict, "old_text not found")
	for _, tc := range []struct {
		name      string
		out       JobWritten
		cancelled bool
		want      JobEvent
		wantErr   bool
	}{
		{"written", JobWritten{Leased: true, ReceiptID: "r"}, false, JobEvSucceed, false},
		{"written although cancelled after its lease", JobWritten{Leased: true, ReceiptID: "r"}, true, JobEvSucceed, false},
		{"replayed before its lease", JobWritten{ReceiptID: "r"}, false, JobEvSucceed, false},
		{"cancelled while it waited", JobWritten{Err: errs.New(errs.Cancelled, "c")}, true, JobEvCancel, false},
		{"failed under its lease, cancel or not", JobWritten{Err: busy, Leased: true}, true, JobEvFail, true},
		{"failed before its lease", JobWritten{Err: busy}, false, JobEvFail, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := writeEvent(tc.out, tc.cancelled)
			if ev != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("writeEvent = %s, %v; want %s (error %v)", ev, err, tc.want, tc.wantErr)
			}
		})
	}
}

// fakeWriter is a JobWriter the test drives: each call is reported on
// calls and answered with what the test sends on answers (leased first
// when the answer says Leased); a cancelled ctx answers CANCELLED.
type fakeWriter struct {
	calls   chan messages.Job
	answers chan JobWritten
}

func newFakeWriter() *fakeWriter {
	return &fakeWriter{calls: make(chan messages.Job, 16), answers: make(chan JobWritten)}
}

func (f *fakeWriter) write(ctx context.Context, j messages.Job, leased func()) JobWritten {
	f.calls <- j
	select {
	case out := <-f.answers:
		if out.Leased {
			leased()
		}
		return out
	case <-ctx.Done():
		return JobWritten{Err: errs.New(errs.Cancelled, "cancelled while waiting"), Requeue: true}
	}
}

func (f *fakeWriter) called(t *testing.T) messages.Job {
	t.Helper()
	select {
	case j := <-f.calls:
		return j
	case <-time.After(10 * time.Second):
		t.Fatal("the writer was not called")
	}
	return messages.Job{}
}

func writeJobsUnderTest(t *testing.T, s *actor.ActorSystem, st *persistence.Store, concurrency int, w JobWriter) *actor.PID {
	t.Helper()
	return writeJobsLogged(t, s, st, concurrency, w, zap.NewNop())
}

func writeJobsLogged(t *testing.T, s *actor.ActorSystem, st *persistence.Store, concurrency int, w JobWriter, lg *zap.Logger) *actor.PID {
	t.Helper()
	tasks := &Tasks{}
	t.Cleanup(func() {
		if !tasks.Wait(20 * time.Second) {
			t.Error("job goroutines still running")
		}
	})
	cfg := JobsConfig{Store: st, Index: &RepoIndex{}, Logger: lg, DataDir: t.TempDir(), Tasks: tasks,
		Concurrency: concurrency, Grace: 200 * time.Millisecond, Write: w}
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewJobs(cfg), actor.WithReceiverMiddleware(Recover(zap.NewNop()))), "jobs-"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Root.PoisonFuture(pid).Wait() })
	return pid
}

func writeJob(id, hash string) messages.Job {
	return messages.Job{ID: id, RepoID: "repo_w", RequestID: "req-" + id, TimeoutS: 60,
		Write: &messages.JobWrite{Operation: "apply_patch", Args: []byte(`{}`), InputHash: hash}}
}

func memStore(t *testing.T) *persistence.Store {
	t.Helper()
	st, err := persistence.Open(persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// A write job is handed to its writer at once, although the only run slot
// is taken by a process job; it is queued until its lease is held, then
// running, and ends with the write's receipt.
func TestWriteJobTakesNoRunSlot(t *testing.T) {
	st := memStore(t)
	s := newTestSystem(t)
	w := newFakeWriter()
	jobs := writeJobsUnderTest(t, s, st, 1, w.write)
	dir := t.TempDir()
	want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: messages.Job{ID: "job_proc", RepoID: "repo_w", Root: dir, Argv: gateScript(dir), TimeoutS: 60}}))
	waitFile(t, dir+"/started")

	got := want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: writeJob("job_wa", "h1")})).Job
	if got.State != messages.JobQueued || got.RetryMax != writeJobRetries {
		t.Fatalf("submitted write job = %s retry %d", got.State, got.RetryMax)
	}
	if j := w.called(t); j.ID != "job_wa" || j.Write == nil || j.Write.InputHash != "h1" {
		t.Fatalf("writer got %+v", j)
	}
	if j := storedJob(t, st, "job_wa"); j.State != messages.JobQueued {
		t.Fatalf("stored while it waits for its lease: %s, want queued", j.State)
	}
	w.answers <- JobWritten{Leased: true, ReceiptID: "rcpt_1"}
	j := finalJob(t, s, jobs, "job_wa")
	if j.State != messages.JobSucceeded || j.ReceiptID != "rcpt_1" || j.StartedAt.IsZero() {
		t.Fatalf("write job ended %s receipt %q started %v", j.State, j.ReceiptID, j.StartedAt)
	}
	if sj := storedJob(t, st, "job_wa"); sj.State != messages.JobSucceeded || sj.ReceiptID != "rcpt_1" {
		t.Fatalf("stored %s %q", sj.State, sj.ReceiptID)
	}
	if p := want[messages.JobInfo](t, request(t, s, jobs, messages.JobGet{ID: "job_proc"})).Job; p.State != messages.JobRunning {
		t.Fatalf("the process job is %s, want still running", p.State)
	}
	stats := want[messages.JobStatsReply](t, request(t, s, jobs, messages.JobStats{}))
	if stats.Running != 1 {
		t.Fatalf("running = %d, want 1 (the process job's slot only)", stats.Running)
	}
	_ = want[messages.JobInfo](t, request(t, s, jobs, messages.JobCancel{ID: "job_proc"}))
}

// A retry of the request joins its live write job (the writer runs once);
// other input under the same request is REQUEST_CONFLICT; a failed write
// is recorded with its code, and the request may be queued again.
func TestWriteJobJoinConflictAndAgain(t *testing.T) {
	st := memStore(t)
	s := newTestSystem(t)
	w := newFakeWriter()
	jobs := writeJobsUnderTest(t, s, st, 2, w.write)
	want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: writeJob("job_wb", "h1")}))
	w.called(t)
	joined := want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: writeJob("job_wb", "h1")})).Job
	if joined.ID != "job_wb" || JobFinal(joined.State) {
		t.Fatalf("retry got %+v, want the live job", joined)
	}
	f := want[messages.Failed](t, request(t, s, jobs, messages.JobSubmit{Job: writeJob("job_wb", "h2")}))
	if errs.Code(f.Code) != errs.RequestConflict {
		t.Fatalf("other input: %+v, want REQUEST_CONFLICT", f)
	}
	w.answers <- JobWritten{Leased: true, Err: errs.New(errs.PatchConflict, "old_text not found in README.md")}
	j := finalJob(t, s, jobs, "job_wb")
	if j.State != messages.JobFailed || j.Error == nil || j.Error.Code != string(errs.PatchConflict) {
		t.Fatalf("failed write ended %s %+v", j.State, j.Error)
	}
	select {
	case extra := <-w.calls:
		t.Fatalf("the writer ran twice: %+v", extra)
	default:
	}
	again := want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: writeJob("job_wb", "h1")})).Job
	if again.ID != "job_wbr2" || again.State != messages.JobQueued {
		t.Fatalf("the request sent again: %+v, want a new job job_wbr2", again)
	}
	w.called(t)
	_ = want[messages.JobInfo](t, request(t, s, jobs, messages.JobCancel{ID: "job_wbr2"}))
	if c := finalJob(t, s, jobs, "job_wbr2"); c.State != messages.JobCancelled {
		t.Fatalf("cancelled while waiting: %s", c.State)
	}
}

// A write that answers "requeue" (harnessd stopping, nothing written)
// leaves the job queued, as stored, for the next start; a cancel then
// ends it at once.
func TestWriteJobRequeuedStaysQueued(t *testing.T) {
	st := memStore(t)
	s := newTestSystem(t)
	w := newFakeWriter()
	core, logs := observer.New(zap.InfoLevel)
	jobs := writeJobsLogged(t, s, st, 2, w.write, zap.New(core))
	want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: writeJob("job_wc", "h1")}))
	w.called(t)
	w.answers <- JobWritten{Err: errs.New(errs.Unavailable, "harnessd is shutting down"), Requeue: true}
	deadline := time.Now().Add(10 * time.Second)
	for logs.FilterMessageSnippet("runs again after the restart").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the job actor never handled the requeue")
		}
		time.Sleep(5 * time.Millisecond) // polling a log, not an actor's state
	}
	if j := want[messages.JobInfo](t, request(t, s, jobs, messages.JobGet{ID: "job_wc"})).Job; j.State != messages.JobQueued || j.Error != nil {
		t.Fatalf("requeued write job is %s %+v, want queued", j.State, j.Error)
	}
	if j := storedJob(t, st, "job_wc"); j.State != messages.JobQueued || j.Error != nil {
		t.Fatalf("stored %s %+v, want queued with no error", j.State, j.Error)
	}
	if c := want[messages.JobInfo](t, request(t, s, jobs, messages.JobCancel{ID: "job_wc"})).Job; c.State != messages.JobCancelled {
		t.Fatalf("cancel after the requeue: %s", c.State)
	}
}
