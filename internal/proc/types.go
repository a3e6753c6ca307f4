package proc

import (
	"io"
	"os/exec"
	"time"
)

// DefaultGrace is the SIGTERM -> SIGKILL grace period when Spec.Grace is 0.
const DefaultGrace = 200 * time.Millisecond

// Spec describes one command to run.
type Spec struct {
	// Argv is the command and its arguments; required. Argv[0] is looked up
	// in the PATH of Env (or the daemon's PATH when Env has none); only
	// absolute PATH entries are searched. A name with a slash is used as is,
	// relative to Dir.
	Argv []string
	// Dir is the working directory; "" means the daemon's.
	Dir string
	// Env is the full environment for the child; nil means the daemon's
	// environment scrubbed by ScrubEnv. RunIDEnv is always replaced.
	Env []string
	// Stdin is the child's standard input; nil means /dev/null.
	Stdin io.Reader
	// Timeout bounds the run; 0 means no timeout (the context only).
	Timeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL; 0 means DefaultGrace.
	Grace time.Duration
	// MaxStdout and MaxStderr are the bytes kept per stream, head and tail;
	// 0 means DefaultMaxOutput.
	MaxStdout int
	MaxStderr int
	// Confine, if set, starts the command confined (a sandbox) in place of
	// exec's Start, and is told when the run is over.
	Confine Confiner
	// PidsMax kills the command's whole process tree once it counts more
	// processes (0 = no ceiling); Result.PidsExceeded says so.
	PidsMax int
	// Stdout and Stderr are optional extra sinks (a log file, a live follower)
	// that receive every byte, uncapped, before it is capped for the Result.
	// A sink that returns an error is dropped for the rest of the run. When
	// both are the same writer, writes to it are serialised.
	Stdout, Stderr io.Writer
}

// Output is one captured stream.
type Output struct {
	Text       string `json:"text"`        // head + marker + tail when truncated
	TotalBytes int64  `json:"total_bytes"` // bytes the process wrote
	Truncated  bool   `json:"truncated"`
}

// Result reports what happened to a run.
type Result struct {
	ExitCode   int           `json:"exit_code"`        // -1 if killed by a signal
	Signal     string        `json:"signal,omitempty"` // e.g. "killed", "terminated"
	Duration   time.Duration `json:"-"`                // start to the end of cleanup
	DurationMs float64       `json:"duration_ms"`
	Stdout     Output        `json:"stdout"`
	Stderr     Output        `json:"stderr"`
	TimedOut   bool          `json:"timed_out"`       // Spec.Timeout or the context's deadline expired
	Cancelled  bool          `json:"cancelled"`       // the context was cancelled or Process.Cancel called
	Swept      int           `json:"swept,omitempty"` // escaped descendants killed after the group
	Pid        int           `json:"pid"`
	// PidsExceeded is true when the tree was killed for counting more
	// processes than Spec.PidsMax.
	PidsExceeded bool `json:"pids_exceeded,omitempty"`
	// CPU and MaxRSSBytes are the kernel's figures of the reaped leader
	// (wait4's rusage): the user+system time of it and of every descendant
	// it, or the sandbox's init, reaped; the largest RSS of any one of them.
	CPU         time.Duration `json:"-"`
	MaxRSSBytes int64         `json:"-"`
}

// Confiner starts a command confined: Start forks it (from a thread of its
// own that stays alive until exited is closed, since the child's Pdeathsig
// is tied to the thread that forked it); Done runs once the run is over.
type Confiner interface {
	Start(cmd *exec.Cmd, exited <-chan struct{}) error
	Done()
}
