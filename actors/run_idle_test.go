package actors

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/messages"
)

// observed returns a channel that receives the first run event that is an
// observation of kind (the subscription ends with the test). Reading it
// fails the test after 10 s without one.
func observed(t *testing.T, s *actor.ActorSystem, kind string) <-chan messages.RunEvent {
	t.Helper()
	ch := make(chan messages.RunEvent, 1)
	sub := s.EventStream.Subscribe(func(ev any) {
		if e, ok := ev.(messages.RunEvent); ok && e.Type == "observation" && e.Observation != nil && e.Observation.Kind == kind {
			select {
			case ch <- e:
			default:
			}
		}
	})
	t.Cleanup(func() { s.EventStream.Unsubscribe(sub) })
	out := make(chan messages.RunEvent, 1)
	go func() {
		select {
		case e := <-ch:
			out <- e
		case <-time.After(10 * time.Second):
			out <- messages.RunEvent{Observation: &messages.RunObservation{Text: "no " + kind + " observation within 10 s"}}
		}
	}()
	return out
}

// A run whose session ends while its job runs stays active (detached,
// saying so); once the job has finished, the sweep's next look ends it
// ("session ended"). An explicit run is never ended with its session.
func TestRunEndsWithItsSessionOnceItsJobIsDone(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	var state atomic.Value
	state.Store(messages.JobRunning)
	jobs := s.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(messages.JobGet); ok {
			c.Respond(messages.JobInfo{Job: messages.Job{ID: m.ID, State: state.Load().(string)}})
		}
	}))
	t.Cleanup(func() { _ = s.Root.PoisonFuture(jobs).Wait() })
	t0 := time.Unix(1_000_000, 0)
	tasks := &Tasks{}
	t.Cleanup(func() { tasks.Wait(10 * time.Second) })
	ix := &RunIndex{}
	sup := spawnCrashable(t, s, "runs", NewRuns(RunsConfig{Store: st, Index: ix, Jobs: jobs, Tasks: tasks, SweepEvery: time.Hour, Now: func() time.Time { return t0 }}))
	t.Cleanup(func() { _ = s.Root.PoisonFuture(sup).Wait() })

	run := want[messages.RunGot](t, request(t, s, sup, messages.RunStart{Implicit: true, Caller: messages.Caller{Session: "s1"}})).State
	explicit := want[messages.RunGot](t, request(t, s, sup, messages.RunStart{Goal: "g", Caller: messages.Caller{Session: "s1"}})).State
	want[messages.RunBound](t, request(t, s, sup, messages.RunBind{RunID: explicit.RunID, Caller: messages.Caller{Session: "s2"}}))
	e, ok := ix.Lookup(run.RunID)
	if !ok {
		t.Fatal("the run is not in the index")
	}
	// The job_start span of the run (its job is running).
	s.Root.Send(e.PID, messages.RunSpan{SpanID: "j", Op: "job_start", Outcome: "ok", JobID: "job_1", Start: t0})

	kept := observed(t, s, "detached")
	s.Root.Send(sup, messages.RunSessionClosed{Session: "s1", Now: t0})
	if o := <-kept; o.RunID != run.RunID || o.Observation.Text == "" {
		t.Fatalf("the run with a running job: %+v", o.Observation)
	}
	if got := want[messages.RunGot](t, request(t, s, sup, messages.RunGet{RunID: run.RunID})); got.State.Status != messages.RunActive {
		t.Fatalf("a run with a running job ended with its session: %s (%s)", got.State.Status, got.State.EndReason)
	}

	explicitKept := observed(t, s, "detached")
	s.Root.Send(sup, messages.RunSessionClosed{Session: "s2", Now: t0})
	if o := <-explicitKept; o.RunID != explicit.RunID {
		t.Fatalf("the explicit run: %+v", o)
	}

	// The job finishes; a sweep inside IdleRecheck does not look, the
	// next one does and ends the implicit run.
	state.Store(messages.JobSucceeded)
	want[messages.RunSwept](t, request(t, s, sup, messages.RunSweep{Now: t0.Add(runs.IdleRecheck / 2)}))
	if got := want[messages.RunGot](t, request(t, s, sup, messages.RunGet{RunID: run.RunID})); got.State.Status != messages.RunActive {
		t.Fatalf("ended before the recheck: %+v", got.State)
	}
	ended := make(chan messages.RunState, 1)
	sub := s.EventStream.Subscribe(func(ev any) {
		if e, ok := ev.(messages.RunEvent); ok && e.Type == "end" && e.RunID == run.RunID {
			ended <- *e.State
		}
	})
	defer s.EventStream.Unsubscribe(sub)
	want[messages.RunSwept](t, request(t, s, sup, messages.RunSweep{Now: t0.Add(runs.IdleRecheck)}))
	select {
	case st := <-ended:
		if st.Status != messages.RunEnded || st.EndReason != runs.SessionEnded {
			t.Fatalf("ended as %s (%s), want ended (%s)", st.Status, st.EndReason, runs.SessionEnded)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end once its job was done")
	}
	if got := want[messages.RunGot](t, request(t, s, sup, messages.RunGet{RunID: explicit.RunID})); got.State.Status != messages.RunActive {
		t.Fatalf("the explicit run ended behind the agent's back: %s (%s)", got.State.Status, got.State.EndReason)
	}
}
