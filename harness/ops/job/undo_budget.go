package job

import (
	"context"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/ledger"
	"github.com/harnessd/harnessd/internal/preimage"
	"github.com/harnessd/harnessd/persistence"
)

// undoEstimateWithin bounds job_start's estimate of a job's undo
// snapshot: past it the estimate says nothing and the job is queued (the
// snapshot before its process still checks the budget exactly).
const undoEstimateWithin = time.Second

// undoEstimate answers BUDGET_EXCEEDED from job_start itself when a job
// that writes its checkout in place (writes, isolation none) may change
// more than the undo budget keeps (env.JobUndoMaxBytes, JobUndoMaxFiles):
// a walk of the job's scope (undoScope) that lists and sizes the paths
// the snapshot would keep, reads no content and gives up after
// undoEstimateWithin. An estimate under the budget, one that could not
// finish, and a retry of a request the ledger already knows (it answers
// the job it started) let the call go on: the snapshot taken before the
// job's process refuses it then, as before.
func undoEstimate(ctx context.Context, env *op.Env, root, requestID string, argv []string, cwd string) error {
	if env.PreImages == nil {
		return nil // no undo is kept: nothing to bound
	}
	if gs, ok, _ := parseGitState(argv); ok && gs.refsOnly() {
		return nil // branch -D, tag -f keep no snapshot (gitstate.go)
	}
	var known ledger.Entry
	if env.Store != nil && ledger.ValidateRequestID(requestID) == nil && env.Store.Get(persistence.LedgerKey(requestID), &known) == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, undoEstimateWithin)
	defer cancel()
	scope, ignored := undoScope(root, argv, cwd)
	skip, _, err := (&undoer{env: env}).ignoredSkip(ctx, root, ignored)
	if err != nil {
		return nil
	}
	deny := env.DenyFor(root)
	_, err = preimage.TakeTree(ctx, preimage.TreeOptions{
		Root: root, Scope: scope, Ignored: ignored, Skip: skip,
		Secret:   func(rel string) bool { _, ok := deny.Match(rel); return ok },
		MaxBytes: env.JobUndoMaxBytes, MaxFiles: env.JobUndoMaxFiles, StatOnly: true, Now: env.Now,
	})
	if errs.CodeOf(err) != errs.BudgetExceeded {
		return nil
	}
	return errs.From(err).With("estimated", true)
}
