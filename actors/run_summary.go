package actors

import (
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/internal/verify"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Run summaries and stalled stages (FlowDeck L4).
//
// When a run ends, or its session goes away and leaves it idle with work
// open, the run writes a summary (runs.Summarize): what changed with the
// receipts, checks and their verdicts, approvals, escalations, the stages
// and what stays open, with the run's scorecard. The facts are gathered
// off the mailbox — the stored spans, the stage records, the states of
// its jobs — by a task, which answers runSummarized; the actor stores the
// summary with its state and under each repository it worked on
// (persistence.RunSummaryKey), where the next session's context_assemble
// finds it. Only a run with something stored gets one (a session that
// only read leaves nothing behind).
//
// A run whose current stage makes no progress (a stage change, a call
// that succeeds, a note) for RunsConfig.StallAfter is marked stuck at a
// sweep (runs.Stalled), with an observation; its next progress clears it.

// KeepSummaries is how many run summaries a repository keeps (the newest).
const KeepSummaries = 20

// runSummarized answers a summary task.
type runSummarized struct{ sum messages.RunSummary }

// summarize starts the task that writes the run's summary.
func (a *runActor) summarize(ctx actor.Context, trigger string, now time.Time) {
	if !a.stored && a.st.Implicit {
		return
	}
	a.ring.Each(hashInput)
	st, ring := cloneRunState(a.st), a.ring.Spans()
	self, root := ctx.Self(), ctx.ActorSystem().Root
	store, jobsPID := a.cfg.Store, a.cfg.Jobs
	a.cfg.Tasks.Go(func() {
		stored, err := storedSpans(store, st.RunID)
		if err != nil {
			a.lg.Warn("read the run's spans for its summary", zap.Error(err))
		}
		var stages []runs.StageFacts
		_ = store.Scan(persistence.ClaimRunPrefix(st.RunID), func(_ []byte, decode func(any) error) error {
			var s verify.Stage
			if decode(&s) == nil {
				stages = append(stages, runs.FactsOfStage(s))
			}
			return nil
		})
		var live []string
		if len(st.Jobs) > 0 {
			live = gatherOpen(root, jobsPID, store, st.RunID, st.Jobs).Jobs
		}
		sum := runs.Summarize(runs.SummaryFacts{State: st, Spans: runs.Merge(ring, stored), Stages: stages, LiveJobs: live, Trigger: trigger, Now: now})
		for _, repo := range sum.Repos {
			if err := store.PruneOldest(persistence.RunSummaryPrefix(repo), KeepSummaries-1); err != nil {
				a.lg.Warn("prune the repository's run summaries", zap.Error(err))
			}
		}
		root.Send(self, runSummarized{sum: sum})
	})
}

// summarized stores a summary with the run's state and under each of its
// repositories (replacing the run's previous one there).
func (a *runActor) summarized(ctx actor.Context, sum messages.RunSummary) {
	prev := a.st.Summary
	a.st.Summary = &sum
	err := a.cfg.Store.Update(true, func(tx *persistence.Txn) error {
		if prev != nil {
			for _, repo := range prev.Repos {
				if err := tx.Delete(persistence.RunSummaryKey(repo, prev.At, a.st.RunID)); err != nil {
					return err
				}
			}
		}
		for _, repo := range sum.Repos {
			if err := tx.Put(persistence.RunSummaryKey(repo, sum.At, a.st.RunID), sum); err != nil {
				return err
			}
		}
		return tx.Put(persistence.RunKey(a.st.RunID), a.st)
	})
	if err != nil {
		a.st.Summary = prev
		a.lg.Warn("store the run's summary", zap.Error(err))
		return
	}
	a.stored, a.dirty = true, false
	st := a.snapshot()
	a.emit(ctx, messages.RunEvent{Type: "state", State: &st})
}

// stallSweep marks the run stuck when its current stage made no progress
// for the stall window.
func (a *runActor) stallSweep(ctx actor.Context, now time.Time) {
	after := a.cfg.StallAfter
	if !runs.Stalled(a.st, now, after) {
		return
	}
	prev := cloneRunState(a.st)
	since := runs.LastProgress(a.st)
	a.st.Stuck, a.st.StuckSince = true, since
	o := messages.RunObservation{At: now, Source: "harnessd", Kind: "stuck",
		Text: "stage " + strconv.Quote(a.st.CurrentStage) + " made no progress for " + now.Sub(since).Round(time.Second).String() +
			" (since " + since.UTC().Format(time.RFC3339) + "): no stage change, successful call or note; the next one clears this"}
	runs.Observe(&a.st, o)
	if err := a.commit(ctx, prev, a.stored || !a.st.Implicit, messages.RunEvent{Type: "observation", Observation: &o}); err != nil {
		a.lg.Warn("mark the run stuck", zap.Error(err)) // the next sweep tries again
	}
}

// progress records progress at at; a run that was stuck is unstuck, and
// the observation that says so is returned for the caller to add, emit
// and store with the change that made the progress.
func (a *runActor) progress(at time.Time) *messages.RunObservation {
	if !runs.Progress(&a.st, at) {
		return nil
	}
	return &messages.RunObservation{At: at, Source: "harnessd", Kind: "unstuck", Text: "stage " + strconv.Quote(a.st.CurrentStage) + " made progress again"}
}
