package persistence

import (
	"sync"
	"time"
)

// Faults makes a Store's writes fail or stall the way a failing disk
// does, for tests: FailWrites(syscall.EROFS) is a file system remounted
// read-only, FailWrites(syscall.EIO) a disk that errors, DelayWrites a
// disk that is slow or frozen. Production never sets Options.Faults; a
// Store without it pays one nil check per write. Safe for concurrent use.
type Faults struct {
	mu    sync.Mutex // protects err, delay and thaw
	err   error
	delay time.Duration
	thaw  chan struct{} // closed when the delay changes: held writes go on
}

// FailWrites makes every write fail with err before it reaches Badger;
// nil lets writes through again.
func (f *Faults) FailWrites(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// DelayWrites makes every write wait d before it reaches Badger (0 =
// none), as it would on a slow or frozen disk; writes held by an earlier
// delay go on at once (the disk thawed).
func (f *Faults) DelayWrites(d time.Duration) {
	f.mu.Lock()
	f.delay = d
	if f.thaw != nil {
		close(f.thaw)
		f.thaw = nil
	}
	f.mu.Unlock()
}

// write is what a write meets first: the delay, then the error.
func (f *Faults) write() error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	err, d := f.err, f.delay
	if d > 0 && f.thaw == nil {
		f.thaw = make(chan struct{})
	}
	thaw := f.thaw
	f.mu.Unlock()
	if d > 0 { // the slow disk itself, until its delay changes (a thaw)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-thaw:
		}
		t.Stop()
	}
	return err
}
