//go:build !linux

package proc

import (
	"context"
	"os"

	"github.com/harnessd/harnessd/contract/errs"
)

// Process is a started command. Only Linux is supported.
type Process struct{}

// Run is not supported on this platform.
func Run(ctx context.Context, s Spec) (Result, error) {
	return Result{}, errs.New(errs.Unavailable, "proc: running commands is only supported on Linux")
}

// Start is not supported on this platform.
func Start(ctx context.Context, s Spec) (*Process, error) {
	return nil, errs.New(errs.Unavailable, "proc: running commands is only supported on Linux")
}

// Wait is not supported on this platform.
func (p *Process) Wait() (Result, error) {
	return Result{}, errs.New(errs.Unavailable, "proc: not supported")
}

// Done is not supported on this platform.
func (p *Process) Done() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// Pid is not supported on this platform.
func (p *Process) Pid() int { return 0 }

// RunID is not supported on this platform.
func (p *Process) RunID() string { return "" }

// Cancel is not supported on this platform.
func (p *Process) Cancel() {}

// Signal is not supported on this platform.
func (p *Process) Signal(sig os.Signal) error {
	return errs.New(errs.Unavailable, "proc: not supported")
}

// Peek is not supported on this platform.
func (p *Process) Peek() (stdout, stderr Output) { return Output{}, Output{} }

// SweepMarked is not supported on this platform.
func SweepMarked(runID string, pgid int) int { return 0 }
