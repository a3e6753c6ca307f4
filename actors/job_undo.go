package actors

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/messages"
)

// JobUndo keeps what a job that writes its checkout in place changes, so
// revert can undo it (a dependency of the jobs actor, never part of a
// message; see docs/undo.md). Both run off the actor's goroutine.
type JobUndo interface {
	// Before snapshots what the job may change and stores its pre-images
	// durably before the process starts; an error (BUDGET_EXCEEDED)
	// fails the job before it runs.
	Before(ctx context.Context, j messages.Job) error
	// After compares the checkout with Before's snapshot once the job's
	// processes are dead (its lease still held, or at boot for a job a
	// restart interrupted) and stores the job's receipt: its id.
	After(ctx context.Context, j messages.Job) (string, error)
}

// undoes reports whether j writes its checkout in place (its undo is kept).
func undoes(cfg JobsConfig, j messages.Job) bool {
	return cfg.Undo != nil && j.Writes && j.Isolation != messages.JobIsolationWorktree
}

// undoAfterTimeout bounds the comparison after a job.
const undoAfterTimeout = 10 * time.Minute

// jobReceipt runs u.After for j and returns the receipt's id, or "" and
// why (logged: the job's outcome stands without it).
func jobReceipt(u JobUndo, lg *zap.Logger, j messages.Job) (string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), undoAfterTimeout)
	defer cancel()
	id, err := u.After(ctx, j)
	if err != nil {
		lg.Warn("the job's receipt (its undo) could not be made", zap.String("job_id", j.ID), zap.Error(err))
		return "", "undo: the job's receipt could not be made: " + err.Error()
	}
	return id, ""
}
