//go:build linux

package proc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/errs"
)

// drainDelay bounds how long Wait waits for the output pipes to reach EOF
// after the process group has been killed and swept. Only a descendant that
// escaped the sweep (left the group and dropped the marker) can hold them
// open that long; then the read ends are closed.
const drainDelay = 250 * time.Millisecond

// copyBufSize matches the default Linux pipe capacity.
const copyBufSize = 64 << 10

var copyBufPool = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// Process is a started command. All methods are safe for concurrent use.
type Process struct {
	spec  Spec
	cmd   *exec.Cmd
	pid   int
	runID string
	start time.Time
	clock pidClock // pid allocation state just before the fork

	stdout, stderr *HeadTail
	outR, errR     *os.File
	outDone        chan struct{}
	errDone        chan struct{}
	stdinW         *os.File      // nil unless Stdin is copied by a goroutine
	stdinDone      chan struct{} // nil unless Stdin is copied by a goroutine

	exited     chan struct{} // closed when the leader has exited (still unreaped)
	cancelCh   chan struct{}
	cancelOnce sync.Once

	mu     sync.Mutex // guards reaped
	reaped bool

	done chan struct{} // closed when res and err are final
	res  Result
	err  error
}

// Run starts the command described by s and waits for it: Start + Wait.
// The error is non-nil only when the process could not be started; a
// non-zero exit, a signal, a timeout or a cancellation are reported in the
// Result.
func Run(ctx context.Context, s Spec) (Result, error) {
	p, err := Start(ctx, s)
	if err != nil {
		return Result{}, err
	}
	return p.Wait()
}

// Start starts the command described by s and returns at once. The process is
// supervised by a goroutine: its timeout and ctx are enforced, and its group
// killed and swept, whether or not Wait is called. Errors are coded:
// InvalidArgument for a bad Spec, NotFound for a missing command or working
// directory, Cancelled or Timeout when ctx is already done, Internal else.
func Start(ctx context.Context, s Spec) (*Process, error) {
	if err := validate(s); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errs.Wrap(errs.CodeOf(err), err, "command %q not started: %v", s.Argv[0], err)
	}
	env := s.Env
	if env == nil {
		env = ScrubEnv(os.Environ(), nil)
	}
	if s.Dir != "" {
		fi, err := os.Stat(s.Dir)
		switch {
		case err != nil && errors.Is(err, fs.ErrNotExist):
			return nil, errs.Wrap(errs.NotFound, err, "working directory %q does not exist", s.Dir)
		case err != nil:
			return nil, errs.Wrap(errs.InvalidArgument, err, "working directory %q: %v", s.Dir, err)
		case !fi.IsDir():
			return nil, errs.New(errs.InvalidArgument, "working directory %q is not a directory", s.Dir)
		}
	}
	pathEnv, ok := envValue(env, "PATH")
	if !ok {
		pathEnv = os.Getenv("PATH")
	}
	path, err := lookPath(s.Argv[0], pathEnv, s.Dir)
	if err != nil {
		return nil, err
	}
	p := &Process{
		spec:     s,
		runID:    newRunID(),
		stdout:   NewHeadTail(s.MaxStdout),
		stderr:   NewHeadTail(s.MaxStderr),
		outDone:  make(chan struct{}),
		errDone:  make(chan struct{}),
		exited:   make(chan struct{}),
		cancelCh: make(chan struct{}),
		done:     make(chan struct{}),
	}
	p.cmd = &exec.Cmd{
		Path: path,
		Args: slices.Clone(s.Argv),
		Env:  childEnv(env, p.runID),
		Dir:  s.Dir,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if err := p.startLocked(); err != nil {
		return nil, err
	}
	p.goCopiers()
	go p.waitExit()
	go p.supervise(ctx)
	return p, nil
}

// startLocked creates the pipes and forks the child on a locked OS thread, so
// Pdeathsig refers to a thread that stays alive while Start runs.
func (p *Process) startLocked() error {
	var toClose []*os.File // child ends and, on failure, everything
	closeAll := func() {
		for _, f := range toClose {
			f.Close()
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return errs.Wrap(errs.Internal, err, "create stdout pipe: %v", err)
	}
	toClose = append(toClose, outW)
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		closeAll()
		return errs.Wrap(errs.Internal, err, "create stderr pipe: %v", err)
	}
	toClose = append(toClose, errW)
	p.cmd.Stdout, p.cmd.Stderr = outW, errW
	switch in := p.spec.Stdin.(type) {
	case nil:
		// exec opens /dev/null.
	case *os.File:
		p.cmd.Stdin = in
	default:
		inR, inW, err := os.Pipe()
		if err != nil {
			outR.Close()
			errR.Close()
			closeAll()
			return errs.Wrap(errs.Internal, err, "create stdin pipe: %v", err)
		}
		toClose = append(toClose, inR)
		p.cmd.Stdin = inR
		p.stdinW = inW
	}

	p.clock = samplePidClock()
	if c := p.spec.Confine; c != nil {
		err = c.Start(p.cmd, p.exited)
	} else {
		runtime.LockOSThread()
		err = p.cmd.Start()
		runtime.UnlockOSThread()
	}
	closeAll() // the child holds its ends now
	if err != nil {
		outR.Close()
		errR.Close()
		if p.stdinW != nil {
			p.stdinW.Close()
		}
		return startError(p.spec.Argv[0], err)
	}
	p.start = time.Now()
	p.pid = p.cmd.Process.Pid
	p.outR, p.errR = outR, errR
	return nil
}

// startError maps an exec start failure to a coded error.
func startError(argv0 string, err error) error {
	var errno syscall.Errno
	errors.As(err, &errno)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errs.Wrap(errs.NotFound, err, "start %q: %v", argv0, err)
	case errno == syscall.EACCES || errno == syscall.ENOEXEC || errno == syscall.EISDIR ||
		errno == syscall.ETXTBSY || errno == syscall.E2BIG || errno == syscall.EINVAL:
		return errs.Wrap(errs.InvalidArgument, err, "start %q: %v", argv0, err)
	default:
		return errs.Wrap(errs.Internal, err, "start %q: %v", argv0, err)
	}
}

// goCopiers starts the goroutines that drain stdout and stderr (and feed
// stdin when it is not a file).
func (p *Process) goCopiers() {
	outSink, errSink := p.spec.Stdout, p.spec.Stderr
	if outSink != nil && sameWriter(outSink, errSink) {
		lw := &lockedWriter{w: outSink}
		outSink, errSink = lw, lw
	}
	go copyStream(p.outR, p.stdout, outSink, p.outDone)
	go copyStream(p.errR, p.stderr, errSink, p.errDone)
	if p.stdinW != nil {
		p.stdinDone = make(chan struct{})
		go func() {
			defer close(p.stdinDone)
			_, _ = io.Copy(p.stdinW, p.spec.Stdin)
			p.stdinW.Close() // EOF for the child
		}()
	}
}

// copyStream copies r into sink (uncapped, until it fails) and ht.
func copyStream(r *os.File, ht *HeadTail, sink io.Writer, done chan<- struct{}) {
	defer close(done)
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	buf := *bp
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if sink != nil {
				if _, werr := sink.Write(buf[:n]); werr != nil {
					sink = nil
				}
			}
			_, _ = ht.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// waitExit closes p.exited once the leader has exited, without reaping it:
// while it is an unreaped zombie its pid, and so the group id, cannot be
// reused, which makes signalling -pid safe.
func (p *Process) waitExit() {
	defer close(p.exited)
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// supervise enforces the timeout and cancellation, kills and sweeps, drains
// the pipes, reaps the leader and publishes the Result.
func (p *Process) supervise(ctx context.Context) {
	defer close(p.done)
	var timeoutC <-chan time.Time
	if p.spec.Timeout > 0 {
		t := time.NewTimer(p.spec.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	var pidsC <-chan time.Time
	if p.spec.PidsMax > 0 {
		t := time.NewTicker(pidsEvery)
		defer t.Stop()
		pidsC = t.C
	}
	var timedOut, cancelled, tooMany bool
wait:
	for {
		select {
		case <-p.exited:
		case <-timeoutC:
			timedOut = true
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				timedOut = true
			} else {
				cancelled = true
			}
		case <-p.cancelCh:
			cancelled = true
		case <-pidsC:
			if countTree(p.pid) <= p.spec.PidsMax {
				continue
			}
			// A flood: no grace, kill the tree now.
			tooMany = true
		}
		break wait
	}
	if timedOut || cancelled {
		select {
		case <-p.exited: // it finished on its own at the same moment
			timedOut, cancelled = false, false
		default:
			p.signalGroup(syscall.SIGTERM)
			grace := p.spec.Grace
			if grace == 0 {
				grace = DefaultGrace
			}
			g := time.NewTimer(grace)
			select {
			case <-p.exited:
			case <-g.C:
			}
			g.Stop()
		}
	}
	// Kill what is left of the group, also after a normal exit: background
	// leftovers of a finished command are not allowed to outlive it.
	p.signalGroup(syscall.SIGKILL)
	<-p.exited
	swept := sweepRun(p.runID, p.pid, p.clock)
	p.drain()
	state, werr := p.reap()
	if c := p.spec.Confine; c != nil {
		c.Done()
	}

	res := Result{Pid: p.pid, TimedOut: timedOut, Cancelled: cancelled, Swept: swept, PidsExceeded: tooMany}
	if state != nil {
		if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = -1
			res.Signal = ws.Signal().String()
		} else {
			res.ExitCode = state.ExitCode()
		}
		res.CPU = state.UserTime() + state.SystemTime()
		if ru, ok := state.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSSBytes = ru.Maxrss << 10 // KiB on Linux
		}
	} else {
		res.ExitCode = -1
		p.err = errs.Wrap(errs.Internal, werr, "wait for %q (pid %d): %v", p.spec.Argv[0], p.pid, werr)
	}
	res.Stdout = p.stdout.Output()
	res.Stderr = p.stderr.Output()
	res.Duration = time.Since(p.start)
	res.DurationMs = float64(res.Duration) / float64(time.Millisecond)
	p.res = res
}

// signalGroup sends sig to the process group. It is only called before the
// leader is reaped, so the group id still belongs to this run.
func (p *Process) signalGroup(sig syscall.Signal) {
	_ = syscall.Kill(-p.pid, sig)
}

// drain waits for the output copiers to reach EOF, closing the read ends
// after drainDelay if something still holds the pipes, and stops the stdin
// copier.
func (p *Process) drain() {
	if p.stdinW != nil {
		p.stdinW.Close() // unblocks a Write into a pipe nobody reads
	}
	t := time.NewTimer(drainDelay)
	defer t.Stop()
	expired := false
	wait := func(ch <-chan struct{}) bool {
		if expired {
			select {
			case <-ch:
				return true
			default:
				return false
			}
		}
		select {
		case <-ch:
			return true
		case <-t.C:
			expired = true
			return false
		}
	}
	if !wait(p.outDone) || !wait(p.errDone) {
		// Something outside the group still holds a pipe; stop reading.
		p.outR.Close()
		p.errR.Close()
		<-p.outDone
		<-p.errDone
	}
	p.outR.Close()
	p.errR.Close()
	if p.stdinDone != nil {
		wait(p.stdinDone) // may stay blocked in the caller's Stdin.Read; see the package doc
	}
}

// reap collects the leader's exit status; after it the pid may be reused, so
// Signal stops working.
func (p *Process) reap() (*os.ProcessState, error) {
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
	err := p.cmd.Wait()
	return p.cmd.ProcessState, err
}

// Wait waits until the command has finished and every process it left has
// been killed, and returns its Result. It may be called any number of times.
// The error is non-nil only if the exit status could not be collected.
func (p *Process) Wait() (Result, error) {
	<-p.done
	return p.res, p.err
}

// Done is closed when the Result is final.
func (p *Process) Done() <-chan struct{} { return p.done }

// Pid returns the process id of the command, which is also its process group
// id.
func (p *Process) Pid() int { return p.pid }

// RunID returns the run's marker, the value of RunIDEnv in its environment.
func (p *Process) RunID() string { return p.runID }

// Cancel starts the kill sequence as if the context had been cancelled:
// SIGTERM to the group, the grace period, SIGKILL, the sweep. It does not
// wait; call Wait for the Result. It is a no-op once the command has exited.
func (p *Process) Cancel() {
	p.cancelOnce.Do(func() { close(p.cancelCh) })
}

// Signal sends sig to the command's whole process group. After the command
// has exited and been reaped it returns an error wrapping os.ErrProcessDone.
func (p *Process) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return errs.New(errs.InvalidArgument, "unsupported signal %v", sig)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return errs.Wrap(errs.NotFound, os.ErrProcessDone, "process %d has finished", p.pid)
	}
	if err := syscall.Kill(-p.pid, s); err != nil && err != syscall.ESRCH {
		return errs.Wrap(errs.Internal, err, "signal process group %d: %v", p.pid, err)
	}
	return nil
}

// Peek returns the output captured so far, for following a long job.
func (p *Process) Peek() (stdout, stderr Output) {
	return p.stdout.Output(), p.stderr.Output()
}

// validate rejects a Spec that cannot describe a command.
func validate(s Spec) error {
	if len(s.Argv) == 0 {
		return errs.New(errs.InvalidArgument, "argv is empty")
	}
	if s.Argv[0] == "" {
		return errs.New(errs.InvalidArgument, "argv[0] is empty")
	}
	for i, a := range s.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return errs.New(errs.InvalidArgument, "argv[%d] contains a NUL byte", i)
		}
	}
	for i, kv := range s.Env {
		if strings.IndexByte(kv, 0) >= 0 {
			return errs.New(errs.InvalidArgument, "env[%d] contains a NUL byte", i)
		}
	}
	if strings.IndexByte(s.Dir, 0) >= 0 {
		return errs.New(errs.InvalidArgument, "dir contains a NUL byte")
	}
	switch {
	case s.Timeout < 0:
		return errs.New(errs.InvalidArgument, "timeout %v is negative", s.Timeout)
	case s.Grace < 0:
		return errs.New(errs.InvalidArgument, "grace %v is negative", s.Grace)
	case s.MaxStdout < 0:
		return errs.New(errs.InvalidArgument, "max stdout %d is negative", s.MaxStdout)
	case s.MaxStderr < 0:
		return errs.New(errs.InvalidArgument, "max stderr %d is negative", s.MaxStderr)
	}
	return nil
}

// newRunID returns a random 128-bit hex marker.
func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on Linux (crypto/rand crashes instead)
	return hex.EncodeToString(b[:])
}

// lockedWriter serialises writes from the two copiers to one shared sink.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// sameWriter reports whether a and b are the same writer, without panicking
// on uncomparable dynamic types (as os/exec does).
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
