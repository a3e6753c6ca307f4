package console

import (
	"context"
	"net/http"
	"sort"
	"strings"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/messages"
)

// roots returns the registered repositories' roots by id (nil when the
// registry cannot answer: pages then show bare ids).
func (c *console) roots(ctx context.Context) map[string]string {
	l, err := c.h.Repositories(ctx, harness.ListArgs{})
	if err != nil {
		return nil
	}
	m := make(map[string]string, len(l.Repositories))
	for _, r := range l.Repositories {
		m[r.ID] = r.Root
	}
	return m
}

// clientOf is a client as audit entries and approvals name it: its name
// and version.
func clientOf(c messages.Client) string {
	if c.Version == "" {
		return c.Name
	}
	return c.Name + " " + c.Version
}

// liveFirst orders runs active first, keeping the order within each group.
func liveFirst(runs []messages.RunState) []messages.RunState {
	out := append([]messages.RunState(nil), runs...)
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Status == messages.RunActive && out[j].Status != messages.RunActive
	})
	return out
}

// jobOwner is the run that started a job and that run's client.
type jobOwner struct{ RunID, Client string }

// ownerRuns is how many runs are read to say who started each job.
const ownerRuns = 1000

// jobOwners maps job ids to the run (and client) that started them.
func (c *console) jobOwners(ctx context.Context) map[string]jobOwner {
	l, err := c.h.RunList(ctx, harness.RunListArgs{Limit: ownerRuns})
	if err != nil {
		return nil
	}
	m := map[string]jobOwner{}
	for _, st := range l.Runs {
		for _, j := range st.Jobs {
			m[j] = jobOwner{RunID: st.RunID, Client: clientOf(st.Caller.Client)}
		}
	}
	return m
}

// receiptView is a write of a run with the diff of its files.
type receiptView struct {
	harness.ReceiptItem
	Diff     []diffLine
	DiffNote string
}

// runDetails is what a run's page shows beside its spans.
type runDetails struct {
	Receipts  []receiptView
	Approvals []approvalView
	Jobs      []*harness.JobResult
}

// runPageLimit bounds the receipts (with diffs) and jobs a run page shows.
const runPageLimit = 50

// runDetails reads a run's receipts (each with the diff of its files),
// the approvals it asked for and the jobs it started.
func (c *console) runDetails(ctx context.Context, runID string, jobs []string) (runDetails, error) {
	var d runDetails
	rl, err := c.h.ReceiptList(ctx, harness.ReceiptListArgs{RunID: runID, Limit: runPageLimit})
	if err != nil {
		return d, err
	}
	for _, it := range rl.Receipts {
		v := receiptView{ReceiptItem: it}
		v.Diff, v.DiffNote = c.receiptDiff(ctx, it)
		d.Receipts = append(d.Receipts, v)
	}
	al, err := c.h.Approvals(ctx, "all")
	if err != nil {
		return d, err
	}
	for _, a := range al.Approvals {
		if a.RunID == runID {
			v := approvalView{Approval: a}
			v.Diff, _ = patchDiff(a.Detail)
			d.Approvals = append(d.Approvals, v)
		}
	}
	for i, id := range jobs {
		if i == runPageLimit {
			break
		}
		j, err := c.h.JobStatus(ctx, harness.JobStatusArgs{JobID: id})
		if err != nil {
			continue // cleaned up since: the run still names it
		}
		d.Jobs = append(d.Jobs, c.redactJob(ctx, j))
	}
	return d, nil
}

// receiptDiff is the diff of a receipt's files (redacted by git_diff): the
// commit's own diff for a commit, else the files as they are now against
// HEAD (later writes included, which the note says).
func (c *console) receiptDiff(ctx context.Context, it harness.ReceiptItem) ([]diffLine, string) {
	a := harness.GitDiffArgs{RepoID: it.RepoID, Paths: it.Paths, MaxBytes: 64 << 10}
	note := "its files now, against HEAD"
	if it.Commit != "" {
		a.Rev, a.Paths = it.Commit+"^.."+it.Commit, nil
		note = "the commit " + short(it.Commit)
	} else if len(it.Paths) == 0 {
		return nil, ""
	}
	res, err := c.h.GitDiff(ctx, a)
	if err != nil {
		return nil, "no diff: " + err.Error()
	}
	if res.Patch == "" {
		return nil, note + ": no difference (reverted or committed since)"
	}
	if res.Truncated {
		note += " (truncated)"
	}
	return unifiedLines(res.Patch), note
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// clientView is one agent (client) on the clients page.
type clientView struct {
	Name      string
	Runs      []messages.RunState
	Active    int
	Actions   []messages.AuditEntry // newest first
	Approvals []harness.Approval    // pending
	// Score is how the runs of the client's name went (run_scorecard).
	Score *harness.ClientScore
}

// clientActions is how many recent audit entries each client shows.
const clientActions = 10

// groupClients gathers runs, audit entries (newest first) and pending
// approvals by client; "" (people, the daemon, calls without a client)
// is left out. Clients are sorted by name.
func groupClients(runs []messages.RunState, entries []messages.AuditEntry, pending []harness.Approval) []clientView {
	m := map[string]*clientView{}
	get := func(name string) *clientView {
		v := m[name]
		if v == nil {
			v = &clientView{Name: name}
			m[name] = v
		}
		return v
	}
	for _, st := range runs {
		if name := clientOf(st.Caller.Client); name != "" {
			v := get(name)
			v.Runs = append(v.Runs, st)
			if st.Status == messages.RunActive {
				v.Active++
			}
		}
	}
	for _, e := range entries {
		if e.Client != "" {
			if v := get(e.Client); len(v.Actions) < clientActions {
				v.Actions = append(v.Actions, e)
			}
		}
	}
	for _, a := range pending {
		if a.Client != "" {
			v := get(a.Client)
			v.Approvals = append(v.Approvals, a)
		}
	}
	out := make([]clientView, 0, len(m))
	for _, v := range m {
		v.Runs = liveFirst(v.Runs)
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// scoreOf is the scorecard of the client name of runs (every version).
func scoreOf(scores []harness.ClientScore, runs []messages.RunState) *harness.ClientScore {
	if len(runs) == 0 {
		return nil
	}
	for i := range scores {
		if scores[i].Client == runs[0].Caller.Client.Name {
			return &scores[i]
		}
	}
	return nil
}

// clientAudit is how many of the newest audit entries the clients page reads.
const clientAudit = 1000

// clients lists each agent (client) with its runs, its recent actions and
// its pending approvals; ?client= narrows it.
func (c *console) clients(w http.ResponseWriter, r *http.Request, ss session) {
	ctx := r.Context()
	flt, err := parseFilter(r.URL.Query(), c.now())
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	rl, err := c.h.RunList(ctx, harness.RunListArgs{Limit: ownerRuns})
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	for i := range rl.Runs {
		rl.Runs[i] = c.redactRun(ctx, rl.Runs[i])
	}
	hd, err := c.h.AuditAnchorHead(ctx, harness.AuditAnchorArgs{})
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	query := func(afterSeq uint64, limit int) ([]messages.AuditEntry, bool, error) {
		res, err := c.h.Audit(ctx, harness.AuditArgs{AfterSeq: afterSeq, Limit: limit})
		if err != nil {
			return nil, false, err
		}
		return res.Entries, res.More, nil
	}
	entries, _, err := newestFirst(query, func(e messages.AuditEntry) bool { return e.Client != "" }, hd.Anchor.Seq+1, clientAudit)
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	pending, err := c.h.Approvals(ctx, "")
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	scores, err := c.h.RunScorecard(ctx, harness.RunScorecardArgs{Limit: ownerRuns})
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	var views []clientView
	for _, v := range groupClients(rl.Runs, entries, pending.Approvals) {
		if flt.client(v.Name) {
			v.Score = scoreOf(scores.Clients, v.Runs)
			views = append(views, v)
		}
	}
	c.render(w, r, "clients", page{Title: "Agents", Nav: "clients", CSRF: ss.csrf, Filter: flt, Data: views})
}

// policy shows the policy in force: each rule with its examples.
func (c *console) policy(w http.ResponseWriter, r *http.Request, ss session) {
	info := c.h.Policy()
	c.render(w, r, "policy", page{Title: "Policy", Nav: "policy", CSRF: ss.csrf, Data: struct {
		Info  harness.PolicyInfo
		Rules []harness.PolicyRule
	}{info, c.h.PolicyRules()}})
}

// unifiedLines renders a unified diff's lines: '+' added, '-' removed,
// '@' a hunk or file header, ' ' context.
func unifiedLines(patch string) []diffLine {
	var out []diffLine
	for _, l := range strings.Split(strings.TrimSuffix(patch, "\n"), "\n") {
		kind := " "
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "diff "), strings.HasPrefix(l, "index "), strings.HasPrefix(l, "@@"):
			kind = "@"
		case strings.HasPrefix(l, "+"):
			kind = "+"
		case strings.HasPrefix(l, "-"):
			kind = "-"
		}
		if len(out) == maxDiffLines {
			out = append(out, diffLine{Kind: " ", Text: "… more lines (git_diff shows them)"})
			break
		}
		out = append(out, diffLine{Kind: kind, Text: l})
	}
	return out
}
