package op

import (
	"context"
	"time"

	"github.com/harnessd/harnessd/messages"
)

// FleetJob is a job's place in a fleet (job_start's and job_status's
// fleet field): the attempt that runs it now, or ran it last; or, for a
// job that stays on its node, Local says why.
type FleetJob struct {
	Node    string `json:"node,omitempty"`    // the node of the attempt
	Attempt int    `json:"attempt,omitempty"` // 1 on the node job_start was asked on, +1 on every takeover
	Token   int64  `json:"token,omitempty"`   // the attempt's fencing token (its etcd revision); higher on every takeover
	// Waiting is true while the attempt's node is gone and no node
	// took the job over yet.
	Waiting bool   `json:"waiting,omitempty"`
	Local   string `json:"local,omitempty"`
}

// FleetStart is the fleet's decision on a job_start (FleetJobs.Start).
type FleetStart struct {
	// Existing is the job the request id already started on any node
	// of the fleet (a replay); nil = submit the job here.
	Existing *messages.Job
}

// FleetJobs is the fleet's side of job_start and job_status
// (harness/fleetjobs.go); Env.FleetJobs is nil outside a fleet.
type FleetJobs interface {
	// Start is asked before job_start submits job id (hash: the
	// request's input hash): it records a fleet job (claiming its
	// first attempt) when the job can run on another node, or answers
	// the job its request id already started fleet-wide.
	Start(ctx context.Context, c *Call, s JobSpec, hash, id string) (FleetStart, error)
	// Submitted tells the outcome of the local submit of job id
	// (Start answered no Existing).
	Submitted(id string, j messages.Job, err error)
	// Status answers job id as the fleet has it, from local (this
	// node's record, or localErr): a fleet job this node does not run
	// now is answered from the fleet's record (waiting up to wait for
	// its end); with its fleet field (nil: not a job_start in a fleet).
	Status(ctx context.Context, id string, local messages.Job, localErr error, wait time.Duration) (messages.Job, *FleetJob, error)
}
