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
// # Risk
//
// Risk is a 0-100 score derived from the operation and its command class:
//
//	read_file, search, git_status, git_diff, route_explain, job_status/logs/list   5
//	repository_* (register, list, unregister)                                     10
//	run_command readonly (Fast Path)                                              10
//	run_command readonly above the Fast Path timeout                              15
//	git_stage                                                                     20
//	run_check focused / unfocused                                                 20 / 30
//	job_cancel                                                                    20
//	apply_patch, git_commit                                                       30
//	job_start (readonly command / writes declared)                                40 / 50
//	command class workspace_write                                                 50
//	command class unknown                                                         60
//	command class remote (rejected)                                               75
//	command class shell (rejected)                                                80
//	command class destructive (rejected)                                          95
//	unknown operation, malformed request (rejected)                               50
//	batch                                                             max of its steps
package route
