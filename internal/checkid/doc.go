// Package checkid computes the semantic identity of a check: a digest saying
// "this exact check, on this exact content, in this environment", so that the
// evidence of an identical successful run can be reused instead of re-running.
//
// An [Identity] combines three parts, each with its own digest:
//
//   - the [Revision]: the HEAD tree plus the content of every modified, staged
//     and untracked non-ignored file ([ContentRevision] runs one git status
//     and hashes only those files), so reverting an edit gives back the same
//     digest;
//   - the [Definition]: argv, cwd, declared effects (order-insensitive) and
//     timeout;
//   - the [Env]: allowlisted environment variables and the versions of the
//     program and its toolchain ([EnvProbe] caches the version probes).
//
// [ExplainMiss] turns two sets of [Parts] into human reasons ("src/a.go
// changed (modified since the evidence)", "HEAD moved from ...") so a cache
// miss can be explained.
//
// Every git call goes through harness/gitx and therefore its hardening; work
// tree files are read through an [os.Root], so no path can leave the
// repository.
package checkid
