package runtime

import (
	"context"

	"github.com/harnessd/harnessd/messages"
)

// DurableLease is a durable lease of a repository.
type DurableLease struct {
	RepoID string `json:"repo_id"`
	messages.LeaseInfo
}

// Status is what the actors report about themselves.
type Status struct {
	Actors        map[string]int
	Lanes         []messages.LaneStatusReply
	Checks        *messages.CheckStatsReply
	Jobs          *messages.JobStatsReply
	DurableLeases []DurableLease
}

// Status asks every part of the tree for its figures; a part that does not
// answer is left out.
func (r *Runtime) Status(ctx context.Context) Status {
	st := Status{Actors: map[string]int{}, DurableLeases: []DurableLease{}}
	if c, err := Ask[messages.CountsReply](ctx, r, r.root, messages.Counts{}); err == nil {
		for k, v := range c.ByKind {
			st.Actors[k] += v
		}
	}
	if c, err := Ask[messages.CountsReply](ctx, r, r.Registry.pid, messages.Counts{}); err == nil {
		for k, v := range c.ByKind {
			if k == "registry" {
				continue // counted by the root as its child
			}
			st.Actors[k] += v
		}
	}
	st.Lanes = r.Lanes.Status(ctx)
	if s, err := r.Checks.Stats(ctx); err == nil {
		st.Checks = &s
	}
	if s, err := r.Jobs.Stats(ctx); err == nil {
		st.Jobs = &s
	}
	for _, e := range r.index.All() {
		l, err := Ask[messages.LeaseList](ctx, r, e.Checkout, messages.ListLeases{})
		if err != nil {
			continue
		}
		for _, li := range l.Leases {
			if li.Visibility == "durable" {
				st.DurableLeases = append(st.DurableLeases, DurableLease{RepoID: e.Repo.ID, LeaseInfo: li})
			}
		}
	}
	return st
}
