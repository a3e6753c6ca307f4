package runtime

import (
	"time"

	"github.com/harnessd/harnessd/supervisors"
)

// tree is harnessd's root supervisor: its children in start order (they are
// drained in reverse). Reading this literal is reading the actor tree.
func tree(d supervisors.Deps) supervisors.Spec {
	return supervisors.Spec{
		Children: []supervisors.Child{
			supervisors.Ledger(d),    // the request ledger
			supervisors.Deadlocks(d), // the wait-for graph of runs; before the registry, whose checkouts report to it
			supervisors.Registry(d),  // repositories; checkout/<id> and their lease/<id> below it
			supervisors.Audit(d),     // the hash-chained audit writer
			supervisors.Lanes(d),     // lane-0 .. lane-3
			supervisors.Checks(d),    // check/<identity>, spawned on demand
			supervisors.Jobs(d),      // job/<id>, one per live job
			supervisors.Runs(d),      // run/<id>, one per live run
			supervisors.Targets(d),   // repository-free targets; target/<canonical root> below it, one per granted root
		},
		Intensity: 5,
		Period:    30 * time.Second,
	}
}
