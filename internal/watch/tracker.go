package watch

import "slices"

// Batch is what the pump read from the kernel's event queue in one go.
type Batch struct {
	// Paths are the work-tree paths (slash-separated, relative to the
	// root) that may have changed: files or directories, existing or gone.
	Paths []string
	// Meta is set when something status depends on changed that is not a
	// work-tree file's content: the index, HEAD, refs, config,
	// info/exclude, info/attributes, or a .gitignore anywhere. (A
	// .gitattributes is an ordinary path: the view rereads its rules.)
	Meta bool
	// Cookies are the sync cookies (base names) that appeared.
	Cookies []string
	// Overflow is set when events were lost (the kernel queue overflowed,
	// or a watch could not be added): anything may have changed.
	Overflow bool
	// Reason says why, for Overflow ("event queue overflow", "watch limit
	// reached", ...).
	// Failed is set (to why) when the checkout cannot be watched any more
	// (a submodule past the bounds the pump follows): the watcher stops
	// answering from the tree and askers run git.
	Failed string
	Reason string
}

// State is what a sync answers: the watcher's position and, when the asker
// is in the same epoch, every path changed since the asker's generation.
type State struct {
	// Epoch changes whenever the watcher lost track (overflow, too many
	// changed paths remembered, a restart): an asker from another epoch
	// must rebuild its view from scratch.
	Epoch uint64
	// Gen counts the batches that changed something; it never goes back
	// within an epoch.
	Gen uint64
	// Complete is set when Changed and Meta cover everything since the
	// asked (epoch, gen); false means rebuild.
	Complete bool
	// Changed are the paths changed since the asked generation, sorted.
	Changed []string
	// Meta is set when a Batch.Meta change happened since then.
	Meta bool
	// Reason is the last overflow's reason (for the user, when a view
	// keeps rebuilding).
	Reason string
}

// Tracker is the watcher's state machine: generations, the paths changed
// per generation, and the sync cookies seen. It is pure (no I/O, no
// goroutines); the watcher actor drives it in mailbox order.
type Tracker struct {
	epoch, gen uint64
	changed    map[string]uint64 // path -> generation of its last change
	metaGen    uint64
	cookies    map[string]bool
	reason     string
	max        int
}

// DefaultMaxChanged bounds the changed paths a tracker remembers; past it
// the epoch moves on and askers rebuild (a checkout-wide rewrite is cheaper
// to rescan than to replay).
const DefaultMaxChanged = 100_000

// maxCookies bounds the cookies seen but never asked for (an asker that
// gave up): past it they are forgotten.
const maxCookies = 1024

// NewTracker returns a tracker in epoch 1 that remembers at most max
// changed paths (0 = DefaultMaxChanged).
func NewTracker(max int) *Tracker { return NewTrackerAt(1, max) }

// NewTrackerAt returns a tracker that starts in epoch. A watcher that
// replaces an earlier one (after passivation or a restart) starts in an
// epoch the earlier one never reached, e.g. from the clock, so that no
// asker of the old one takes the new one's answers as complete.
func NewTrackerAt(epoch uint64, max int) *Tracker {
	if max <= 0 {
		max = DefaultMaxChanged
	}
	return &Tracker{epoch: epoch, changed: map[string]uint64{}, cookies: map[string]bool{}, max: max}
}

// Apply records one batch and returns the cookies it carried.
func (t *Tracker) Apply(b Batch) []string {
	if b.Overflow {
		t.newEpoch(b.Reason)
	} else if len(b.Paths) > 0 || b.Meta {
		t.gen++
		for _, p := range b.Paths {
			t.changed[p] = t.gen
		}
		if b.Meta {
			t.metaGen = t.gen
		}
		if len(t.changed) > t.max {
			t.newEpoch("more changed paths than the watcher remembers")
		}
	}
	for _, c := range b.Cookies {
		if len(t.cookies) >= maxCookies {
			clear(t.cookies)
		}
		t.cookies[c] = true
	}
	return b.Cookies
}

func (t *Tracker) newEpoch(reason string) {
	t.epoch++
	t.gen++
	t.metaGen = t.gen
	clear(t.changed)
	t.reason = reason
}

// TakeCookie reports whether the cookie name was seen, and forgets it.
func (t *Tracker) TakeCookie(name string) bool {
	if !t.cookies[name] {
		return false
	}
	delete(t.cookies, name)
	return true
}

// Since answers an asker whose view is current as of (epoch, gen).
func (t *Tracker) Since(epoch, gen uint64) State {
	st := State{Epoch: t.epoch, Gen: t.gen, Reason: t.reason}
	if epoch != t.epoch || gen > t.gen {
		return st
	}
	st.Complete = true
	st.Meta = t.metaGen > gen
	if gen == t.gen {
		return st
	}
	for p, g := range t.changed {
		if g > gen {
			st.Changed = append(st.Changed, p)
		}
	}
	slices.Sort(st.Changed)
	return st
}

// Position returns the current epoch and generation.
func (t *Tracker) Position() (epoch, gen uint64) { return t.epoch, t.gen }
