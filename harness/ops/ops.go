// Package ops lists harnessd's operations, one package per concern:
// repo (the registry), read (files, search, git status and diff), command
// (run_command, route_explain), mutation (apply_patch, git_stage,
// git_commit), batch (batch, batch_result, read_lanes), check (run_check),
// job (the Durable Path), proposal (patch proposals) and run (runs).
package ops

import (
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/ops/batch"
	"github.com/harnessd/harnessd/harness/ops/check"
	"github.com/harnessd/harnessd/harness/ops/command"
	"github.com/harnessd/harnessd/harness/ops/context"
	"github.com/harnessd/harnessd/harness/ops/job"
	"github.com/harnessd/harnessd/harness/ops/mutation"
	"github.com/harnessd/harnessd/harness/ops/proposal"
	"github.com/harnessd/harnessd/harness/ops/provenance"
	"github.com/harnessd/harnessd/harness/ops/push"
	"github.com/harnessd/harnessd/harness/ops/read"
	"github.com/harnessd/harnessd/harness/ops/repo"
	"github.com/harnessd/harnessd/harness/ops/run"
	"github.com/harnessd/harnessd/harness/ops/target"
	"github.com/harnessd/harnessd/harness/ops/undo"
)

// Wiring returns what the concerns lend each other through op, in one
// literal: the hooks of the write path, in the order it runs them (see
// op.WriteHooks), and the services run_check and the Durable Path offer.
// No operation package imports a sibling: mutation, undo and proposal
// write through their Call, run verifies checks through op.Checker, and an
// unfocused check starts its job through op.Durable.
func Wiring() op.Wiring {
	return op.Wiring{
		Hooks: op.WriteHooks{
			Verify:    run.Enforce,             // 1. the verification gate, before the write
			Keep:      undo.KeepFor,            // 2. each file's pre-image, before it changes
			Trailers:  provenance.StampCommit,  // 3. a commit's provenance trailers
			Committed: provenance.RecordCommit, // 4. what the commit changed, after it
		},
		Checks: check.Checks{},
		Jobs:   job.Durable{},
	}
}

// Registry returns the registry of every operation: the one literal list
// of concerns. A name defined twice panics.
func Registry() *op.Registry {
	return op.NewRegistry(
		repo.Ops(),
		read.Ops(),
		command.Ops(),
		mutation.Ops(),
		batch.Ops(),
		check.Ops(),
		job.Ops(),
		proposal.Ops(),
		run.Ops(),
		run.AssessOps(),
		provenance.Ops(),
		run.ClaimOps(),
		run.ReviewOps(),
		context.Ops(),
		target.Ops(),
		undo.Ops(),
		push.Ops(),
	)
}
