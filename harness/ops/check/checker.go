package check

import (
	"context"
	"time"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/checkid"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

// Checks is run_check's side of a run's verification (op.Checker, wired
// at Open): definitions, revisions and identities computed by run_check's
// own code, so a verified stage means what run_check stored.
type Checks struct{}

var _ op.Checker = Checks{}

// Define validates d as run_check takes it (Define).
func (Checks) Define(d op.CheckDef) error {
	_, err := Define(d.Argv, d.Cwd, d.TimeoutMs, d.Effects)
	return err
}

// Revision is the content revision of the checkout e (Revision).
func (Checks) Revision(ctx context.Context, env *op.Env, e runtime.RepoEntry, root *pathsafe.Root) (checkid.Revision, error) {
	return Revision(ctx, env, e, root)
}

// Evidence identifies d at rev (IdentifyAt) and returns its stored
// evidence (Evidence), of any age: the budget, not time, ends evidence.
func (Checks) Evidence(ctx context.Context, env *op.Env, e runtime.RepoEntry, rev checkid.Revision, d op.CheckDef, _ time.Time) (op.CheckFound, error) {
	def, err := Define(d.Argv, d.Cwd, d.TimeoutMs, d.Effects)
	if err != nil {
		return op.CheckFound{}, err
	}
	id, err := IdentifyAt(ctx, env, e, rev, def)
	if err != nil {
		return op.CheckFound{}, err
	}
	found := op.CheckFound{Identity: id.ID, Parts: id.Parts}
	found.Current, found.Previous, err = Evidence(env, id)
	return found, err
}
