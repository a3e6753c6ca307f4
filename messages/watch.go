package messages

// WatchSync asks a checkout for its watcher's view of the work tree after
// a sync cookie: the caller has raised the cookie file Cookie (a base name
// starting with "harnessd-cookie-") in the checkout's cookie dir
// (watch.CookieDir, outside the checkout) before asking, and the
// answer comes once the watcher has seen that file appear, so every change
// made before the ask is in it. Epoch and Gen are the position of the
// caller's view (zero = none yet). The answer is a WatchState.
type WatchSync struct {
	Cookie string
	Epoch  uint64
	Gen    uint64
}

// WatchState is the watcher's answer to a WatchSync.
type WatchState struct {
	// Ready is false when the checkout cannot be watched (Reason says why:
	// a linked worktree, the inotify watch limit, ...): the caller runs
	// git instead.
	Ready  bool
	Reason string
	// Epoch and Gen are the watcher's position now.
	Epoch uint64
	Gen   uint64
	// Complete is set when Changed and Meta hold every change since the
	// caller's (Epoch, Gen); false = rebuild the view from scratch.
	Complete bool
	Changed  []string
	Meta     bool
	// Watches is how many directories are watched.
	Watches int
	// CookieSeen is set when the answer waited for the cookie's event;
	// otherwise (an asker of another epoch, answered at once) the event may
	// still come, and the caller must not raise that cookie name again.
	CookieSeen bool
}

// WatchOverflow makes a checkout's watcher behave as if its event queue
// had overflowed (tests prove views survive it). Answered with WatchState
// of the new position (Complete false).
type WatchOverflow struct{}
