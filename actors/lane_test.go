package actors

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/messages"
)

func TestLaneRunsOneStepAtATime(t *testing.T) {
	s := newTestSystem(t)
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewLane(LaneName(0), zap.NewNop(), nil)), LaneName(0))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	running := make(chan int, 3)
	run := func(i int) func(context.Context) (any, error) {
		return func(ctx context.Context) (any, error) {
			running <- i
			<-release
			return i * 10, nil
		}
	}
	futures := make([]*actor.Future, 3)
	for i := range futures {
		futures[i] = s.Root.RequestFuture(pid, messages.LaneRun{Index: i, Kind: "test", Run: run(i)}, 5*time.Second)
	}
	if got := <-running; got != 0 {
		t.Fatalf("first step to run = %d, want 0", got)
	}
	st := want[messages.LaneStatusReply](t, request(t, s, pid, messages.LaneStatus{}))
	if st.Running != "test" || st.Queued != 2 {
		t.Fatalf("status = %+v, want one running and two queued", st)
	}
	select {
	case i := <-running:
		t.Fatalf("step %d started while step 0 ran", i)
	default:
	}
	close(release)
	for i, f := range futures {
		res, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		d := want[messages.LaneDone](t, res)
		if d.Index != i || d.Result != i*10 || d.Err != nil || d.Lane != "lane-0" || d.FinishedAt.Before(d.StartedAt) {
			t.Fatalf("done %d = %+v", i, d)
		}
	}
}

func TestLaneSkipsCancelledAndSurvivesPanics(t *testing.T) {
	s := newTestSystem(t)
	pid, err := s.Root.SpawnNamed(actor.PropsFromProducer(NewLane("lane-x", zap.NewNop(), nil)), "lane-x")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	d := want[messages.LaneDone](t, request(t, s, pid, messages.LaneRun{Ctx: ctx, Kind: "test", Run: func(context.Context) (any, error) { ran = true; return nil, nil }}))
	if !d.Skipped || d.Err == nil || ran {
		t.Fatalf("cancelled step = %+v (ran %v), want skipped", d, ran)
	}
	d = want[messages.LaneDone](t, request(t, s, pid, messages.LaneRun{Kind: "boom", Run: func(context.Context) (any, error) { panic("boom") }}))
	if d.Err == nil {
		t.Fatal("panicking step reported no error")
	}
	want[messages.Failed](t, request(t, s, pid, messages.LaneRun{Kind: "nil"}))
	st := want[messages.LaneStatusReply](t, request(t, s, pid, messages.LaneStatus{}))
	if st.Skipped != 1 || st.Failed != 1 || st.Running != "" {
		t.Fatalf("status = %+v", st)
	}
}
