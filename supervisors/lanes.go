package supervisors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/harnessd/harnessd/actors"
)

// LanesName is the root supervisor's child that supervises the read lanes.
const LanesName = "lanes"

func init() {
	register(func(d Deps) Child {
		mw := actor.WithReceiverMiddleware(actors.Recover(d.Logger))
		children := make([]Child, actors.NumLanes)
		for i := range children {
			name := actors.LaneName(i)
			children[i] = Child{Name: name, Props: actor.PropsFromProducer(actors.NewLane(name, d.Logger, d.Now), mw), Restart: Permanent}
		}
		return Child{Name: LanesName, Props: Props(Spec{Children: children, Intensity: 10, Period: 30 * time.Second}, d.Logger), Restart: Permanent}
	})
}

// LanePID returns the PID of lane i under the root supervisor root.
func LanePID(root *actor.PID, i int) *actor.PID {
	return ChildPID(ChildPID(root, LanesName), actors.LaneName(i))
}
