// Package route decides, before anything runs, whether an operation takes the
// Fast Path, becomes a durable job, or is rejected, and explains why.
//
// # Modes
//
// Readonly operations run on the Fast Path. Work that writes the workspace
// through a command, may run long, runs in the background or cannot be proven
// readonly becomes a durable job (SuggestedOperation "job_start"; a test
// command sent to run_command is pointed to "run_check"). Destructive
// commands, network use and unsafe shell scripts are rejected. A batch is
// routed once, as a whole, before any step runs.
//
// # Classes
//
// The router never decides by an operation's name: each operation's
// descriptor (harness/op.Spec.Route) gives it a [Kind], and Decide routes
// the kind. An operation without one ([Unclassified]) is rejected as
// unknown. The registry test in harness/op pins which operation has which
// kind.
//
// # Risk
//
// Risk is a 0-100 score derived from the operation's kind and its command
// class:
//
//	run_state (run_start, run_status, ...)                                        0
//	readonly (read_file, search, git_status, git_diff, job_status, ...)           5
//	registry (target_register, target_unregister)                                 10
//	command, readonly (Fast Path)                                                 10
//	command, readonly above the Fast Path timeout                                 15
//	index_mutation (git_stage)                                                    20
//	check focused / unfocused                                                     20 / 30
//	signal (job_cancel)                                                           20
//	mutation (apply_patch, git_commit, ...)                                       30
//	job (readonly command / writes declared)                                      40 / 50
//	command class workspace_write                                                 50
//	command class unknown                                                         60
//	command class remote (durable behind a person when its effect is stated)      75
//	command class shell (rejected unless the job is confined)                     80
//	command class destructive (durable behind a person when its effect is stated) 95
//	unknown operation, malformed request (rejected)                               50
//	batch                                                             max of its steps
package route
