// Package loop detects an agent repeating itself: the same call, with
// nothing changed in between, that keeps giving the same result or keeps
// failing on a tree that has not changed.
//
// A [Detector] is pure bookkeeping (no goroutines, no clock, no I/O) and is not
// safe for concurrent use: one actor owns it, calls [Detector.Check] before an
// operation runs, [Detector.Touch] for every call that crosses the gate
// (checked or not) and [Detector.Record] after a checked operation ran.
//
// # Rules
//
// Observations are grouped by key: the scope, the operation name and its
// input hash. The scope says whose repetition it is (harnessd passes the
// caller's run, else its MCP session): two agents running the same command
// are not one agent repeating itself, so a scope's observations never count
// towards another scope's loop. The empty scope is the global one, for
// callers that identify themselves in no way.
//
// Repeats must be consecutive: a streak of a key counts only calls of its
// scope with no other call of that scope in between. Any other call of the
// scope (a read, a search, another command, noted with Touch or Record)
// ends every streak of the scope; calls of other scopes never do. So
// three identical searches spread over a session with other work between
// them are no loop, while an agent sending the same call back to back is.
// A call refused at the gate (a loop verdict itself) is the same call
// again and does not end its own streak.
//
// With Threshold T (default 3) and Window W (default 10 minutes), Check
// reports a loop when either holds for the scope's consecutive calls of
// the key:
//
//  1. Same result: the last T or more of them, all within W of now,
//     returned the same ResultHash on the tree revision Check is asked
//     about. A different result or a different tree revision starts a new
//     streak, so an agent that edits the tree and runs the same command
//     again is not stopped. Example with T = 3: three identical results
//     back to back, the fourth try is a loop.
//  2. Repeated failure: the last max(T-1, 1) of them failed (whatever their
//     output), all within W, on the same non-empty tree revision Check is
//     asked about. Running a failing command again on an unchanged tree
//     cannot succeed, so this fires earlier than rule 1: with T = 3, two
//     failures on revision R back to back make the third try on R a loop. A
//     success, or a failure on another revision, resets it. An empty tree
//     revision means "unknown" and never triggers this rule. What counts as
//     a failure is the caller's call: harnessd does not count a search
//     without a match (grep exit 1) as one, it is an answer.
//
// When both rules hold, the failure verdict is reported.
//
// # Memory
//
// At most MaxEntries keys (default 10,000, over all scopes) are kept; recording a new key
// beyond that evicts the key recorded least recently. Scopes (what each
// called last) are bounded the same way and dropped once they called
// nothing within the window; a scope seen again starts afresh. Keys whose last
// observation is older than the window are dropped as new observations are
// recorded. Each key keeps a bounded number of observations (at most T per
// rule), so memory is O(MaxEntries × T).
package loop
