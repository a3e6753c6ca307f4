package console

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/textsafe"
	"github.com/harnessd/harnessd/messages"
)

// livePoll is how often GET /ui/events looks for new approvals and, for
// the jobs page, changed jobs (the governor and the jobs offer no
// subscription; runs are followed by their event stream).
const livePoll = time.Second

// approvalsEvent is the data of an "approvals" event: the pending count,
// their ids, and the ones new since the last event (for a notification).
type approvalsEvent struct {
	Pending int           `json:"pending"`
	IDs     []string      `json:"ids"`
	New     []newApproval `json:"new,omitempty"`
}

// newApproval is a new pending approval as a notification shows it.
type newApproval struct {
	ID        string `json:"id"`
	Operation string `json:"operation"`
	Summary   string `json:"summary"`
}

// maxNoteText bounds the summary a notification carries.
const maxNoteText = 200

// approvalsDelta compares the pending approvals with the ids sent last
// (nil = nothing sent yet): changed is false when the set is the same.
// The first event lists no approval as new.
func approvalsDelta(prev map[string]bool, pending []harness.Approval) (ev approvalsEvent, next map[string]bool, changed bool) {
	next = make(map[string]bool, len(pending))
	ev = approvalsEvent{Pending: len(pending), IDs: []string{}}
	for _, a := range pending {
		next[a.ID] = true
		ev.IDs = append(ev.IDs, a.ID)
		if prev != nil && !prev[a.ID] {
			s := textsafe.Line(a.Summary)
			if len(s) > maxNoteText {
				s = s[:maxNoteText-textsafe.Partial(s[:maxNoteText])] + "…"
			}
			ev.New = append(ev.New, newApproval{ID: a.ID, Operation: textsafe.Line(a.Operation), Summary: s})
		}
	}
	sort.Strings(ev.IDs)
	changed = prev == nil || len(prev) != len(next)
	for id := range next {
		changed = changed || !prev[id]
	}
	return ev, next, changed
}

// jobsDigest is what the jobs page shows of each job that can change:
// its id and state.
func jobsDigest(jobs []*harness.JobResult) string {
	var b strings.Builder
	for _, j := range jobs {
		b.WriteString(j.JobID + ":" + j.State + ";")
	}
	return b.String()
}

// events is the console's live stream (GET /ui/events, one per open page):
// "approvals" when the pending approvals change (and once at the start),
// "runs" when a run changes state (?watch=runs) and "jobs" when a job
// appears or changes state (?watch=jobs).
func (c *console) events(w http.ResponseWriter, r *http.Request, _ session) {
	ctx := r.Context()
	watch := r.URL.Query().Get("watch")
	runs := make(chan struct{}, 1)
	if watch == "runs" {
		cancel := c.h.SubscribeRuns(func(ev messages.RunEvent) {
			if ev.Type == "span" || ev.Type == "observation" {
				return // the list shows states, not calls
			}
			select {
			case runs <- struct{}{}:
			default: // one pending signal is enough
			}
		})
		defer cancel()
	}
	sse := startSSE(w)
	var sent map[string]bool
	jobs := ""
	tick := time.NewTicker(c.poll)
	defer tick.Stop()
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	check := func() bool {
		l, err := c.h.Approvals(ctx, "")
		if err != nil {
			return ctx.Err() == nil // the harness closing: the browser reconnects
		}
		ev, next, changed := approvalsDelta(sent, l.Approvals)
		if changed {
			b, _ := json.Marshal(ev)
			if sse.event("approvals", "", string(b)) != nil {
				return false
			}
			sent = next
		}
		if watch == "jobs" {
			jl, err := c.h.JobList(ctx, harness.JobListArgs{Limit: 100})
			if err == nil {
				if d := jobsDigest(jl.Jobs); d != jobs {
					if jobs != "" && sse.event("jobs", "", "changed") != nil {
						return false
					}
					jobs = d
				}
			}
		}
		return true
	}
	if !check() {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-keep.C:
			if sse.comment("keep-alive") != nil {
				return
			}
		case <-runs:
			if sse.event("runs", "", "changed") != nil {
				return
			}
		case <-tick.C:
			if !check() {
				return
			}
		}
	}
}
