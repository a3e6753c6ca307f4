package actors

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/messages"
)

// laneRunner runs test steps by kind: "test" blocks until release and
// answers index*10, "boom" panics, "sleep" waits for its context.
type laneRunner struct {
	release chan struct{}
	running chan int
	ran     chan string
}

func (r *laneRunner) run(ctx context.Context, s messages.LaneRun) (json.RawMessage, error) {
	if r.ran != nil {
		r.ran <- s.Kind
	}
	switch s.Kind {
	case "boom":
		panic("boom")
	case "sleep":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	r.running <- s.Index
	<-r.release
	return json.RawMessage(strconv.Itoa(s.Index * 10)), nil
}

func spawnLane(t *testing.T, s *actor.ActorSystem, name string, run LaneRunner) *actor.PID {
	t.Helper()
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewLane(LaneConfig{Name: name, Runner: run, Logger: zap.NewNop()})), name)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestLaneRunsOneStepAtATime(t *testing.T) {
	s := newTestSystem(t)
	r := &laneRunner{release: make(chan struct{}), running: make(chan int, 3)}
	pid := spawnLane(t, s, LaneName(0), r.run)
	futures := make([]*actor.Future, 3)
	for i := range futures {
		futures[i] = s.Root.RequestFuture(pid, messages.LaneRun{Group: "g", Index: i, Kind: "test"}, 5*time.Second)
	}
	if got := <-r.running; got != 0 {
		t.Fatalf("first step to run = %d, want 0", got)
	}
	st := want[messages.LaneStatusReply](t, request(t, s, pid, messages.LaneStatus{}))
	if st.Running != "test" || st.Queued != 2 {
		t.Fatalf("status = %+v, want one running and two queued", st)
	}
	select {
	case i := <-r.running:
		t.Fatalf("step %d started while step 0 ran", i)
	default:
	}
	close(r.release)
	for i, f := range futures {
		res, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		d := want[messages.LaneDone](t, res)
		if d.Index != i || string(d.Result) != strconv.Itoa(i*10) || d.Failure != nil || d.Lane != "lane-0" || d.FinishedAt.Before(d.StartedAt) {
			t.Fatalf("done %d = %+v", i, d)
		}
	}
}

func TestLaneSkipsCancelledAndSurvivesPanics(t *testing.T) {
	s := newTestSystem(t)
	r := &laneRunner{release: make(chan struct{}), running: make(chan int, 3), ran: make(chan string, 8)}
	close(r.release)
	pid := spawnLane(t, s, "lane-x", r.run)
	s.Root.Send(pid, messages.LaneCancel{Group: "gone", Reason: "test"})
	d := want[messages.LaneDone](t, request(t, s, pid, messages.LaneRun{Group: "gone", Kind: "test"}))
	if !d.Skipped || d.Failure == nil || len(r.ran) != 0 {
		t.Fatalf("cancelled step = %+v (ran %d), want skipped", d, len(r.ran))
	}
	d = want[messages.LaneDone](t, request(t, s, pid, messages.LaneRun{Group: "late", Kind: "test", Deadline: time.Now().Add(-time.Second)}))
	if !d.Skipped || d.Failure == nil || len(r.ran) != 0 {
		t.Fatalf("step past its deadline = %+v, want skipped", d)
	}
	d = want[messages.LaneDone](t, request(t, s, pid, messages.LaneRun{Group: "b", Kind: "boom"}))
	if d.Failure == nil {
		t.Fatal("panicking step reported no error")
	}
	noRunner := spawnLane(t, s, "lane-none", nil)
	want[messages.Failed](t, request(t, s, noRunner, messages.LaneRun{Kind: "nil"}))
	st := want[messages.LaneStatusReply](t, request(t, s, pid, messages.LaneStatus{}))
	if st.Skipped != 2 || st.Failed != 1 || st.Running != "" {
		t.Fatalf("status = %+v", st)
	}
}

// A cancel of the running step's group ends it through its context.
func TestLaneCancelStopsTheRunningStep(t *testing.T) {
	s := newTestSystem(t)
	r := &laneRunner{ran: make(chan string, 2)}
	pid := spawnLane(t, s, "lane-c", r.run)
	f := s.Root.RequestFuture(pid, messages.LaneRun{Group: "g", Kind: "sleep"}, 5*time.Second)
	<-r.ran // running
	s.Root.Send(pid, messages.LaneCancel{Group: "g", Reason: "fail_fast"})
	res, err := f.Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := want[messages.LaneDone](t, res); d.Failure == nil || d.Skipped {
		t.Fatalf("cancelled running step = %+v, want failed with the cancellation", d)
	}
}
