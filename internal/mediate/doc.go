// Package mediate decides, in one pure function, whether an operation an agent
// asks for may run: it composes path scope and secret checks, the router, the
// operator's policy, the loop detector's verdict and a risk score.
//
// # Order
//
// [Decide] runs the checks in this order; the first check that blocks
// decides, so the reason always names what decided:
//
//  1. scope: every path must be non-empty and pass Input.ScopeCheck (its error
//     code is answered, usually PATH_OUTSIDE_ROOT). Without a ScopeCheck,
//     absolute paths and paths escaping with ".." are blocked
//     (PATH_OUTSIDE_ROOT): they cannot be proven inside the root.
//  2. secret: a path matching Input.Deny (nil: the pathsafe default list)
//     blocks with SECRET_PATH_DENIED (rule "secret-path"). Scope and secret are
//     checked path by path, in order.
//  3. route: a rejected route blocks with ROUTE_REJECTED ("route.reject"); a
//     durable route escalates with ROUTE_DURABLE_REQUIRED ("route.durable"),
//     unless the operation is the suggested durable operation itself
//     (job_start), which goes on to the next checks.
//  4. policy: a deny rule blocks with POLICY_DENIED; an ask rule asks with
//     APPROVAL_REQUIRED unless Input.ApprovalOK; an allow rule is remembered.
//  5. loop: a loop verdict blocks with LOOP_DETECTED ("loop").
//     5a. remote write: a route whose effect is a remote write or a git
//     push (route.Decision.Effect) asks with APPROVAL_REQUIRED (rule
//     "remote-write") unless Input.ApprovalOK, whatever a policy allow
//     rule or the risk says; the reason names the exact command and the
//     remote, registry or package it writes. A durable route with an
//     effect escalates also for an operation that runs its own durable
//     path (run_check): such work is a job a person approves.
//  6. risk: a score of 80 or more asks with APPROVAL_REQUIRED ("risk") unless
//     Input.ApprovalOK or a policy allow rule matched, or the operation is
//     exempt: read-only operations (no mutation, no declared writes, no
//     command or a readonly one) and version queries ([VersionQuery]) never
//     ask because of their score; only a policy ask rule makes them ask.
//     The reason names the score's parts, and for destructive work the
//     exact command and what it removes (route.Decision.Effect).
//  7. otherwise allow. An allowed decision carries RequireVerified: the
//     stages of the caller's run that must be verified first — the
//     operation's own (Input.RequireVerified, rule "require_verified") and
//     those of every matching require_verified policy rule. Decide only
//     names them (it is pure); the writes re-verify each stage right after
//     the gate and answer VERIFICATION_REQUIRED with the blockers.
//
// Strictest wins: block > escalate > ask > allow. A later block therefore
// beats an earlier escalate or ask (a policy deny or a loop still blocks a
// command that would otherwise be escalated), and escalate beats ask: the
// agent is sent to job_start first, which is mediated (and approved) on its
// own. An approval satisfies asks only; it never lifts a block or an
// escalation. An allow reached through an approval has rule id "approval".
//
// Decide never panics: a panic anywhere (also in a ScopeCheck) becomes a block
// with code INTERNAL, rule "mediator" and the reason "mediator error: ...".
//
// # Risk
//
// [Risk] is a 0-100 score:
//
//	base by command class (route.Decision.CommandClass):
//	  readonly 5, workspace_write 30, unknown 45, shell 60, remote 75, destructive 95
//	  (an unrecognised class counts as unknown); operations without a command:
//	  a rejected route 45, a mutation 30, anything else 5
//	+15 when the operation mutates (route.Decision.Mutation or Input.Writes)
//	+10 for each kind of sensitive path touched (see [SensitiveKind]):
//	  lockfile, migration, CI configuration, container build file
//	+ history: the caller's recent refusals of this operation (Input.History,
//	  see [Subject]): 10 per refusal of this very command + 5 per refusal
//	  of another command of the same program and subcommand, each refusal
//	  decayed with a half-life of 10 minutes, rounded, at most 20. A
//	  command that ran and exited non-zero (grep without a match, a failing
//	  test) is no refusal and never counts.
//	clamped to 0..100
//
// [Explain] returns the score with its parts (what route_explain shows).
package mediate
