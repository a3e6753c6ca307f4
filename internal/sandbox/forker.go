package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// Pool limits of the Fast Path's forkers.
const (
	// maxIdlePerKey forkers of one policy wait for the next command.
	maxIdlePerKey = 2
	// maxIdleForkers bounds the idle forkers of every policy together.
	maxIdleForkers = 8
	// forkerIdleTTL is how long an idle forker waits before it ends.
	forkerIdleTTL = 30 * time.Second
)

// forker is an OS thread confined once for one Fast Path policy, with a
// private tmp of its own, that forks that policy's commands one at a time:
// a command then skips the creation and confinement of a thread, most of
// what confining it costs. Its Landlock domain is built from the tree as
// it was (the policy key holds the tree's stamp), so a forker serves only
// commands of the same stamp; between two it empties its tmp.
type forker struct {
	key  string
	tmp  string
	reqs chan forkReq
	quit chan struct{}
	done chan struct{} // closed when its goroutine (and thread) ended
	idle time.Time     // when it went back to the pool
}

type forkReq struct {
	cmd  *exec.Cmd
	errc chan error
}

// newForker starts a forker for p (its tmp is made here) and returns once
// its thread is confined.
func (s *Sandbox) newForker(key string, p Policy) (*forker, error) {
	tmp, err := os.MkdirTemp(s.tmp, string(p.Profile)+"-")
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "create the command's private tmp: %v", err)
	}
	f := &forker{key: key, tmp: tmp, reqs: make(chan forkReq), quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error, 1)
	c := &Prepared{s: s, p: p, tmp: tmp}
	go func() {
		// Never unlocked: the thread is confined and dies with this
		// goroutine (and with it the Pdeathsig of what it forked, which
		// the runner has killed by then).
		runtime.LockOSThread()
		defer close(f.done)
		if err := c.confineThread(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for {
			select {
			case r := <-f.reqs:
				r.errc <- r.cmd.Start()
			case <-f.quit:
				return
			}
		}
	}()
	if err := <-ready; err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	return f, nil
}

// start forks cmd from the forker's thread.
func (f *forker) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	f.reqs <- forkReq{cmd: cmd, errc: errc}
	return <-errc
}

// stop ends the forker's thread, waits for it, and removes its tmp.
func (f *forker) stop() {
	close(f.quit)
	<-f.done
	_ = os.RemoveAll(f.tmp)
}

// takeForker returns an idle forker of key, or nil. Forkers idle longer
// than their TTL are stopped on the way.
func (s *Sandbox) takeForker(key string) *forker {
	s.poolMu.Lock()
	defer s.poolMu.Unlock()
	s.expireLocked(time.Now())
	l := s.pool[key]
	if len(l) == 0 {
		return nil
	}
	f := l[len(l)-1]
	s.pool[key] = l[:len(l)-1]
	s.idle--
	return f
}

// putForker empties f's tmp and keeps it for the next command of its key,
// or stops it when the pool is full or the sandbox closed.
func (s *Sandbox) putForker(f *forker) {
	if err := emptyDir(f.tmp); err != nil {
		f.stop()
		return
	}
	s.poolMu.Lock()
	defer s.poolMu.Unlock()
	now := time.Now()
	s.expireLocked(now)
	if s.closed || len(s.pool[f.key]) >= maxIdlePerKey || s.idle >= maxIdleForkers {
		f.stop()
		return
	}
	f.idle = now
	s.pool[f.key] = append(s.pool[f.key], f)
	s.idle++
}

// expireLocked stops the forkers idle longer than their TTL; poolMu is held.
func (s *Sandbox) expireLocked(now time.Time) {
	for k, l := range s.pool {
		kept := l[:0]
		for _, f := range l {
			if now.Sub(f.idle) > forkerIdleTTL {
				f.stop()
				s.idle--
				continue
			}
			kept = append(kept, f)
		}
		if len(kept) == 0 {
			delete(s.pool, k)
		} else {
			s.pool[k] = kept
		}
	}
}

// closePool stops every idle forker; later ones are stopped when returned.
func (s *Sandbox) closePool() {
	s.poolMu.Lock()
	defer s.poolMu.Unlock()
	s.closed = true
	for k, l := range s.pool {
		for _, f := range l {
			f.stop()
		}
		delete(s.pool, k)
	}
	s.idle = 0
}

// emptyDir removes what dir holds, not dir itself.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Pooled returns the number of idle forkers: confined threads, each a
// goroutine, kept for the next Fast Path commands.
func (s *Sandbox) Pooled() int {
	if s == nil {
		return 0
	}
	s.poolMu.Lock()
	defer s.poolMu.Unlock()
	return s.idle
}
