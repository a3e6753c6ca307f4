// Package gitindex computes git status in process: it decodes .git/index
// (Parse, versions 2 to 4, SHA-1 or SHA-256, checksum verified) and turns a
// status that was exact at some moment plus the set of paths that may have
// changed since into the exact current status (Refresh), without running
// `git status`. Only the untracked side of changed paths that are not in
// the index needs git, through one `git ls-files --others` call the caller
// supplies.
//
// Eligible says whether Refresh can be exact for a checkout (or why not:
// submodules, sparse checkout, split index, attributes, ...). Anything
// Refresh meets that it does not model exactly is reported as ErrInexact,
// and the caller falls back to running git.
package gitindex
