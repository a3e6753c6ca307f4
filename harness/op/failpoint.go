package op

import (
	"os"
	"syscall"
)

// failpoint is HARNESSD_FAILPOINT, read once at start: set only by the
// crash tests, which kill the daemon at a named point of the write
// protocol with a real SIGKILL. "before-commit": after a write's files
// changed, before its one synced commit (Write, step 4); "after-commit":
// after that commit, before the answer.
var failpoint = os.Getenv("HARNESSD_FAILPOINT")

// crashHere kills the process at once, as kill -9 does: nothing deferred
// runs and nothing is flushed.
func crashHere() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
