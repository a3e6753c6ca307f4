// Package fleet is a harnessd node's membership of a fleet on etcd: its
// session, the fleet-wide single flight of checks, and the evidence
// (action cache and content-addressed blobs) their runs leave.
//
// # Key layout (under Config.Prefix, default /harnessd/)
//
//	secret                   the fleet secret (32 random bytes, hex); no lease
//	members/<node>           {name, advertise, started, epoch}; bound to the node's session lease;
//	                         its create revision is the node's epoch (new on every rejoin)
//	check/<identity>/run     the claim {node, run_id, epoch}; bound to the claimer's session lease
//	check/<identity>/result  the record of the claim's run, pass or fail (a serialized ActionRecord)
//	ac/<hex>                 the action-cache record of a passed run (a REAPI ActionResult)
//	cas/<hex>                a blob of at most InlineBlobMax bytes (sha256 <hex>)
//	jobs/<id>                a fleet job's record (sealed with the fleet key when there is one)
//	jobs/<id>/attempt        the running attempt's claim; bound to its node's session lease
//	req/<request_id>         the job a fleet job_start's request id started, or the Request record
//	                         {request_id, op, input_hash, node, epoch, created} of a mutation's
//	                         (reqs.go; bound to the request retention lease, reqretention/<period>)
//	homes/<repo_id>          the Home of a registered repository; no lease; its create revision is the ownership epoch
//	tokens/<repo_id>         {high, node, epoch}: the fencing tokens reserved for the repository's checkout
//	                         (tokens.go); no lease
//	jobstate/<id>/<nnnn>     a job's uncommitted state blob in 1 MiB chunks (statestore.go); deleted by its end
//	retention/<period>       the evidence retention lease of a period (bound to itself)
//
// result, ac and cas keys are bound to the retention lease of the period
// they were written in (TTL: Retention plus a quarter of it), so evidence
// leaves etcd after 1 to 1.25 × Retention (7 days by default).
//
// Larger blobs stay in the producing node's BlobDir and are fetched from
// it (BlobHandler, with the fleet secret as bearer token). Every blob,
// from any source, is checked against its digest before use.
//
// # The token rule
//
// A claim's token is its create revision. A completion commits (result,
// action-cache record, small blobs, the claim's deletion: one Txn) only
// if the claim key's ModRevision still equals the token and its value is
// unchanged; otherwise etcd refuses it and SingleFlight answers
// LEASE_LOST. Tokens only rise: a retaken claim has a higher token.
//
// # Failure model
//
// The node renews its lease itself every TTL/3; its deadline is the time
// the last successful keepalive was sent (or the grant) plus the TTL.
// Past the deadline, or when etcd says the lease is gone, the node is
// lost: it takes no new claims, Live answers LEASE_LOST (the daemon
// refuses writes with it), runs in flight go on and are refused where
// they are recorded (the compare above; a fencing remote cache sees the
// token as X-Harnessd-Fencing-Token), and
// after a hold-off of one TTL it rejoins with a new lease and epoch
// (retrying while etcd has no quorum). A claim whose owner's lease
// expires is deleted by etcd, and a waiter retakes it. Close is a
// graceful leave: no new claims, runs in flight publish, then the lease
// is revoked.
package fleet
