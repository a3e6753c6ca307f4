package console

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/textsafe"
	"github.com/harnessd/harnessd/messages"
)

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"whenp": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	// Agent-supplied text goes through one of these before html/template
	// escapes it for HTML (which leaves control, bidi and format
	// characters as they are): line for one-line places, text for <pre>
	// blocks (line breaks and tabs kept), json for an approval's exact
	// input (JSON's own escapes), argv for a command (see textsafe).
	"line": func(v any) string { return textsafe.Line(str(v)) },
	"text": func(v any) string { return textsafe.Text(str(v)) },
	"json": textsafe.JSON,
	"argv": shellQuote,
	"join": strings.Join,
	"ms":   func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"pct":  func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + "%" },
	"cpu":  cpuText,
	"size": bytesText,
	"repo": repoOf,
	"card": func(a approvalView, csrf string, repos map[string]string) cardData {
		return cardData{A: a, CSRF: csrf, Repos: repos}
	},
	"exit": func(p *int) string {
		if p == nil {
			return ""
		}
		return strconv.Itoa(*p)
	},
}

// str is the text of a template value: a string or a string type
// (errs.Code, messages.AuditKind) as it is, anything else as fmt prints it.
func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return rv.String()
	}
	return fmt.Sprint(v)
}

// shellQuote shows an argv as a person would type it, a word holding a
// control or format character as $'...' with its escapes (textsafe.Argv).
func shellQuote(argv []string) string { return textsafe.Argv(argv) }

var approvalIDRE = regexp.MustCompile(`^apr_[0-9a-f]{1,64}$`)

// approvals lists approval requests: pending by default, ?status=all for
// every one.
func (c *console) approvals(w http.ResponseWriter, r *http.Request, ss session) {
	c.approvalsPage(w, r, ss, nil)
}

// approvalsPage renders the approvals, with the results of a bulk
// decision when there are some.
func (c *console) approvalsPage(w http.ResponseWriter, r *http.Request, ss session, results []actionResult) {
	status := r.URL.Query().Get("status")
	if status != "" && status != "all" {
		status = "all"
	}
	flt, err := parseFilter(r.URL.Query(), c.now())
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	if flt.State != "" {
		status = "all" // a status filter looks beyond the pending ones
	}
	flt.All = status == "all"
	l, err := c.h.Approvals(r.Context(), status)
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	roots := c.roots(r.Context())
	flash := ""
	// The redirect after a decision says what was decided; the query is
	// the browser's, so only an approval id and a verb are echoed.
	if verb, id, _ := strings.Cut(r.URL.Query().Get("decided"), ":"); approvalIDRE.MatchString(id) {
		switch verb {
		case harness.ApprovalApproved:
			flash = id + " approved. The agent's retry with this approval_id runs it (once)."
		case harness.ApprovalDenied:
			flash = id + " denied. The agent's retry with this approval_id answers POLICY_DENIED."
		}
	}
	views := make([]approvalView, 0, len(l.Approvals))
	for _, a := range l.Approvals {
		if !flt.repo(a.RepoID, roots) || !flt.state(a.Status) || !flt.client(a.Client) || !flt.when(a.CreatedAt) {
			continue
		}
		v := approvalView{Approval: a}
		v.Diff, _ = patchDiff(a.Detail)
		views = append(views, v)
	}
	c.render(w, r, "approvals", page{Title: "Approvals", Nav: "approvals", CSRF: ss.csrf, Flash: flash, Repos: roots, Filter: flt, Results: results,
		Data: struct {
			All       bool
			Approvals []approvalView
		}{status == "all", views}})
}

// cardData is what an approval's card (parts.html) is drawn from.
type cardData struct {
	A     approvalView
	CSRF  string
	Repos map[string]string
}

// approvalView is an approval with its edits rendered as a diff (for
// operations that carry edit operations).
type approvalView struct {
	harness.Approval
	Diff []diffOp
}

// decide approves or denies one approval; the decision is recorded as
// made by "console".
func (c *console) decide(approve bool) func(http.ResponseWriter, *http.Request, session) {
	return func(w http.ResponseWriter, r *http.Request, ss session) {
		id := r.PathValue("id")
		reason := strings.TrimSpace(r.PostFormValue("reason"))
		a, err := c.h.DecideApproval(r.Context(), id, approve, "console", reason)
		if err != nil {
			c.fail(w, r, ss, err)
			return
		}
		http.Redirect(w, r, "/ui/approvals?decided="+a.Status+":"+a.ID, http.StatusSeeOther)
	}
}

// jobRow is a job on the jobs page with the client whose run started it.
type jobRow struct {
	*harness.JobResult
	Client, RunID string
}

func (c *console) jobs(w http.ResponseWriter, r *http.Request, ss session) {
	flt, err := parseFilter(r.URL.Query(), c.now())
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	a := harness.JobListArgs{Limit: 100}
	if flt.State != "" {
		a.State, a.Limit = flt.State, 1000
	}
	if flt.Active() {
		a.Limit = 1000
	}
	seen := c.listDigest(r.Context(), "jobs") // before the list: a change in between is reported
	l, err := c.h.JobList(r.Context(), a)
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	roots := c.roots(r.Context())
	owners := c.jobOwners(r.Context())
	rows := []jobRow{}
	for _, j := range l.Jobs {
		o := owners[j.JobID]
		if !flt.repo(j.RepoID, roots) || !flt.client(o.Client) || !flt.when(j.CreatedAt) {
			continue
		}
		if len(rows) == 100 {
			break
		}
		rows = append(rows, jobRow{JobResult: c.redactJob(r.Context(), j), Client: o.Client, RunID: o.RunID})
	}
	c.render(w, r, "jobs", page{Title: "Jobs", Nav: "jobs", CSRF: ss.csrf, Repos: roots, Filter: flt, Seen: seen, Data: rows})
}

func (c *console) job(w http.ResponseWriter, r *http.Request, ss session) {
	j, err := c.h.JobStatus(r.Context(), harness.JobStatusArgs{JobID: r.PathValue("id")})
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	c.render(w, r, "job", page{Title: "Job " + j.JobID, Nav: "jobs", CSRF: ss.csrf, Flash: doneFlash(r), Data: c.redactJob(r.Context(), j)})
}

// redactJob returns a copy of j with its agent-supplied text redacted:
// job_status returns the argv as the agent sent it.
func (c *console) redactJob(ctx context.Context, j *harness.JobResult) *harness.JobResult {
	out := *j
	out.Argv = make([]string, len(j.Argv))
	for i, a := range j.Argv {
		out.Argv[i] = c.h.Redact(ctx, j.RepoID, a)
	}
	out.Cwd = c.h.Redact(ctx, j.RepoID, j.Cwd)
	out.Tail = c.h.Redact(ctx, j.RepoID, j.Tail)
	out.Summary = make([]string, len(j.Summary))
	for i, s := range j.Summary {
		out.Summary[i] = c.h.Redact(ctx, j.RepoID, s)
	}
	if j.Error != nil {
		e := *j.Error
		e.Message = c.h.Redact(ctx, j.RepoID, e.Message)
		out.Error = &e
	}
	return &out
}

// redactRun redacts a run's agent-supplied text (its goal and reasons).
func (c *console) redactRun(ctx context.Context, st messages.RunState) messages.RunState {
	st.Goal = c.h.Redact(ctx, st.RepoID, st.Goal)
	st.BlockedReason = c.h.Redact(ctx, st.RepoID, st.BlockedReason)
	st.EndReason = c.h.Redact(ctx, st.RepoID, st.EndReason)
	return st
}

// logText is the part of a job log chunk to send now: all of it at the
// end of the log, else up to a UTF-8 sequence cut at its end, which the
// next read starts with. The text is escaped (textsafe.Text) before it is
// sent: a carriage return would end an event's data line (a job could
// write "\revent: end"), an escape sequence or a bidi override would show
// the person another log.
func logText(data string, eof bool) string {
	if eof {
		return data
	}
	return data[:len(data)-textsafe.Partial(data)]
}

// jobLogPoll is how often a followed job log is polled for new output
// (as the JSON API's log streaming does).
const jobLogPoll = 200 * time.Millisecond

// sseKeepAlive is how often an idle event stream sends a comment.
const sseKeepAlive = 15 * time.Second

// sseWriter writes Server-Sent Events.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, f: f}
}

// event writes one event; data may hold newlines (one data line each).
func (s *sseWriter) event(name, id, data string) error {
	var b strings.Builder
	b.WriteString("event: " + name + "\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	for _, line := range strings.Split(data, "\n") {
		b.WriteString("data: " + strings.TrimSuffix(line, "\r") + "\n")
	}
	b.WriteString("\n")
	if _, err := s.w.Write([]byte(b.String())); err != nil {
		return err
	}
	if s.f != nil {
		s.f.Flush()
	}
	return nil
}

func (s *sseWriter) comment(text string) error {
	if _, err := s.w.Write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	if s.f != nil {
		s.f.Flush()
	}
	return nil
}

// jobEvents streams a job's stdout and stderr as "stdout" and "stderr"
// events (the redacted log, read with job_logs as GET /v1/jobs/{id}/logs
// does) and ends with a "end" event carrying the final state. Each
// event's id is "<stdout offset>,<stderr offset>", so a reconnecting
// EventSource (Last-Event-ID) resumes where it was.
func (c *console) jobEvents(w http.ResponseWriter, r *http.Request, _ session) {
	id := r.PathValue("id")
	ctx := r.Context()
	var off [2]int64
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		a, b, _ := strings.Cut(last, ",")
		off[0], _ = strconv.ParseInt(a, 10, 64)
		off[1], _ = strconv.ParseInt(b, 10, 64)
		off[0], off[1] = max(off[0], 0), max(off[1], 0)
	}
	streams := [2]string{"stdout", "stderr"}
	read := func(i int) (*harness.JobLogsResult, error) {
		return c.h.JobLogs(ctx, harness.JobLogsArgs{JobID: id, Stream: streams[i], Offset: off[i]})
	}
	if _, err := read(0); err != nil {
		e := errs.From(err)
		http.Error(w, string(e.Code)+": "+e.Message, statusOf(e.Code))
		return
	}
	sse := startSSE(w)
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	for {
		progressed, eof := false, true
		state := ""
		for i := range streams {
			res, err := read(i)
			if err != nil {
				if ctx.Err() == nil && errs.CodeOf(err) != errs.Unavailable {
					_ = sse.event("failure", "", textsafe.Line(err.Error()))
				}
				return
			}
			state = res.State
			if data := logText(res.Data, res.EOF); data != "" {
				off[i] = res.NextOffset - int64(len(res.Data)-len(data))
				progressed = true
				if sse.event(streams[i], fmt.Sprintf("%d,%d", off[0], off[1]), textsafe.Text(data)) != nil {
					return
				}
			}
			eof = eof && res.EOF
		}
		if eof {
			_ = sse.event("end", "", state)
			return
		}
		if progressed {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-keep.C:
			if sse.comment("keep-alive") != nil {
				return
			}
		case <-time.After(jobLogPoll):
		}
	}
}

func (c *console) runs(w http.ResponseWriter, r *http.Request, ss session) {
	flt, err := parseFilter(r.URL.Query(), c.now())
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	a := harness.RunListArgs{Limit: 100, Status: flt.State}
	if flt.Active() {
		a.Limit = 1000
	}
	seen := c.listDigest(r.Context(), "runs") // before the list: a change in between is reported
	l, err := c.h.RunList(r.Context(), a)
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	roots := c.roots(r.Context())
	runs := []messages.RunState{}
	for _, st := range liveFirst(l.Runs) {
		if !flt.repo(st.RepoID, roots) || !flt.client(clientOf(st.Caller.Client)) || !flt.when(st.StartedAt) {
			continue
		}
		if len(runs) == 100 {
			break
		}
		runs = append(runs, c.redactRun(r.Context(), st))
	}
	c.render(w, r, "runs", page{Title: "Runs", Nav: "runs", CSRF: ss.csrf, Flash: doneFlash(r), Repos: roots, Filter: flt, Seen: seen, Data: runs})
}

// timelineRow is one span on a run's timeline, placed in percent of the
// run's span window.
type timelineRow struct {
	messages.RunSpan
	Offset, Width float64 // percent
	OffsetMs      float64
}

// timeline places spans on a common axis, oldest first.
func timeline(spans []messages.RunSpan) (rows []timelineRow, windowMs float64) {
	if len(spans) == 0 {
		return nil, 0
	}
	sorted := append([]messages.RunSpan(nil), spans...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Start.Before(sorted[j].Start) })
	t0 := sorted[0].Start
	end := t0
	for _, s := range sorted {
		if e := s.Start.Add(time.Duration(s.DurationMs * float64(time.Millisecond))); e.After(end) {
			end = e
		}
	}
	windowMs = float64(end.Sub(t0)) / float64(time.Millisecond)
	for _, s := range sorted {
		off := float64(s.Start.Sub(t0)) / float64(time.Millisecond)
		row := timelineRow{RunSpan: s, OffsetMs: off, Offset: 0, Width: 100}
		if windowMs > 0 {
			row.Offset = 100 * off / windowMs
			row.Width = 100 * s.DurationMs / windowMs
		}
		row.Width = max(row.Width, 0.4)
		row.Offset = min(row.Offset, 100-row.Width)
		rows = append(rows, row)
	}
	return rows, windowMs
}

func (c *console) run(w http.ResponseWriter, r *http.Request, ss session) {
	ctx := r.Context()
	st, err := c.h.RunStatus(ctx, harness.RunStatusArgs{RunID: r.PathValue("id"), IncludeSpans: true})
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	st.RunState = c.redactRun(ctx, st.RunState)
	for i := range st.Observations {
		st.Observations[i].Text = c.h.Redact(ctx, st.RepoID, st.Observations[i].Text)
	}
	rows, window := timeline(st.Spans)
	d, err := c.runDetails(ctx, st.RunID, st.Jobs)
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	c.render(w, r, "run", page{Title: "Run " + st.RunID, Nav: "runs", CSRF: ss.csrf, Flash: doneFlash(r), Data: struct {
		Run      *harness.RunStateResult
		Rows     []timelineRow
		WindowMs float64
		runDetails
	}{st, rows, window, d}})
}

// runEvents tells the run's page that the run changed (a span, a stage, a
// state): an "update" event the page answers by reloading itself, until
// the run ends.
func (c *console) runEvents(w http.ResponseWriter, r *http.Request, _ session) {
	id := r.PathValue("id")
	ctx := r.Context()
	evs := make(chan messages.RunEvent, 64)
	cancel := c.h.SubscribeRuns(func(ev messages.RunEvent) {
		if ev.RunID != id {
			return
		}
		select {
		case evs <- ev:
		default: // the page reloads anyway
		}
	})
	defer cancel()
	st, err := c.h.RunStatus(ctx, harness.RunStatusArgs{RunID: id})
	if err != nil {
		e := errs.From(err)
		http.Error(w, string(e.Code)+": "+e.Message, statusOf(e.Code))
		return
	}
	sse := startSSE(w)
	if st.Status != messages.RunActive {
		_ = sse.event("end", "", st.Status)
		return
	}
	if sse.comment("watching "+id) != nil {
		return
	}
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-keep.C:
			if sse.comment("keep-alive") != nil {
				return
			}
		case ev := <-evs:
			if sse.event("update", "", ev.Type) != nil {
				return
			}
			if ev.Type == "end" || (ev.State != nil && ev.State.Status != messages.RunActive) {
				return
			}
		}
	}
}

// auditPage is the audit page's data.
type auditPage struct {
	Entries []messages.AuditEntry
	More    bool
	// NextSeq is the cursor of the next page: after_seq oldest first,
	// before_seq newest first.
	NextSeq  uint64
	Oldest   bool // oldest first (?order=oldest)
	Kind     string
	Query    string // the filter's query string, for the next page's link
	Filter   filter
	Repos    map[string]string
	Verify   *harness.AuditVerifyResult
	Verified bool
}

// auditLimit is the entries per audit page.
const auditLimit = 200

func (c *console) auditEntries(ctx context.Context, r *http.Request) (auditPage, error) {
	q := r.URL.Query()
	flt, err := parseFilter(q, c.now())
	if err != nil {
		return auditPage{}, err
	}
	cursor := func(name string) (uint64, error) {
		v := q.Get(name)
		if v == "" {
			return 0, nil
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, errs.New(errs.InvalidArgument, "%s %q is not a number: use the page's own links", name, v).With("field", name)
		}
		return n, nil
	}
	after, err := cursor("after_seq")
	if err != nil {
		return auditPage{}, err
	}
	before, err := cursor("before_seq")
	if err != nil {
		return auditPage{}, err
	}
	kind := q.Get("kind")
	roots := c.roots(ctx)
	keep := func(e messages.AuditEntry) bool {
		return flt.repo(e.RepoID, roots) && flt.state(e.Outcome) && flt.client(e.Client) && flt.when(e.Time)
	}
	query := func(afterSeq uint64, limit int) ([]messages.AuditEntry, bool, error) {
		res, err := c.h.Audit(ctx, harness.AuditArgs{Kind: kind, Since: flt.Since, AfterSeq: afterSeq, Limit: limit})
		if err != nil {
			return nil, false, err
		}
		return res.Entries, res.More, nil
	}
	p := auditPage{Kind: kind, Oldest: q.Get("order") == "oldest", Query: filterQuery(q), Filter: flt, Repos: roots}
	if p.Oldest {
		// Oldest first: the log as it is stored, filtered.
		p.Entries, p.More, p.NextSeq, err = oldestFirst(query, keep, after, auditLimit)
		return p, err
	}
	hd, err := c.h.AuditAnchorHead(ctx, harness.AuditAnchorArgs{})
	if err != nil {
		return auditPage{}, err
	}
	if before == 0 || before > hd.Anchor.Seq+1 {
		before = hd.Anchor.Seq + 1
	}
	p.Entries, p.More, err = newestFirst(query, keep, before, auditLimit)
	if err != nil {
		return auditPage{}, err
	}
	if n := len(p.Entries); n > 0 {
		p.NextSeq = p.Entries[n-1].Seq
	}
	return p, nil
}

func (c *console) audit(w http.ResponseWriter, r *http.Request, ss session) {
	p, err := c.auditEntries(r.Context(), r)
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	c.render(w, r, "audit", page{Title: "Audit log", Nav: "audit", CSRF: ss.csrf, Filter: p.Filter, Repos: p.Repos, Data: p})
}

func (c *console) auditVerify(w http.ResponseWriter, r *http.Request, ss session) {
	v, err := c.h.AuditVerify(r.Context())
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	p, err := c.auditEntries(r.Context(), r)
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	p.Verify, p.Verified = v, true
	c.render(w, r, "audit", page{Title: "Audit log", Nav: "audit", CSRF: ss.csrf, Filter: p.Filter, Repos: p.Repos, Data: p})
}

// statusPage is the status page's data.
type statusPage struct {
	St     *harness.StatusResult
	Leases []harness.DurableLease
	Jobs   []kv
}

// kv is one figure of a component's statistics.
type kv struct{ Key, Value string }

func (c *console) status(w http.ResponseWriter, r *http.Request, ss session) {
	st, err := c.h.Status(r.Context())
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	p := statusPage{St: st}
	if l, ok := st.Extra["durable_leases"].([]harness.DurableLease); ok {
		p.Leases = l
	}
	if j, ok := st.Extra["jobs"]; ok {
		var m map[string]any
		if b, err := json.Marshal(j); err == nil && json.Unmarshal(b, &m) == nil {
			for k, v := range m {
				p.Jobs = append(p.Jobs, kv{k, fmt.Sprint(v)})
			}
			sort.Slice(p.Jobs, func(a, b int) bool { return p.Jobs[a].Key < p.Jobs[b].Key })
		}
	}
	c.render(w, r, "status", page{Title: "Status", Nav: "status", CSRF: ss.csrf, Data: p})
}
