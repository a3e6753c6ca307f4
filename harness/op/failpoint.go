package op

import (
	"os"
	"syscall"
)

// CrashAt kills the process at once, as kill -9 does (nothing deferred
// runs, nothing is flushed), when HARNESSD_FAILPOINT names point: set
// only by the crash tests, which kill the daemon at a named point of the
// write protocol with a real SIGKILL. "before-commit": after a write's
// files changed, before its closing synced commit (Write, step 4);
// "after-commit": after that commit, before the answer;
// "after-job-record": once the jobs actor stored a new job with its
// request's completion, before job_start answers. Unset, it costs an
// environment lookup.
func CrashAt(point string) {
	if os.Getenv("HARNESSD_FAILPOINT") != point {
		return
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
