// Package pathsafe decides whether a path named by a tool call may be touched:
// it confines paths to a repository root (following symlinks), refuses .git
// internals where asked, and applies a case-insensitive secret-file denylist.
package pathsafe
