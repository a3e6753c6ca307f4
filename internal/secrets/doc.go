// Package secrets learns the secret values of a checkout (from the files the
// pathsafe denylist names, in the work tree, the index and HEAD) so that
// harnessd can redact them from everything it returns to an agent.
//
// [Find] walks a work tree for secret paths; [Learn] extracts values from
// secret files (KEY=VALUE, YAML and JSON values, PEM bodies and the like);
// [Cache] keeps both per root and revalidates them cheaply by file stamps
// (not even those while an inotify watch of their directories is quiet),
// re-walking the tree in the background.
//
// Values are never logged, printed or put in error messages.
package secrets
