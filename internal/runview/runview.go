// Package runview renders harnessd runs for people: a run's span tree in
// the manner of `git log --graph` (Tree), one-line forms for following a
// run as it happens (Line, Note, Changes, Summary), the table of runs
// (List), and in plain sentences why a run is blocked, what failed and
// what to do about it (Explain, explain.go).
//
// Everything here is a pure function of messages values; the only I/O is
// the io.Writer a caller passes. Times are shown in time.Local.
package runview

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/harnessd/harnessd/messages"
)

// Options tunes Tree.
type Options struct {
	// Color adds ANSI colors. Callers set it only for a terminal (and not
	// when NO_COLOR is set): escapes in a pipe or a file are noise.
	Color bool
	// Now ends the duration of an active run; zero leaves it out.
	Now time.Time
	// DroppedSpans is how many spans fell out of the run's bounded ring;
	// the header says so, since their children then render at top level.
	DroppedSpans int64
}

// Formats of times: spans and notes to the millisecond (they come in
// bursts), the run's own moments to the second or with their date.
const (
	clock  = "15:04:05.000"
	second = "15:04:05"
	stamp  = "2006-01-02 15:04:05"
)

// Tree writes the header of st and the tree of its spans, one line per
// span, children one graph column under their parent in start order, with
// the run's observations interleaved by time. A span whose parent is not
// among spans (the ring dropped it) renders at top level.
func Tree(w io.Writer, st messages.RunState, spans []messages.RunSpan, o Options) error {
	p := palette(o.Color)
	var b strings.Builder
	header(&b, p, st, o)
	b.WriteByte('\n')

	lines := flatten(spans)
	obs := sortedObservations(st.Observations)
	if len(lines) == 0 && len(obs) == 0 {
		if st.Status == messages.RunActive {
			b.WriteString(p.dim("(no spans yet)") + "\n")
		} else {
			b.WriteString(p.dim("(no spans)") + "\n")
		}
		_, err := io.WriteString(w, b.String())
		return err
	}

	// Column widths over every span line, so that the columns after the
	// graph line up however deep a span sits.
	maxDepth, opW, outW, durW := 0, 0, 0, 0
	rows := make([]row, len(lines))
	for i, l := range lines {
		rows[i] = rowOf(l.span)
		maxDepth = max(maxDepth, l.depth)
		opW = max(opW, utf8.RuneCountInString(rows[i].op))
		outW = max(outW, utf8.RuneCountInString(rows[i].outcome))
		durW = max(durW, len(rows[i].dur))
	}
	graphW := 2*maxDepth + 1

	oi := 0
	writeNotes := func(before time.Time, depth int, all bool) {
		for ; oi < len(obs) && (all || obs[oi].At.Before(before)); oi++ {
			noteLine(&b, p, obs[oi], strings.Repeat("| ", depth), graphW)
		}
	}
	for i, l := range lines {
		// An observation goes before the first span that started after it,
		// inside the graph columns that continue through that span.
		writeNotes(l.span.Start, l.depth, false)
		r := rows[i]
		star := "*"
		if r.failed {
			star = p.red("*")
		}
		graph := p.dim(strings.Repeat("| ", l.depth)) + star + strings.Repeat(" ", graphW-2*l.depth-1)
		outcome := pad(r.outcome, outW)
		if r.failed {
			outcome = p.red(outcome)
		} else {
			outcome = p.green(outcome)
		}
		fmt.Fprintf(&b, "%s %s  %s  %s  %s", graph, p.dim(r.at), pad(r.op, opW), outcome,
			strings.Repeat(" ", durW-len(r.dur))+r.dur)
		extras := r.extras
		if l.orphan {
			extras = append(extras, "parent "+clean(l.span.ParentID)+" not kept")
		}
		for _, e := range extras {
			b.WriteString("  " + p.cyan(e))
		}
		b.WriteByte('\n')
	}
	writeNotes(time.Time{}, 0, true)
	_, err := io.WriteString(w, b.String())
	return err
}

// header writes the run's fields, one "label value" line each, leaving out
// the empty ones.
func header(b *strings.Builder, p palette, st messages.RunState, o Options) {
	field := func(label, value string) {
		if value != "" {
			fmt.Fprintf(b, "%s %s\n", p.dim(pad(label, 9)), value)
		}
	}
	id := p.bold(clean(st.RunID))
	if st.Implicit {
		id += " (implicit)"
	}
	field("run", id)
	status := p.status(st.Status, clean(st.Status))
	if st.EndReason != "" {
		status += ": " + clean(st.EndReason)
	}
	field("status", status)
	field("goal", clean(st.Goal))
	field("workflow", clean(st.WorkflowClass))
	field("client", clientOf(st.Caller.Client))
	field("session", clean(st.Caller.Session))
	field("repo", clean(st.RepoID))
	field("parent", clean(st.ParentRunID))
	if !st.StartedAt.IsZero() {
		field("started", st.StartedAt.Local().Format(stamp+".000"))
	}
	field("duration", runDuration(st, o.Now))
	if st.Status == messages.RunActive && !st.DetachedAt.IsZero() {
		field("detached", "since "+st.DetachedAt.Local().Format(second)+" (its client went away; run_resume binds it again)")
	}
	field("counters", counters(st.Counters, true))
	if st.Drawn != (messages.RunCounters{}) && st.Drawn != st.Counters {
		field("drawn", counters(st.Drawn, false)+" (with child runs)")
	}
	field("budget", budget(p, st))
	field("stages", stages(st))
	if st.Blocked {
		reason := clean(st.BlockedReason)
		if reason == "" {
			reason = "yes"
		}
		field("blocked", p.red(reason))
	}
	if len(st.Jobs) > 0 {
		field("jobs", clean(strings.Join(st.Jobs, ", ")))
	}
	if o.DroppedSpans > 0 {
		field("dropped", fmt.Sprintf("%d read-only span(s) fell out of the run's ring", o.DroppedSpans))
	}
}

// runDuration is how long the run took, or has taken so far at now.
func runDuration(st messages.RunState, now time.Time) string {
	switch {
	case st.StartedAt.IsZero():
		return ""
	case st.Status != messages.RunActive && !st.EndedAt.IsZero():
		return human(st.EndedAt.Sub(st.StartedAt))
	case st.Status == messages.RunActive && !now.IsZero():
		return human(now.Sub(st.StartedAt)) + " so far"
	}
	return ""
}

// counters is the k=v line of c; zeros are left out but for calls.
func counters(c messages.RunCounters, withCalls bool) string {
	var parts []string
	add := func(k string, v int64) {
		if v != 0 {
			parts = append(parts, k+"="+strconv.FormatInt(v, 10))
		}
	}
	if withCalls {
		parts = append(parts, "calls="+strconv.FormatInt(c.Calls, 10))
	} else {
		add("calls", c.Calls)
	}
	add("reads", c.Reads)
	add("commands", c.Commands)
	add("mutations", c.Mutations)
	add("jobs", c.Jobs)
	add("checks", c.Checks)
	if c.OutputBytes != 0 {
		parts = append(parts, "output="+bytesOf(c.OutputBytes))
	}
	add("approvals", c.Approvals)
	add("failures", c.Failures)
	add("observations", c.Observations)
	return strings.Join(parts, " ")
}

// budget is used/limit for every limit of the run, red once reached.
func budget(p palette, st messages.RunState) string {
	bu := st.Budget
	if bu == (messages.RunBudget{}) {
		return ""
	}
	// Drawn holds the children's draws too, when the run has any.
	used := func(own, drawn int64) int64 { return max(own, drawn) }
	c, d := st.Counters, st.Drawn
	var parts []string
	add := func(k string, u, limit int64, f func(int64) string) {
		if limit == 0 {
			return
		}
		s := k + "=" + f(u) + "/" + f(limit)
		if u >= limit {
			s = p.red(s)
		}
		parts = append(parts, s)
	}
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	add("commands", used(c.Commands, d.Commands), bu.Commands, num)
	add("mutations", used(c.Mutations, d.Mutations), bu.Mutations, num)
	add("jobs", used(c.Jobs, d.Jobs), bu.Jobs, num)
	add("output", used(c.OutputBytes, d.OutputBytes), bu.OutputBytes, bytesOf)
	add("approvals", used(c.Approvals, d.Approvals), bu.Approvals, num)
	if bu.WallS > 0 {
		s := "wall=" + human(time.Duration(bu.WallS)*time.Second)
		if !st.Deadline.IsZero() {
			s += " (deadline " + st.Deadline.Local().Format(second) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func stages(st messages.RunState) string {
	var parts []string
	if len(st.CompletedStages) > 0 {
		parts = append(parts, "completed "+clean(strings.Join(st.CompletedStages, ", ")))
	}
	if st.CurrentStage != "" {
		parts = append(parts, "current "+clean(st.CurrentStage))
	}
	return strings.Join(parts, "; ")
}

// spanLine is a span placed in the tree.
type spanLine struct {
	span  *messages.RunSpan
	depth int
	// orphan: the span names a parent that is not in the list.
	orphan bool
}

// flatten orders spans depth first, children under their parent, siblings
// by start. Run spans (the root) are the header's business; operations
// under them are top level.
func flatten(spans []messages.RunSpan) []spanLine {
	byID := make(map[string]int, len(spans))
	roots := make(map[string]bool)
	for i := range spans {
		s := &spans[i]
		if s.Kind == messages.SpanRun {
			roots[s.SpanID] = true
			continue
		}
		if _, dup := byID[s.SpanID]; !dup && s.SpanID != "" {
			byID[s.SpanID] = i
		}
	}
	kids := make(map[int][]int)
	var top []int
	orphan := make(map[int]bool)
	for i := range spans {
		s := &spans[i]
		if s.Kind == messages.SpanRun {
			continue
		}
		parent, ok := byID[s.ParentID]
		switch {
		case s.ParentID == "" || roots[s.ParentID] || (ok && parent == i):
			top = append(top, i)
		case !ok:
			top = append(top, i)
			orphan[i] = true
		default:
			kids[parent] = append(kids[parent], i)
		}
	}
	byStart := func(ix []int) {
		sort.SliceStable(ix, func(a, b int) bool { return spans[ix[a]].Start.Before(spans[ix[b]].Start) })
	}
	byStart(top)
	var out []spanLine
	seen := make(map[int]bool, len(spans))
	var walk func(i, depth int)
	walk = func(i, depth int) {
		if seen[i] {
			return
		}
		seen[i] = true
		out = append(out, spanLine{span: &spans[i], depth: depth, orphan: orphan[i]})
		k := kids[i]
		byStart(k)
		for _, c := range k {
			walk(c, depth+1)
		}
	}
	for _, i := range top {
		walk(i, 0)
	}
	// Spans in a parent cycle are reachable from no root: show them at top
	// level rather than lose them.
	var rest []int
	for i := range spans {
		if spans[i].Kind != messages.SpanRun && !seen[i] {
			rest = append(rest, i)
		}
	}
	byStart(rest)
	for _, i := range rest {
		walk(i, 0)
	}
	return out
}

// row is the text of a span's columns.
type row struct {
	at, op, outcome, dur string
	extras               []string
	failed               bool
}

func rowOf(s *messages.RunSpan) row {
	r := row{at: s.Start.Local().Format(clock), op: clean(s.Op), dur: Duration(s.DurationMs)}
	switch {
	case s.Outcome == "ok":
		r.outcome = "ok"
	case s.ErrorCode != "":
		r.outcome, r.failed = clean(s.ErrorCode), true
	case s.Outcome == "":
		r.outcome = "-"
	default:
		r.outcome, r.failed = clean(s.Outcome), true
	}
	if r.op == "" {
		r.op = "?"
	}
	if s.Route != "" && s.Route != "fast" {
		r.extras = append(r.extras, "route "+clean(s.Route))
	}
	if s.Decision != "" && s.Decision != "allow" {
		r.extras = append(r.extras, "decision "+clean(s.Decision))
	}
	for _, id := range [...][2]string{{"receipt", s.ReceiptID}, {"job", s.JobID}, {"check", s.CheckID}, {"approval", s.ApprovalID}} {
		if id[1] != "" {
			r.extras = append(r.extras, id[0]+" "+clean(id[1]))
		}
	}
	return r
}

func sortedObservations(obs []messages.RunObservation) []messages.RunObservation {
	out := append([]messages.RunObservation(nil), obs...)
	sort.SliceStable(out, func(a, b int) bool { return out[a].At.Before(out[b].At) })
	return out
}

// noteLine writes an observation under the graph columns graph, its text
// lines starting where the spans' times do.
func noteLine(b *strings.Builder, p palette, o messages.RunObservation, graph string, graphW int) {
	lead := p.dim(graph) + strings.Repeat(" ", graphW-len(graph)) + " "
	text := strings.Split(cleanLines(o.Text), "\n")
	fmt.Fprintf(b, "%s%s %s %s\n", lead, p.yellow("~ note"), p.cyan(tag(o)), text[0])
	for _, t := range text[1:] {
		fmt.Fprintf(b, "%s  %s\n", lead, t)
	}
}

func tag(o messages.RunObservation) string {
	return "[" + clean(o.Source) + "/" + clean(o.Kind) + "]"
}

// Line is the one-line form of a span for following a run: time of day,
// operation (marked when nested), outcome, duration, route, ids.
func Line(s messages.RunSpan) string {
	r := rowOf(&s)
	op := r.op
	if s.ParentID != "" {
		op = "↳ " + op
	}
	parts := append([]string{r.at, pad(op, 18), r.outcome, r.dur}, r.extras...)
	return strings.Join(parts, "  ")
}

// Note is the one-line form of an observation for following a run.
func Note(o messages.RunObservation) string {
	text := strings.ReplaceAll(cleanLines(o.Text), "\n", " ↵ ")
	return o.At.Local().Format(clock) + "  ~ note " + tag(o) + " " + text
}

// Changes are the lines worth showing when a run's state goes from prev to
// next while following it: stages started and completed, blocked and
// unblocked. Counters moving are not news; the spans say it.
func Changes(prev, next messages.RunState) []string {
	at := next.UpdatedAt.Local().Format(clock) + "  > "
	var out []string
	done := make(map[string]bool, len(prev.CompletedStages))
	for _, s := range prev.CompletedStages {
		done[s] = true
	}
	for _, s := range next.CompletedStages {
		if !done[s] {
			out = append(out, at+"stage "+clean(s)+" completed")
		}
	}
	if next.CurrentStage != "" && next.CurrentStage != prev.CurrentStage {
		out = append(out, at+"stage "+clean(next.CurrentStage)+" started")
	}
	switch {
	case next.Blocked && (!prev.Blocked || next.BlockedReason != prev.BlockedReason):
		reason := clean(next.BlockedReason)
		if reason == "" {
			reason = "no reason given"
		}
		out = append(out, at+"blocked: "+reason)
	case prev.Blocked && !next.Blocked:
		out = append(out, at+"unblocked")
	}
	return out
}

// Summary is the closing line of a run: its status, how long it took and
// what it did.
func Summary(st messages.RunState, now time.Time) string {
	s := "run " + clean(st.RunID) + " " + clean(st.Status)
	if st.EndReason != "" {
		s += " (" + clean(st.EndReason) + ")"
	}
	switch d := runDuration(st, now); {
	case d == "":
	case st.Status == messages.RunActive:
		s += ", " + d
	default:
		s += " after " + d
	}
	return s + ": " + counters(st.Counters, true)
}

// List writes runs as a table: RUN, STATUS, CLIENT, GOAL, CALLS, STARTED,
// DURATION (so far, for an active run, at now).
func List(w io.Writer, runs []messages.RunState, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tCLIENT\tGOAL\tCALLS\tSTARTED\tDURATION")
	for _, r := range runs {
		status := clean(r.Status)
		if r.Status == messages.RunActive && r.Blocked {
			status = "blocked"
		}
		goal := clip(clean(r.Goal), 40)
		if goal == "" && r.Implicit {
			goal = "(implicit)"
		}
		started := "-"
		if !r.StartedAt.IsZero() {
			// The date only when it is not today's.
			t := r.StartedAt.Local()
			started = t.Format("2006-01-02 15:04")
			if y, m, d := t.Date(); !now.IsZero() {
				if ny, nm, nd := now.Local().Date(); ny == y && nm == m && nd == d {
					started = t.Format(second)
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", clean(r.RunID), status, dash(clientOf(r.Caller.Client)),
			dash(goal), r.Counters.Calls, started, dash(runDuration(r, now)))
	}
	return tw.Flush()
}

// Duration is a span's duration in milliseconds for people: 0.06ms, 26ms,
// 1.4s, 2m03s.
func Duration(ms float64) string {
	switch {
	case ms < 0:
		return "-"
	case ms == 0:
		return "0ms"
	case ms < 0.01:
		return "<0.01ms"
	case ms < 1:
		return strconv.FormatFloat(ms, 'g', 2, 64) + "ms"
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 1, 64) + "ms"
	}
	return human(time.Duration(ms * float64(time.Millisecond)))
}

// human renders d at the precision people read it: ms, tenths of seconds,
// then minutes and seconds, hours and minutes.
func human(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute-50*time.Millisecond: // 59.96s would print as 60.0s
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

func bytesOf(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + "B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func clientOf(c messages.Client) string {
	return strings.TrimSpace(clean(c.Name) + " " + clean(c.Version))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// pad right-pads s with spaces to n runes.
func pad(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

// clip shortens s to n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// clean replaces control characters: goals, observations and operation
// names come from agents and must not drive the terminal (escape
// sequences, bidi overrides) or break the layout (newlines, tabs).
func clean(s string) string {
	if strings.IndexFunc(s, hazardous) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case hazardous(r):
			return '?'
		}
		return r
	}, s)
}

func hazardous(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }

// cleanLines is clean keeping line breaks (observations may span lines).
func cleanLines(s string) string {
	lines := strings.Split(strings.ReplaceAll(strings.TrimRight(s, "\r\n"), "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = clean(l)
	}
	return strings.Join(lines, "\n")
}

// palette paints text with ANSI SGR codes when true.
type palette bool

func (p palette) paint(code, s string) string {
	if !p || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) bold(s string) string   { return p.paint("1", s) }
func (p palette) dim(s string) string    { return p.paint("2", s) }
func (p palette) red(s string) string    { return p.paint("31", s) }
func (p palette) green(s string) string  { return p.paint("32", s) }
func (p palette) yellow(s string) string { return p.paint("33", s) }
func (p palette) cyan(s string) string   { return p.paint("36", s) }

// status paints text by the run status it names.
func (p palette) status(status, text string) string {
	switch status {
	case messages.RunActive:
		return p.yellow(text)
	case messages.RunEnded:
		return p.green(text)
	}
	return p.red(text)
}
