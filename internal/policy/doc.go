// Package policy loads the operator's policy file and decides which of its
// rules (allow, ask or deny) apply to an operation an agent asks for.
//
// # File format
//
// The policy is one YAML document (by default <data-dir>/policy.yaml):
//
//	version: 1
//	rules:
//	  - id: no-force-push
//	    tools: [run_command, job_start]       # optional; empty = every tool
//	    argv_prefix: ["git", "push"]          # optional
//	    argv_pattern: "--force|-f\\b"         # optional, RE2
//	    paths: ["**/*.lock", "migrations/**"] # optional, doublestar globs
//	    decision: deny                        # allow | ask | deny
//	    justification: "force pushes rewrite shared history"
//	    examples:
//	      match:     [{tool: run_command, argv: [git, push, --force, origin, main]}]
//	      not_match: [{tool: run_command, argv: [git, push, origin, main]}]
//
// A rule has either a decision or require_verified, a stage of the
// caller's run that must be verified (run_verify) for the operations the
// rule matches to run:
//
//	rules:
//	  - id: tests-before-commit
//	    tools: [git_commit, patch_proposal_integrate]  # required: writes only (the Verified option)
//	    paths: ["src/**"]                               # optional
//	    require_verified: tests
//
// Such a rule is an obligation, not a decision: [Policy.Evaluate] skips it
// and [Policy.Requirements] returns every one that matches (all apply).
// The mediator adds them to its decision; the writes enforce them right
// after the gate (harness/ops/run.Enforce).
//
// Parsing is strict: unknown fields, duplicate keys, YAML aliases, a missing
// or duplicate id, an unknown decision, an invalid regular expression or glob,
// a rule without any matcher, a rule with both or neither of decision and
// require_verified, a require_verified rule without tools, naming a tool
// that is not a write or matching argv, and a version other than 1 are errors that name
// the rule (by id, or by index when it has none) and the line. After the rules
// compile, every example is checked against its own rule; one that does not
// behave as declared stops the load.
//
// # Matching
//
// A rule matches an [Action] when every matcher it sets matches:
//
//   - tools: the action's tool is one of them (exact).
//   - argv_prefix: the argv starts with these words. The first word also
//     matches by base name, so ["git"] matches "/usr/bin/git".
//   - argv_pattern: the RE2 expression finds a match anywhere in the argv
//     joined with single spaces (anchor it with ^ and $ as needed). When argv[0]
//     contains a slash, the join with its base name is tried as well.
//   - paths: some path of the action, cleaned and slash-separated, matches
//     some glob (doublestar syntax, case-sensitive, relative to the root).
//
// argv_prefix and argv_pattern never match an action without argv, and paths
// never match an action without paths. Wrappers such as env or timeout are not
// unwrapped: a policy sees the argv as the agent sent it (harness/route
// classifies wrapped commands separately).
//
// [Policy.Evaluate] returns the strictest matching rule (deny > ask > allow);
// among equally strict rules the first in file order wins.
//
// # Digest
//
// [Policy.Digest] is "sha256:" and the hex SHA-256 of the canonical form of the
// policy: the compact JSON encoding of its version and rules, every field in a
// fixed order. Comments, key order, quoting and indentation of the file do
// not change it; any change to a rule (including its justification and
// examples) does. The empty policy ([Default], also what [Load] returns for a
// missing file) has the fixed digest [DefaultDigest].
package policy
