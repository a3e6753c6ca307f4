package actors

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// Check evidence defaults. Evidence has no age bound: a pass is kept
// until its repository's budget (entries and bytes) needs the room, the
// least recently used first (checkid.Evict).
const (
	DefaultCheckIdle            = 5 * time.Minute
	DefaultCheckMaxPerRepo      = 200
	DefaultCheckMaxBytesPerRepo = 64 << 20
	// CheckEvidenceTouchEvery is how often a reuse of one piece of
	// evidence is recorded (its UsedAt): at most once per period.
	CheckEvidenceTouchEvery = time.Hour
)

// CheckRunner runs one check's spec for a check actor, in a goroutine of
// its own; ctx is cancelled when the actor stops. It is a dependency of the
// checks supervisor, never part of a message.
//
// A run that hands its check over to a durable job before it ends (a
// focused check that reached the Fast Path cap) calls escalate once with
// the interim outcome (Escalated set, naming the job): the actor answers
// every caller waiting, and every later caller until the run ends, with it
// at once, while the runner goes on waiting for the job; what the runner
// returns is the check's final outcome (its evidence when it passed).
type CheckRunner func(ctx context.Context, run messages.CheckRun, escalate func(interim messages.CheckOutcome)) (messages.CheckOutcome, error)

func noRunner(context.Context, messages.CheckRun, func(messages.CheckOutcome)) (messages.CheckOutcome, error) {
	return messages.CheckOutcome{}, errs.New(errs.Unavailable, "no check runner is configured")
}

// CheckActorName returns the child name of the check actor owning key:
// check-<16 hex of the identity>-<8 hex of its scope>. The scope is the
// common dir for shared keys and the repo id otherwise, so a dirty or
// writing checkout never joins another checkout's run.
func CheckActorName(key messages.CheckKey) string {
	id := strings.TrimPrefix(key.Identity, "sha256:")
	if len(id) > 16 {
		id = id[:16]
	}
	sum := sha256.Sum256([]byte(checkScope(key) + "\x00" + key.Identity))
	return "check-" + id + "-" + hex.EncodeToString(sum[:4])
}

func checkScope(key messages.CheckKey) string {
	if key.Shared {
		return "common:" + key.CommonDir
	}
	return "repo:" + key.RepoID
}

// checkDefIndex is the value of persistence.CheckDefKey.
type checkDefIndex struct {
	Identity string    `json:"identity"`
	StoredAt time.Time `json:"stored_at"`
}

// checkConfig configures one check actor.
type checkConfig struct {
	store  *persistence.Store
	lg     *zap.Logger
	now    func() time.Time
	key    messages.CheckKey
	idle   time.Duration
	runner CheckRunner
	tasks  *Tasks
}

// Internal messages of the check actor.
type (
	// checkDone is sent to the check actor by its run goroutine.
	checkDone struct {
		gen string // the run's token: unique across restarts, so that a
		// restarted instance ignores the end of its predecessor's run
		out messages.CheckOutcome
		err error
	}
	// checkEscalated is sent to the check actor by its run goroutine when
	// the run handed the check over to a durable job (CheckRunner).
	checkEscalated struct {
		gen     string
		interim messages.CheckOutcome
	}
	// checkIdle tells the checks supervisor that a check actor has been
	// idle for its receive timeout after handling handled Runs.
	checkIdle struct {
		pid     *actor.PID
		handled uint64
	}
	// checkIdleTick is sent by the passivation timer; handled is the count
	// of Runs when it was armed.
	checkIdleTick struct{ handled uint64 }
	// checkNote reports a check actor's events to the checks supervisor.
	checkNote struct {
		started, reused, joined, finished int
		storedRepo                        string // repository whose evidence grew
	}
)

// checkActor owns one semantic identity: it answers with its evidence, joins
// callers to the run in flight or starts the single run. Its only state
// worth keeping is the evidence, which is in the store: after passivation it
// comes back from there. It passivates after being idle for between one and
// two idle periods (default 5 min).
type checkActor struct {
	checkConfig
	evidence *messages.CheckEvidence
	handled  uint64

	running  bool
	gen      string
	cancel   context.CancelFunc
	waiters  waiters[bool] // callers of the run in flight; true = joined it
	previous *messages.CheckEvidence
	pending  pendingRun
	// interim is the answer of a run in flight that was handed over to a
	// durable job (Escalated set): callers get it at once, not the end.
	interim *messages.CheckOutcome

	idleTimer *time.Timer
}

// armIdle (re)starts the passivation timer. It is a plain timer that only
// sends a message, not ctx.SetReceiveTimeout: protoactor's receive-timeout
// handler mutates the actor's context from the timer goroutine, a data race
// with the actor stopping that the race detector reports.
func (a *checkActor) armIdle(ctx actor.Context) {
	if a.idleTimer != nil {
		a.idleTimer.Stop()
	}
	self, sys, handled := ctx.Self(), ctx.ActorSystem(), a.handled
	a.idleTimer = time.AfterFunc(a.idle, func() { sys.Root.Send(self, checkIdleTick{handled: handled}) })
}

func newCheckActor(cfg checkConfig) actor.Producer {
	return func() actor.Actor { return &checkActor{checkConfig: cfg} }
}

// Receive dispatches the check actor's messages.
func (a *checkActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lg = a.lg.With(zap.String("actor", ctx.Self().Id))
		a.evidence = a.loadEvidence()
		a.armIdle(ctx)
	case messages.CheckRun:
		a.handled++
		a.run(ctx, m)
	case checkDone:
		a.finish(ctx, m)
	case checkEscalated:
		a.escalated(ctx, m)
	case checkIdleTick:
		switch {
		case m.handled != a.handled || a.running:
			a.armIdle(ctx) // active since the timer was armed
		case ctx.Parent() != nil:
			ctx.Send(ctx.Parent(), checkIdle{pid: ctx.Self(), handled: a.handled})
			a.armIdle(ctx) // the parent may decline (a Run is on its way)
		}
	case messages.Ping:
		ctx.Respond(messages.Pong{})
	case *actor.Stopping, *actor.Restarting:
		// A restarted instance comes back from its evidence in the store;
		// the run in flight is cancelled and its callers hear why.
		if a.idleTimer != nil {
			a.idleTimer.Stop()
			a.idleTimer = nil
		}
		if a.cancel != nil {
			a.cancel()
			a.cancel = nil
		}
		a.waiters.answerAll(ctx, func(bool) any {
			return Failure(errs.New(errs.Unavailable, "check %s stopped before its run finished", a.key.Identity))
		})
	}
}

func (a *checkActor) note(ctx actor.Context, n checkNote) {
	if ctx.Parent() != nil {
		ctx.Send(ctx.Parent(), n)
	}
}

func (a *checkActor) run(ctx actor.Context, m messages.CheckRun) {
	if m.Key.Identity != a.key.Identity {
		reply(ctx, nil, errs.New(errs.Internal, "check actor of %s got a run of %s", a.key.Identity, m.Key.Identity))
		return
	}
	if ev := a.fresh(); ev != nil && !m.Rerun {
		a.touch(ev)
		a.note(ctx, checkNote{reused: 1})
		ctx.Respond(messages.CheckResult{Identity: ev.Identity, Outcome: ev.Outcome, Reused: true})
		return
	}
	if a.running {
		switch {
		case a.interim != nil && ctx.Sender() != nil:
			// The run continues as a durable job: the caller gets its id
			// now, the same job every caller of the run got.
			ctx.Respond(messages.CheckResult{Identity: a.key.Identity, Outcome: *a.interim, Joined: true, Previous: a.previous})
		case a.interim == nil && ctx.Sender() != nil:
			a.waiters.add(ctx, true, 0)
		}
		a.note(ctx, checkNote{joined: 1})
		return
	}
	a.running = true
	a.gen = runToken()
	a.previous = a.previousEvidence(m)
	if ctx.Sender() != nil {
		a.waiters.add(ctx, false, 0)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	self, sys, runner, gen := ctx.Self(), ctx.ActorSystem(), a.runner, a.gen
	a.note(ctx, checkNote{started: 1})
	escalate := func(interim messages.CheckOutcome) { sys.Root.Send(self, checkEscalated{gen: gen, interim: interim}) }
	a.tasks.Go(func() {
		defer cancel()
		out, err := safeRun(runCtx, runner, m, escalate)
		sys.Root.Send(self, checkDone{gen: gen, out: out, err: err})
	})
	// Remember what to persist with the evidence once the run succeeds.
	a.pending = pendingRun{def: m.DefinitionDigest, parts: m.Parts, repo: m.Key.RepoID}
}

// runToken returns a token no other run of this process has.
func runToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// safeRun runs the runner, turning a panic into an error.
func safeRun(ctx context.Context, runner CheckRunner, m messages.CheckRun, escalate func(messages.CheckOutcome)) (out messages.CheckOutcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errs.New(errs.Internal, "check runner panicked: %v", r)
		}
	}()
	return runner(ctx, m, escalate)
}

// escalated takes the interim answer of the run in flight, handed over to
// a durable job, and gives it to every caller waiting; later callers get
// it at once until the run ends (run).
func (a *checkActor) escalated(ctx actor.Context, m checkEscalated) {
	if !a.running || m.gen != a.gen || a.interim != nil || m.interim.Escalated == nil {
		return
	}
	interim := m.interim
	a.interim = &interim
	prev := a.previous
	a.waiters.answerAll(ctx, func(joined bool) any {
		return messages.CheckResult{Identity: a.key.Identity, Outcome: interim, Joined: joined, Previous: prev}
	})
}

func (a *checkActor) finish(ctx actor.Context, m checkDone) {
	if !a.running || m.gen != a.gen {
		return
	}
	a.running, a.interim = false, nil
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
	n := checkNote{finished: 1}
	if m.err == nil && m.out.Passed && !m.out.TimedOut && !m.out.Cancelled {
		ev := &messages.CheckEvidence{
			RepoID: a.pending.repo, CommonDir: a.key.CommonDir, Identity: a.key.Identity,
			DefinitionDigest: a.pending.def, Shared: a.key.Shared, Parts: a.pending.parts,
			Outcome: m.out, StoredAt: a.now(),
		}
		if err := a.persist(ev); err != nil {
			a.lg.Error("store check evidence", zap.Error(err))
		} else {
			n.storedRepo = ev.RepoID
		}
		a.evidence = ev
	}
	prev := a.previous
	a.waiters.answerAll(ctx, func(joined bool) any {
		if m.err != nil {
			return Failure(m.err)
		}
		return messages.CheckResult{Identity: a.key.Identity, Outcome: m.out, Joined: joined, Previous: prev}
	})
	a.previous, a.pending = nil, pendingRun{}
	a.note(ctx, n)
}

// fresh returns the evidence if it may be reused: a pass, of any age
// (the budget, not time, ends evidence).
func (a *checkActor) fresh() *messages.CheckEvidence {
	if ev := a.evidence; ev != nil && ev.Outcome.Passed {
		return ev
	}
	return nil
}

// touch records a reuse of ev as its UsedAt, at most once per
// CheckEvidenceTouchEvery, outside the mailbox and unsynced (a lost touch
// only ages the entry). An entry the budget evicted meanwhile, or that a
// new pass replaced, is left as it is: a touch never brings one back.
func (a *checkActor) touch(ev *messages.CheckEvidence) {
	now := a.now()
	if now.Sub(lastUse(ev)) < CheckEvidenceTouchEvery {
		return
	}
	ev.UsedAt = now
	key, stored, store, lg := persistence.CheckEvidenceKey(ev.RepoID, ev.Identity), ev.StoredAt, a.store, a.lg
	a.tasks.Go(func() {
		err := store.Update(false, func(tx *persistence.Txn) error {
			var cur messages.CheckEvidence
			if err := tx.Get(key, &cur); err != nil || !cur.StoredAt.Equal(stored) || !now.After(cur.UsedAt) {
				return nil
			}
			cur.UsedAt = now
			return tx.Put(key, &cur)
		})
		if err != nil {
			lg.Warn("record a reuse of check evidence", zap.Error(err))
		}
	})
}

// lastUse is when ev was stored or last reused, whichever is later.
func lastUse(ev *messages.CheckEvidence) time.Time {
	if ev.UsedAt.After(ev.StoredAt) {
		return ev.UsedAt
	}
	return ev.StoredAt
}

// loadEvidence restores the evidence of the actor's identity: the asking
// repository's own, else (shared keys only) the evidence another checkout
// of the same repository stored.
func (a *checkActor) loadEvidence() *messages.CheckEvidence {
	if ev := a.getEvidence(a.key.RepoID); ev != nil {
		return ev
	}
	if !a.key.Shared {
		return nil
	}
	var owner string
	if err := a.store.Get(persistence.CheckSharedKey(a.key.CommonDir, a.key.Identity), &owner); err != nil {
		if !errors.Is(err, persistence.ErrNotFound) {
			a.lg.Warn("read shared check index", zap.Error(err))
		}
		return nil
	}
	ev := a.getEvidence(owner)
	if ev == nil || !ev.Shared || ev.CommonDir != a.key.CommonDir {
		return nil
	}
	return ev
}

func (a *checkActor) getEvidence(repoID string) *messages.CheckEvidence {
	if repoID == "" {
		return nil
	}
	var ev messages.CheckEvidence
	if err := a.store.Get(persistence.CheckEvidenceKey(repoID, a.key.Identity), &ev); err != nil {
		if !errors.Is(err, persistence.ErrNotFound) {
			a.lg.Warn("read check evidence", zap.Error(err))
		}
		return nil
	}
	if ev.Identity != a.key.Identity || !ev.Outcome.Passed {
		return nil
	}
	return &ev
}

// previousEvidence returns the newest evidence of m's definition in the
// asking repository, when it is of another identity.
func (a *checkActor) previousEvidence(m messages.CheckRun) *messages.CheckEvidence {
	if m.DefinitionDigest == "" {
		return nil
	}
	var ix checkDefIndex
	if err := a.store.Get(persistence.CheckDefKey(m.Key.RepoID, m.DefinitionDigest), &ix); err != nil {
		return nil
	}
	if ix.Identity == "" || ix.Identity == a.key.Identity {
		return nil
	}
	var ev messages.CheckEvidence
	if err := a.store.Get(persistence.CheckEvidenceKey(m.Key.RepoID, ix.Identity), &ev); err != nil {
		return nil
	}
	return &ev
}

// persist writes the evidence, the definition index and (shared evidence)
// the cross-checkout index in one synced transaction.
func (a *checkActor) persist(ev *messages.CheckEvidence) error {
	return a.store.Update(true, func(tx *persistence.Txn) error {
		if err := tx.Put(persistence.CheckEvidenceKey(ev.RepoID, ev.Identity), ev); err != nil {
			return err
		}
		if ev.DefinitionDigest != "" {
			if err := tx.Put(persistence.CheckDefKey(ev.RepoID, ev.DefinitionDigest), checkDefIndex{Identity: ev.Identity, StoredAt: ev.StoredAt}); err != nil {
				return err
			}
		}
		if ev.Shared && ev.CommonDir != "" {
			return tx.Put(persistence.CheckSharedKey(ev.CommonDir, ev.Identity), ev.RepoID)
		}
		return nil
	})
}

// pendingRun is what the run in flight will persist on success.
type pendingRun struct {
	def   string
	parts []byte
	repo  string
}
