// Package watch is the live view's source of truth about a work tree: Pump
// reads the kernel's inotify events for every directory of the tree but
// .git and the ignored ones (plus the git dir's index, HEAD, refs and info)
// and hands them out in batches; Tracker, a pure state machine, turns the
// batches into generations and epochs and answers Since: every path
// changed since an asker's position, or "rebuild" when it lost track. Sync
// cookies, files raised in a cookie dir outside the tree (in the data dir,
// where no confined process can write), prove that every change made
// before the cookie has been read, as Watchman's do.
//
// The package never guesses: an overflowing queue, a watch it cannot add or
// too many remembered paths start a new epoch, which tells every asker to
// rescan. It writes nothing into a checkout, does not run git, and holds no
// view of file contents; Tracker does no I/O and takes no locks (its actor
// owns it), and Pump's goroutine only reads events and calls its emit
// function.
package watch
