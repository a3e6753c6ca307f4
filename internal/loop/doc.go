// Package loop detects an agent repeating itself: the same operation with the
// same input that keeps giving the same result, or keeps failing on a tree that
// has not changed.
//
// A [Detector] is pure bookkeeping (no goroutines, no clock, no I/O) and is not
// safe for concurrent use: one actor owns it, calls [Detector.Check] before an
// operation runs and [Detector.Record] after it ran.
//
// # Rules
//
// Observations are grouped by key: the scope, the operation name and its
// input hash. The scope says whose repetition it is (harnessd passes the
// caller's run, else its MCP session): two agents running the same command
// are not one agent repeating itself, so a scope's observations never count
// towards another scope's loop. The empty scope is the global one, for
// callers that identify themselves in no way.
// With Threshold T (default 3) and Window W (default 10 minutes), Check
// reports a loop when either holds:
//
//  1. Same result: the last T or more observations of the key, all within W
//     of now, returned the same ResultHash on the tree revision Check is asked
//     about. A different result or a different tree revision starts a new
//     streak, so an agent that edits the tree and runs the same command again
//     is not stopped. Example with T = 3: three identical results, the fourth
//     try is a loop.
//  2. Repeated failure: the last max(T-1, 1) observations of the key failed
//     (whatever their output), all within W, on the same non-empty tree
//     revision Check is asked about. Running a failing command again on an
//     unchanged tree cannot succeed, so this fires earlier than rule 1: with
//     T = 3, two failures on revision R make the third try on R a loop. A
//     success, or a failure on another revision, resets it. An empty tree
//     revision means "unknown" and never triggers this rule.
//
// When both rules hold, the failure verdict is reported.
//
// # Memory
//
// At most MaxEntries keys (default 10,000, over all scopes) are kept; recording a new key
// beyond that evicts the key recorded least recently. Keys whose last
// observation is older than the window are dropped as new observations are
// recorded. Each key keeps a bounded number of observations (at most T per
// rule), so memory is O(MaxEntries × T).
package loop
