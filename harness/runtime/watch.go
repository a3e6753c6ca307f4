package runtime

import (
	"context"

	"github.com/harnessd/harnessd/messages"
)

// WatchSync asks the watcher of repo's checkout for the changes since the
// caller's position, after the caller created the cookie m.Cookie in the
// git dir (messages.WatchSync).
func (r *Runtime) WatchSync(ctx context.Context, repo RepoEntry, m messages.WatchSync) (messages.WatchState, error) {
	return Ask[messages.WatchState](ctx, r, repo.Checkout, m)
}

// WatchOverflow makes the watcher of repo's checkout lose track, as a
// kernel queue overflow would (tests).
func (r *Runtime) WatchOverflow(ctx context.Context, repo RepoEntry) (messages.WatchState, error) {
	return Ask[messages.WatchState](ctx, r, repo.Checkout, messages.WatchOverflow{})
}
