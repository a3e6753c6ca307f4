package actors

import (
	"sync"
	"time"
)

// Tasks runs the blocking work of actors (processes, git, file I/O, walks
// of the store) in goroutines it tracks: Receive never waits for them, the
// goroutines report back as messages, and whoever owns the actor system
// waits for them with Wait once the actors are drained. The zero value is
// ready to use; a nil *Tasks runs untracked goroutines.
type Tasks struct {
	wg sync.WaitGroup
}

// Go runs f in a tracked goroutine.
func (t *Tasks) Go(f func()) {
	if t == nil {
		go f()
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f()
	}()
}

// Wait waits up to timeout for every tracked goroutine and reports whether
// they all ended.
func (t *Tasks) Wait(timeout time.Duration) bool {
	if t == nil {
		return true
	}
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}
