// Package secrets finds the secret files of a checkout (by the pathsafe
// denylist), learns the values they hold in the work tree, the index and
// HEAD, and caches them per checkout as a [redact.Known] set, so that
// harnessd can redact those values from anything it returns to an agent.
//
// [Find] walks a work tree for secret paths; [Learn] extracts values from
// secret files (KEY=VALUE, YAML and JSON values, PEM bodies and the like);
// [Cache] keeps both per root and revalidates them cheaply by file stamps,
// re-walking the tree in the background.
//
// Values are never logged, printed or put in error messages.
package secrets
