package check

import (
	"context"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/messages"
)

// FleetRunner wraps runner so that a check whose evidence is shared runs
// once fleet-wide (docs/fleet.md): this node's check actor stays the
// local joiner of its callers; the fleet answers from its action cache
// (evidence by digest), joins another node's run, or claims the run and
// calls runner. A check whose evidence is not shared (a dirty checkout,
// workspace writes, network), and a rerun, runs on this node only.
func FleetRunner(n *fleet.Node, runner actors.CheckRunner) actors.CheckRunner {
	return func(ctx context.Context, run messages.CheckRun, escalate func(messages.CheckOutcome)) (messages.CheckOutcome, error) {
		if !run.Key.Shared || run.Rerun {
			return runner(ctx, run, escalate)
		}
		var local *messages.CheckOutcome // this node's own run, when it ran it
		res, err := n.SingleFlight(ctx, run.Key.Identity, func(cctx context.Context, _ fleet.Claim) (fleet.Outcome, error) {
			o, err := runner(cctx, run, escalate)
			local = &o
			return toFleet(o), err
		})
		if err != nil {
			return messages.CheckOutcome{}, err
		}
		o := fromFleet(res.Outcome)
		if res.Source == "ran" && local != nil {
			o = *local // with its pid and resource figures
		}
		o.Fleet = &messages.FleetRun{RunID: res.RunID, Node: res.Node, Token: res.Token, Source: res.Source, Refused: res.Refused}
		return o, nil
	}
}

// toFleet is the part of a check's outcome the fleet records.
func toFleet(o messages.CheckOutcome) fleet.Outcome {
	return fleet.Outcome{RepoID: o.RepoID, JobID: o.JobID, StartedAt: o.StartedAt, FinishedAt: o.FinishedAt,
		ExitCode: o.ExitCode, Passed: o.Passed, TimedOut: o.TimedOut, Cancelled: o.Cancelled,
		Stdout: o.Stdout, Stderr: o.Stderr, Summary: o.Summary, Path: o.Path}
}

// fromFleet is the check outcome of a fleet record.
func fromFleet(f fleet.Outcome) messages.CheckOutcome {
	return messages.CheckOutcome{RepoID: f.RepoID, JobID: f.JobID, StartedAt: f.StartedAt, FinishedAt: f.FinishedAt,
		ExitCode: f.ExitCode, Passed: f.Passed, TimedOut: f.TimedOut, Cancelled: f.Cancelled,
		Stdout: f.Stdout, Stderr: f.Stderr, Summary: f.Summary, Path: f.Path}
}
