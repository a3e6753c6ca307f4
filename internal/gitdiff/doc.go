// Package gitdiff prints what `git diff` prints for a text file, in
// process: blob bytes in, patch bytes out, byte for byte git's (2.39's
// xdiff: the Myers search with its heuristics, the change compaction with
// the indent heuristic, the hunk merging rule, the default function-name
// rule of the hunk headers, "\ No newline at end of file").
//
// It is pure: the caller reads the two sides (the index blob, the work
// tree file) and abbreviates their object names. What it cannot print as
// git would — a binary side, a mode change, a path git quotes, anything
// that is not a regular file — is refused with an error wrapping
// ErrUnsupported, and the caller runs git. It knows nothing of attributes,
// diff drivers or the diff.* settings other than those in Options: the
// caller must make sure none applies (see internal/liveview's diff).
//
// # Ordering
//
// Within one file, the steps are xdiff's: prepare (records, classes,
// trimmed ends, discarded records), search, compact the old side, compact
// the new side, build the script, emit.
package gitdiff
