// Package patch applies an agent's edit operations (replace, create, write,
// delete) to the files of a checkout, all-or-nothing and crash-safe.
//
// # Phases
//
// Apply works in two phases:
//
//  1. Plan, with no writes: every op is checked (kind, fields, caps), its path
//     is resolved through the Resolver and matched against AllowedPaths, every
//     touched file is read once, and the whole patch is simulated in memory so
//     later ops see the results of earlier ones. Conflicts (PATCH_CONFLICT)
//     are found here, before the disk is touched.
//  2. Commit: each changed file is written to a temp file
//     (".<name>.harnessd-tmp-<random>", see below), fsynced, chmodded and
//     renamed over the target; deletes are a remove. Options.Fence is called
//     immediately before each rename or remove. Directories are fsynced once
//     at the end. Missing parent directories are created and remembered.
//
// On any failure in the commit phase (I/O error, Fence error, cancelled
// context) every already-touched file is restored from the in-memory backup
// (same temp+rename technique), files and directories the patch created are
// removed, and the restore is verified by re-reading and re-hashing. If
// anything could not be restored, Apply returns PATCH_ROLLBACK_INCOMPLETE
// listing the paths; otherwise it returns the original error. Temp files are
// never left behind.
//
// # Crash safety
//
// Every individual file is at any instant either wholly old or wholly new,
// because rename is atomic. A patch that spans several files is not atomic
// across a crash: a crash (or power loss) mid-patch can leave some files new
// and some old, and may leave an orphaned temp file. The caller's request
// ledger reports REQUEST_OUTCOME_UNKNOWN in that case, together with the
// current digests (see Digest) so the agent can see what is on disk.
//
// # Temp files
//
// Temp files go to <gitdir>/harnessd-tmp of the checkout (see GitDir; the
// .git file of a linked worktree or submodule is followed), where git
// status, search and `git add -A` never see them. The checkout root is the
// resolved path with its relative path removed. When there is no git dir,
// when harnessd-tmp is not a plain directory, or when it is on another file
// system than the target's directory (st_dev differs, so the rename would
// not be atomic), the temp file is written beside the target instead. Either
// way its name matches IsTempName. A crash can leave one behind: SweepTemp
// removes them, and should run at start and when a repository is registered.
//
// # Full disks
//
// ENOSPC or EDQUOT while creating a directory, writing a temp file or
// renaming it over its target is STORAGE_FULL ("no space left on the file
// system of <root>: free space and retry"): the temp file is removed, the
// target of that step is untouched, and the files changed before it are
// rolled back (a rollback that itself runs out of space is
// PATCH_ROLLBACK_INCOMPLETE with the STORAGE_FULL cause in its details).
//
// # Limits
//
// The whole patch is held in memory: the total of new content is capped by
// Options.MaxBytes, and any file the patch reads (to edit it, or to back it
// up before overwriting or deleting it) may be at most MaxFileBytes long.
// Restored files are new inodes: hard links to a touched file are not
// preserved, and neither is its owner when the daemon runs as another user.
package patch
