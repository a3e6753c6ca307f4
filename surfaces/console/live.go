package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// runsDigest is what the runs page shows of each run that can change:
// its id and status.
func runsDigest(runs []messages.RunState) string {
	var b strings.Builder
	for _, r := range runs {
		b.WriteString(r.RunID + ":" + r.Status + ";")
	}
	return b.String()
}

// listDigest is a short hash of what the jobs or runs page shows of its
// newest 100 rows ("" = nothing to watch, or the list cannot be read).
func (c *console) listDigest(ctx context.Context, watch string) string {
	d := ""
	switch watch {
	case "jobs":
		if jl, err := c.h.JobList(ctx, harness.JobListArgs{Limit: 100}); err == nil {
			d = jobsDigest(jl.Jobs)
		}
	case "runs":
		if rl, err := c.h.RunList(ctx, harness.RunListArgs{Limit: 100}); err == nil {
			d = runsDigest(rl.Runs)
		}
	}
	if d == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(d))
	return hex.EncodeToString(sum[:8])
}

// events is the console's live stream (GET /ui/events, one per open page):
// "approvals" when the pending approvals change (and once at the start),
// "runs" when a run starts or changes state (?watch=runs: the run events
// at once, the list polled for new runs) and "jobs" when a job appears or
// changes state (?watch=jobs).
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
	// The digest of the watched list as the page showed it (?seen=), so
	// a change between the page's render and this stream is not missed.
	list := r.URL.Query().Get("seen")
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
		if d := c.listDigest(r.Context(), watch); d != "" && d != list {
			if list != "" && sse.event(watch, "", "changed") != nil {
				return false
			}
			list = d
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
