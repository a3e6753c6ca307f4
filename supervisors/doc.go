// Package supervisors declares harnessd's supervision tree as data: each
// supervisor is a list of children with restart policies, an intensity and a
// period. Children start in declaration order and are drained in reverse.
//
// # The root's children
//
// The root (harness/runtime/tree.go) and the lanes supervisor use Spec:
// their children are Permanent, restarted after a crash (a fresh instance
// reloads from the store on Started) and after a stop, at most Intensity
// times in Period before the failure is escalated.
//
// # Children spawned on demand
//
// The registry, checks, jobs, runs and targets spawn a child per
// checkout, check, job, run or granted root, and stop it themselves when its
// work ends: a normal stop is final, so these children are Transient. Each
// parent declares a Policy; its decider (Policy.Decide, a pure function)
// stops a child whose store failed (Classify: closed, damaged, a corrupt or
// unknown record; a fresh instance would fail the same way on Started, so
// restarting it would loop) and a child past 5 failures in 30 s, and else
// brings the child back as declared:
//
//   - checkout/<id> (CheckoutPolicy: transient, reload). The checkout's
//     fencing marks and durable leases are in the store; a fresh instance
//     reloads them, and the crashed one answers its waiters UNAVAILABLE on
//     Restarting. A checkout that cannot read its store at restore does
//     not crash: it refuses every lease request until harnessd restarts.
//     One that panics on a store failure all the same is stopped, never
//     restarted: it must not hand out a lease under a fencing token it
//     could not read (its repository answers UNAVAILABLE).
//   - lease-<id> and the watcher below a checkout (CheckoutChildPolicy:
//     transient, reload). A crashed lease actor hands its renewed expiry
//     and owner to the fresh instance on Restarting; a crashed watcher
//     comes back as a new epoch, so every asker rebuilds from git. A lease
//     actor that is stopped (a store failure, or past the window) is a
//     lost lease: the checkout frees its keys and its owner aborts.
//   - check/<identity> (CheckPolicy: transient, reload). A fresh instance
//     comes back from the check's evidence in the store; the run in flight
//     is cancelled and its callers hear why. A stopped check actor is
//     spawned again by the next run of its identity.
//   - job/<id> (JobPolicy: transient, reload). A job is a persisted state
//     machine: the fresh instance restores its record and reconciles (a
//     queued job says hello again, a running one adopts its process, which
//     the crashed instance hands over on Restarting), so a failure restores
//     the job rather than restarting it blindly. (A record it cannot read
//     makes the job forgotten, a transition it cannot write is an error
//     the job handles: neither panics.) One that panics on a store failure
//     is stopped, which cancels its process: a job must not run on with
//     transitions it cannot record.
//   - run/<id> (RunPolicy: transient, reload). A fresh instance reloads the
//     stored snapshot (counters of reads since the last stored change are
//     lost, as after a crash of the process).
//   - target/<root> (TargetPolicy: transient, resume). A target's single
//     mutation slot and its queue live in memory only: a fresh instance
//     would forget the holder and let a second writer in while the first
//     still writes. The crashed instance resumes with its state; only the
//     message that panicked is lost (actors.Recover answered its sender).
//     One that keeps failing is stopped, and its root refuses writes
//     (UNAVAILABLE) rather than serialize them wrongly.
//
// The children below a checkout (lease/<id>, the watcher) are the
// checkout's to supervise (actors/checkout.go).
package supervisors
