// Package classify decides, without running anything, whether a typed argv or
// a `sh -c` script is readonly, writes the workspace, talks to the network,
// is destructive, or cannot be proven safe.
//
// # Classes
//
// Every [Result] carries one [Class]. From least to most severe:
//
//	readonly         runs directly on the Fast Path
//	workspace_write  writes the checkout (build caches, files, git state)
//	unknown          not proven readonly; may do anything a program can do
//	shell            a shell construct that cannot be proven safe
//	remote           uses the network (push, fetch, curl, ssh, ...)
//	destructive      loses data or escalates privilege (rm -r, reset --hard, sudo)
//
// A script's class is the most severe class of its parts. Classification fails
// closed: anything the classifier does not understand is unknown or shell,
// never readonly.
//
// # Assumptions
//
// The classifier judges what a command does with its arguments. It assumes
// harnessd runs git with its hardened environment (no pager, no repository
// hooks on readonly commands) and that path scoping is checked elsewhere
// (harness/pathsafe): `cat /etc/hosts` is readonly here.
//
// Arguments that are expanded at run time (`$X`, leading globs such as
// `*.go`, brace expansions, xargs input) could add options to a command. They
// keep a readonly command readonly only for programs whose options cannot
// write or run anything (cat, grep, wc, ...) or when they follow `--`.
package classify
