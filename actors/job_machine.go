package actors

import (
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
)

// JobEvent is something that happens to a durable job.
type JobEvent string

// The job events.
const (
	JobEvStart     JobEvent = "start"     // a run slot was granted and the process is being started
	JobEvSucceed   JobEvent = "succeed"   // the process exited 0
	JobEvFail      JobEvent = "fail"      // non-zero exit, signal, or the job could not be prepared or started
	JobEvTimeout   JobEvent = "timeout"   // the job's timeout expired
	JobEvCancel    JobEvent = "cancel"    // job_cancel
	JobEvInterrupt JobEvent = "interrupt" // harnessd restarted while the job was live
	JobEvRetry     JobEvent = "retry"     // an interrupted job with retries left is queued again
)

// JobFinal reports whether state is final: no event moves a job out of it
// except retry from interrupted.
func JobFinal(state string) bool {
	switch state {
	case messages.JobSucceeded, messages.JobFailed, messages.JobTimedOut, messages.JobCancelled, messages.JobInterrupted:
		return true
	}
	return false
}

// JobTransition is the job state machine:
//
//	queued  --start--> running --succeed|fail|timeout|cancel--> final
//	queued  --cancel|fail|interrupt--> cancelled|failed|interrupted
//	running --interrupt--> interrupted --retry--> queued
//
// It returns the next state, or INVALID_STATE_TRANSITION for an event that
// does not apply to from.
func JobTransition(from string, ev JobEvent) (string, error) {
	switch from {
	case messages.JobQueued:
		switch ev {
		case JobEvStart:
			return messages.JobRunning, nil
		case JobEvCancel:
			return messages.JobCancelled, nil
		case JobEvFail:
			return messages.JobFailed, nil
		case JobEvInterrupt:
			return messages.JobInterrupted, nil
		}
	case messages.JobRunning:
		switch ev {
		case JobEvSucceed:
			return messages.JobSucceeded, nil
		case JobEvFail:
			return messages.JobFailed, nil
		case JobEvTimeout:
			return messages.JobTimedOut, nil
		case JobEvCancel:
			return messages.JobCancelled, nil
		case JobEvInterrupt:
			return messages.JobInterrupted, nil
		}
	case messages.JobInterrupted:
		if ev == JobEvRetry {
			return messages.JobQueued, nil
		}
	}
	return from, errs.New(jobTransitionCode, "job in state %q cannot %s", from, ev).With("state", from).With("event", string(ev))
}

// jobTransitionCode is the code of an invalid transition: a bug, never input.
const jobTransitionCode = errs.Internal
