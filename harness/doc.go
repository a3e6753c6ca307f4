// Package harness is harnessd's embedding API: Open a Harness, call one
// method per operation, Close it. The daemon and the MCP and HTTP surfaces
// (surfaces/) run the same operations through the same request pipeline
// by name (CallOp, Ops). Adding an operation is one Def in
// harness/ops/<concern> plus, here, one method and one typed handle
// (methods.go): the handles are bound at Open, which panics when a
// handle's types are not its operation's, and a test fails when an
// operation has no handle.
//
// The mechanisms live below the facade: the public contract in contract/
// (errs: error codes; client: the daemon client), the leaf mechanisms in
// internal/ (pathsafe, readfile, search, gitx, proc, classify, route,
// redact, patch, lease, ledger, ...), the servers and the daemon in
// surfaces/ (mcp, http, console, daemon).
//
// # Where the types live
//
// Config, FleetConfig, Harness, StatusResult, Gauges, AllowedArea and the
// Audit* types are the facade's own. Every other type is an alias: the arguments and
// results of an operation are defined beside it, and named here for the
// embedding program (a value passes between the facade and the operation
// packages unchanged). By name, the package that defines each:
//
//	Meta, Latency, Receipt, MutationResult, ProgressFunc, Op   harness/op (every result's meta, the write receipt)
//	Repository, RegisterArgs ... UnregisterResult              harness/ops/repo
//	ReadFile*, ListDir*, Search*, GitStatus*, GitDiff*         harness/ops/read
//	RunCommand*, RouteExplain*                                 harness/ops/command
//	ApplyPatchArgs, GitStageArgs, GitCommitArgs                harness/ops/mutation
//	GitPushArgs                                                harness/ops/push
//	Batch*, MutationStepResult, ReadLanes*, LaneResult         harness/ops/batch
//	RunCheck*, OriginalRun                                     harness/ops/check
//	Job*, RetryPolicy                                          harness/ops/job
//	Proposal*, PatchProposal*                                  harness/ops/proposal
//	RunStartArgs, RunStateResult ... RunVerifyResult           harness/ops/run (the run_* operations)
//	RunState, RunSpan, RunBudget, RunEvent, RunShape,
//	RunChild, Caller, Client                                   messages (the runs' plain data)
//	Evidence, EvidenceResult, Claim, Verification*             internal/verify
//	CommitVerify*, CommitCheck                                 harness/ops/provenance
//	Trailer                                                    internal/trailer
//	ContextArgs, ContextResult                                 harness/ops/context
//	Target*                                                    harness/ops/target
//	RevertArgs, RunRevertArgs, ReceiptList*, ReceiptItem       harness/ops/undo
//	Approval, ApprovalList, PolicyInfo                         harness/govern
//	DurableLease                                               harness/runtime
//	PolicyRule                                                 internal/policy (a rule in force, with its examples)
//
// # Shutdown order
//
// Close:
//  0. answers every request queued for a lease UNAVAILABLE at once
//     (nothing_written: true) and closes their ledger entries as never
//     begun, so the same request_id runs normally after the restart;
//     later requests that would wait are refused;
//  1. stops accepting new operations;
//  2. poisons the root supervisor, which drains its children in reverse
//     start order (each finishes what is already queued);
//  3. shuts the actor system down;
//  4. closes the store (stops value-log GC, then Badger);
//  5. syncs the logger.
package harness
