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
	status := r.URL.Query().Get("status")
	if status != "" && status != "all" {
		status = "all"
	}
	l, err := c.h.Approvals(r.Context(), status)
	if err != nil {
		c.fail(w, ss, err)
		return
	}
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
	views := make([]approvalView, len(l.Approvals))
	for i, a := range l.Approvals {
		views[i].Approval = a
		views[i].Diff, _ = patchDiff(a.Detail)
	}
	c.render(w, "approvals", page{Title: "Approvals", Nav: "approvals", CSRF: ss.csrf, Flash: flash,
		Data: struct {
			All       bool
			Approvals []approvalView
		}{status == "all", views}})
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
			c.fail(w, ss, err)
			return
		}
		http.Redirect(w, r, "/ui/approvals?decided="+a.Status+":"+a.ID, http.StatusSeeOther)
	}
}

func (c *console) jobs(w http.ResponseWriter, r *http.Request, ss session) {
	l, err := c.h.JobList(r.Context(), harness.JobListArgs{Limit: 100})
	if err != nil {
		c.fail(w, ss, err)
		return
	}
	for i, j := range l.Jobs {
		l.Jobs[i] = c.redactJob(r.Context(), j)
	}
	c.render(w, "jobs", page{Title: "Jobs", Nav: "jobs", CSRF: ss.csrf, Data: l.Jobs})
}

func (c *console) job(w http.ResponseWriter, r *http.Request, ss session) {
	j, err := c.h.JobStatus(r.Context(), harness.JobStatusArgs{JobID: r.PathValue("id")})
	if err != nil {
		c.fail(w, ss, err)
		return
	}
	c.render(w, "job", page{Title: "Job " + j.JobID, Nav: "jobs", CSRF: ss.csrf, Data: c.redactJob(r.Context(), j)})
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
	l, err := c.h.RunList(r.Context(), harness.RunListArgs{Limit: 100})
	if err != nil {
		c.fail(w, ss, err)
		return
	}
	for i := range l.Runs {
		l.Runs[i] = c.redactRun(r.Context(), l.Runs[i])
	}
	c.render(w, "runs", page{Title: "Runs", Nav: "runs", CSRF: ss.csrf, Data: l.Runs})
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
	st, err := c.h.RunStatus(r.Context(), harness.RunStatusArgs{RunID: r.PathValue("id"), IncludeSpans: true})
	if err != nil {
		c.fail(w, ss, err)
		return
	}
	st.RunState = c.redactRun(r.Context(), st.RunState)
	rows, window := timeline(st.Spans)
	c.render(w, "run", page{Title: "Run " + st.RunID, Nav: "runs", CSRF: ss.csrf, Data: struct {
		Run      *harness.RunStateResult
		Rows     []timelineRow
		WindowMs float64
	}{st, rows, window}})
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
	Entries  []messages.AuditEntry
	More     bool
	NextSeq  uint64
	Kind     string
	Verify   *harness.AuditVerifyResult
	Verified bool
}

func (c *console) auditEntries(ctx context.Context, r *http.Request) (auditPage, error) {
	q := r.URL.Query()
	a := harness.AuditArgs{Kind: q.Get("kind"), Limit: 200}
	if v := q.Get("after_seq"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return auditPage{}, errs.New(errs.InvalidArgument, "after_seq %q is not a number", v)
		}
		a.AfterSeq = n
	}
	res, err := c.h.Audit(ctx, a)
	if err != nil {
		return auditPage{}, err
	}
	p := auditPage{Entries: res.Entries, More: res.More, Kind: a.Kind}
	if n := len(res.Entries); n > 0 {
		p.NextSeq = res.Entries[n-1].Seq
	}
	return p, nil
}

func (c *console) audit(w http.ResponseWriter, r *http.Request, ss session) {
	p, err := c.auditEntries(r.Context(), r)
	if err != nil {
		c.fail(w, ss, err)
		return
	}
	c.render(w, "audit", page{Title: "Audit log", Nav: "audit", CSRF: ss.csrf, Data: p})
}

func (c *console) auditVerify(w http.ResponseWriter, r *http.Request, ss session) {
	v, err := c.h.AuditVerify(r.Context())
	if err != nil {
		c.fail(w, ss, err)
		return
	}
	p, err := c.auditEntries(r.Context(), r)
	if err != nil {
		c.fail(w, ss, err)
		return
	}
	p.Verify, p.Verified = v, true
	c.render(w, "audit", page{Title: "Audit log", Nav: "audit", CSRF: ss.csrf, Data: p})
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
		c.fail(w, ss, err)
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
	c.render(w, "status", page{Title: "Status", Nav: "status", CSRF: ss.csrf, Data: p})
}
