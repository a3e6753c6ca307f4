// Package ledger holds the pure state machine of the request ledger, which
// makes mutations idempotent by request_id.
//
// An entry moves executing -> succeeded | failed, or executing -> unknown when
// the daemon restarts while the operation ran. A failed entry may go back to
// executing when the same request is retried. An executing entry whose
// request gave up before writing anything (shutdown began while it waited for
// its lease) is abandoned: deleted, as if never begun (Abandon). The functions here do no I/O:
// the owner loads the existing entry, calls Begin, persists the returned entry
// before executing when the decision is Proceed (with sync, unless the
// caller's own synced commit of the completion follows before anything is
// acknowledged: a write's), and persists the result of Complete or Fail
// before replying.
package ledger
