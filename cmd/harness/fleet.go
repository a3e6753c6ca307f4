package main

import (
	"fmt"
	"io"
	"time"

	"github.com/harnessd/harnessd/internal/fleet"
)

// printFleet writes the fleet section of `harness status`: this node's
// session, the members, the checks claimed now and the repositories'
// homes.
func printFleet(w io.Writer, f *fleet.Status) {
	line := fmt.Sprintf("%s, %s, epoch %d, ttl %s", esc(f.Node), f.State, f.Epoch, f.TTL)
	switch f.State {
	case "live":
		line += ", session until " + f.Deadline.Local().Format(time.TimeOnly)
	case "lost":
		line += ", lost at " + f.LostAt.Local().Format(time.TimeOnly) + ", rejoins from " + f.RejoinAt.Local().Format(time.TimeOnly)
	}
	fmt.Fprintf(w, "fleet node\t%s\n", line)
	for _, m := range f.Members {
		state := "live"
		if !m.Live {
			state = "gone"
		}
		fmt.Fprintf(w, "fleet member\t%s (%s, epoch %d, %s)\n", esc(m.Name), state, m.Epoch, esc(m.Advertise))
	}
	if len(f.Claims) == 0 {
		fmt.Fprintf(w, "fleet claims\tnone\n")
	}
	for _, c := range f.Claims {
		fmt.Fprintf(w, "fleet claim\t%s on %s (token %d, run %s)\n", esc(shortID(c.Identity)), esc(c.Node), c.Token, esc(c.RunID))
	}
	// Where each repository's checkout lives: other nodes forward its
	// operations there.
	for _, o := range f.Owners {
		fmt.Fprintf(w, "fleet owner\t%s on %s (epoch %d)\n", esc(o.RepoID), esc(o.Node), o.Epoch)
	}
}

// shortID is "sha256:" and the first 12 hex digits of an identity.
func shortID(id string) string {
	if len(id) > 19 {
		return id[:19]
	}
	return id
}
