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
	"github.com/harnessd/harnessd/harness/ops/read"
	"github.com/harnessd/harnessd/harness/ops/repo"
	"github.com/harnessd/harnessd/harness/ops/run"
	"github.com/harnessd/harnessd/harness/ops/target"
	"github.com/harnessd/harnessd/harness/ops/undo"
)

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
		context.Ops(),
		target.Ops(),
		undo.Ops(),
	)
}
