package actors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// spawnJobsWith spawns a jobs actor with cfg's audit and hook over st.
func spawnJobsWith(t *testing.T, s *actor.ActorSystem, st *persistence.Store, cfg JobsConfig) *actor.PID {
	t.Helper()
	tasks := &Tasks{}
	t.Cleanup(func() {
		if !tasks.Wait(20 * time.Second) {
			t.Error("job goroutines still running")
		}
	})
	cfg.Store, cfg.Logger, cfg.DataDir, cfg.Tasks = st, zap.NewNop(), t.TempDir(), tasks
	if cfg.Index == nil {
		cfg.Index = &RepoIndex{}
	}
	cfg.Concurrency = 2
	if cfg.Grace == 0 {
		cfg.Grace = 200 * time.Millisecond
	}
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewJobs(cfg), actor.WithReceiverMiddleware(Recover(zap.NewNop()))), "jobs-"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Root.PoisonFuture(pid).Wait() })
	return pid
}

// storedJobAudit returns the outcomes of the job's entries in the audit
// store (durable, not the audit actor's buffer).
func storedJobAudit(t *testing.T, st *persistence.Store, jobID string) []string {
	t.Helper()
	var outcomes []string
	err := st.Scan([]byte(persistence.PrefixAudit), func(_ []byte, decode func(v any) error) error {
		var e audit.Entry
		if err := decode(&e); err != nil {
			return err
		}
		if e.Kind == audit.KindJob && e.Details["job_id"] == jobID {
			outcomes = append(outcomes, e.Outcome)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan the audit store: %v", err)
	}
	return outcomes
}

// A job's start is in the audit store, and its record says running,
// before its process starts: a kill at any moment leaves no job that ran
// without its audit entry. The audit entry is made durable 150 ms late (a
// slow disk), so a start that did not wait for it would be seen.
func TestJobStartAuditedBeforeItsProcessStarts(t *testing.T) {
	st := newStore(t)
	s := newTestSystem(t)
	auditPID, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewAudit(st, zap.NewNop(), AuditConfig{FlushEvery: 300 * time.Millisecond})), "audit-"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Root.PoisonFuture(auditPID).Wait() })

	var mu sync.Mutex // protects seen
	seen := map[string]string{}
	cfg := JobsConfig{
		Audit: func(e messages.AuditEntry) { s.Root.Send(auditPID, messages.AuditAppend{Entry: e}) },
		// A slow disk: the entry reaches the audit actor 150 ms late.
		AuditDurable: func(e messages.AuditEntry) func() error {
			done := make(chan error, 1)
			go func() {
				time.Sleep(150 * time.Millisecond) // the slow disk, not a wait on an actor
				res, err := s.Root.RequestFuture(auditPID, messages.AuditAppend{Entry: e}, 10*time.Second).Result()
				if fl, ok := res.(messages.Failed); ok && err == nil {
					err = errors.New(fl.Message)
				}
				done <- err
			}()
			return func() error { return <-done }
		},
		beforeProcess: func(j messages.Job) {
			var stored messages.Job
			getErr := st.Get(persistence.JobKey(j.ID), &stored)
			mu.Lock()
			defer mu.Unlock()
			if getErr != nil {
				seen[j.ID] = "record: " + getErr.Error()
				return
			}
			seen[j.ID] = stored.State + " " + strings.Join(storedJobAudit(t, st, j.ID), ",")
		},
	}
	jobs := spawnJobsWith(t, s, st, cfg)
	dir := t.TempDir()
	for _, id := range []string{"job_a1", "job_a2", "job_a3"} {
		want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: messages.Job{ID: id, RepoID: "repo_x", Root: dir, Argv: []string{"true"}, TimeoutS: 60}}))
	}
	for _, id := range []string{"job_a1", "job_a2", "job_a3"} {
		if j := finalJob(t, s, jobs, id); j.State != messages.JobSucceeded {
			t.Fatalf("%s ended %s, want succeeded", id, j.State)
		}
		mu.Lock()
		got := seen[id]
		mu.Unlock()
		if got != messages.JobRunning+" started" {
			t.Errorf("%s as stored when its process was about to start: %q, want %q", id, got, messages.JobRunning+" started")
		}
	}
}

// A start whose audit entry cannot be made durable never runs its
// process: the job fails with the store's code and nothing ran.
func TestJobNotStartedWithoutItsAuditEntry(t *testing.T) {
	st := newStore(t)
	s := newTestSystem(t)
	cfg := JobsConfig{
		AuditDurable: func(messages.AuditEntry) func() error {
			return func() error { return errs.New(errs.StorageUnavailable, "the data dir refuses writes") }
		},
		beforeProcess: func(j messages.Job) { t.Errorf("job %s: its process is starting without its audit entry", j.ID) },
	}
	jobs := spawnJobsWith(t, s, st, cfg)
	dir := t.TempDir()
	want[messages.JobInfo](t, request(t, s, jobs, messages.JobSubmit{Job: messages.Job{ID: "job_na", RepoID: "repo_x", Root: dir,
		Argv: []string{"touch", "ran"}, TimeoutS: 60}}))
	j := finalJob(t, s, jobs, "job_na")
	if j.State != messages.JobFailed || j.Error == nil || j.Error.Code != string(errs.StorageUnavailable) {
		t.Fatalf("job = %s %+v, want failed with STORAGE_UNAVAILABLE", j.State, j.Error)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the process ran (stat: %v)", err)
	}
}
