package ctxasm

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/harnessd/harnessd/messages"
)

// Part kinds.
const (
	KindRunState    = "run_state"
	KindState       = "state"
	KindRule        = "rule"
	KindDoc         = "doc"
	KindEvent       = "event"
	KindObservation = "observation"
)

// Priorities of parts: lower is taken first.
const (
	priRunState = iota
	priFailure
	priState
	priRule
	priEvent
	priObservation
	priDoc
	priDocsIndex
)

// Part is one piece of the assembled context.
type Part struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Source string `json:"source,omitempty"`
	Title  string `json:"title"`
	Text   string `json:"text"`
	Tokens int    `json:"tokens"`
	// Why says why the part was chosen.
	Why        string   `json:"why,omitempty"`
	Globs      []string `json:"globs,omitempty"`
	Summarised bool     `json:"summarised,omitempty"`

	pri   int
	order int
	tk    TextKind
	stale string // why the part is stale; "" = fresh
}

// Request is what the context is assembled for.
type Request struct {
	// Command is the operation the agent is about to call ("" = none).
	Command string
	// Op is what Command's descriptor says (harness/op.Spec): the zero
	// value for no command or one the registry does not know.
	Op OpFacts
	// Argv is the command's argv (run_command, run_check, job_start).
	Argv []string
	// Paths are the paths the command names.
	Paths []string
	// Stage is the run's current stage.
	Stage string
	// Run is the run's state, Spans its spans (nil without a run).
	Run   *messages.RunState
	Spans []messages.RunSpan
	// Events are the repository's recent events when there is no run
	// (receipts, approvals, failures of its runs), in the order to show.
	Events []Event
	// Budget is the token budget (0 = DefaultBudget).
	Budget int
	// Redact removes known secrets from a text (nil = none).
	Redact func(string) string
}

// OpFacts are what the assembly reads of an operation's descriptor
// (harness/op.Spec): ctxasm knows no operation by name.
type OpFacts struct {
	// Topics are the rule topics the operation touches (see Topics): its
	// rules are chosen by them.
	Topics []string
	// ChangesCheckout says the operation changes the checkout (or prepares
	// a change to it): CONTRIBUTING.md applies to it.
	ChangesCheckout bool
	// NoRepo says the operation touches no repository: asking for context
	// before it is trivial chat.
	NoRepo bool
}

// Event is one recent event to show: a failure, receipt, escalation or
// approval.
type Event struct {
	Kind string // failure, receipt, escalation, approval
	ID   string
	Text string
}

// Topics rules are chosen by.
var topicWords = map[string]string{
	"test": "test", "tests": "test", "testing": "test", "check": "test", "checks": "test", "ci": "test", "verify": "test", "verification": "test",
	"commit": "commit", "commits": "commit", "git": "commit", "pr": "commit", "prs": "commit", "review": "commit", "reviews": "commit",
	"changelog": "commit", "release": "commit", "releases": "commit", "branch": "commit", "branches": "commit",
	"style": "style", "lint": "style", "linting": "style", "format": "style", "formatting": "style", "naming": "style", "conventions": "style",
	"build": "build", "building": "build", "make": "build", "makefile": "build", "dependencies": "build", "deps": "build", "install": "build", "setup": "build",
	"security": "security", "secret": "security", "secrets": "security",
	"docs": "docs", "documentation": "docs",
}

// Topics returns the rule topics, sorted: the values an operation's
// descriptor may name in OpFacts.Topics.
func Topics() []string {
	var out []string
	for _, t := range topicWords {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// words returns the lower-case words of s.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '#')
	})
}

// named returns the languages and topics words of s name, sorted.
func named(s string) (langs, topics []string) {
	for _, w := range words(s) {
		if l, ok := langWords[w]; ok && !slices.Contains(langs, l) {
			langs = append(langs, l)
		}
		if t, ok := topicWords[w]; ok && !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	slices.Sort(langs)
	slices.Sort(topics)
	return langs, topics
}

// activeTopics returns the topics of the request and whether rules are
// filtered by topic at all (a command or a stage is given).
func activeTopics(r Request) (map[string]bool, bool) {
	if r.Command == "" && r.Stage == "" {
		return nil, false
	}
	act := map[string]bool{}
	for _, t := range r.Op.Topics {
		act[t] = true
	}
	if len(r.Argv) > 0 {
		_, ts := named(strings.Join(r.Argv, " "))
		for _, t := range ts {
			act[t] = true
		}
		for _, a := range r.Argv {
			switch a {
			case "vet", "fmt", "gofmt", "eslint", "prettier", "ruff", "black", "golangci-lint", "staticcheck":
				act["style"] = true
			}
		}
	}
	_, ts := named(r.Stage)
	for _, t := range ts {
		act[t] = true
	}
	for _, p := range r.Paths {
		if strings.HasSuffix(strings.ToLower(p), ".md") {
			act["docs"] = true
		}
	}
	return act, true
}

// Limits of the docs parts.
const (
	readmeHeadLines = 60
	readmeHeadBytes = 4096
)

// selection is what select made of a checkout and a request.
type selection struct {
	parts   []Part
	skipped []Pruned
}

func (s *selection) add(p Part) {
	p.order = len(s.parts)
	s.parts = append(s.parts, p)
}

func (s *selection) skip(id, kind, text, reason string, tk TextKind) {
	s.skipped = append(s.skipped, Pruned{ID: id, Kind: kind, Tokens: Estimate(tk, text), Reason: "not relevant: " + reason})
}

// choose builds the candidate parts of co for r (before budgeting).
func choose(co *Checkout, r Request) selection {
	var s selection
	red := r.Redact
	if red == nil {
		red = func(s string) string { return s }
	}
	act, filtered := activeTopics(r)
	have := co.Languages
	mk := func(id, kind, source, title, text, why string, pri int, tk TextKind) Part {
		text = red(text)
		return Part{ID: id, Kind: kind, Source: source, Title: red(title), Text: text, Why: red(why), pri: pri, tk: tk}
	}
	if r.Run != nil {
		s.add(mk("run:"+r.Run.RunID, KindRunState, "run", "run "+r.Run.RunID, RunStateText(*r.Run), "the run's stage state", priRunState, Prose))
	}
	for _, e := range eventsOf(r) {
		pri := priEvent
		if e.Kind == "failure" {
			pri = priFailure
		}
		s.add(mk("event:"+e.Kind+":"+e.ID, KindEvent, "run", e.Kind, e.Text, "recent "+e.Kind, pri, Prose))
	}
	if r.Run != nil {
		for _, o := range observationParts(co, r.Run.Observations, red) {
			s.add(o)
		}
	}
	var docsIndex []string
	for _, f := range co.Files {
		stale := ""
		if f.Changed {
			stale = "the file changed while it was read"
		}
		tk := KindOf(f.Rel)
		switch {
		case f.Role == RoleState:
			p := mk("state:"+f.Rel, KindState, f.Rel, f.Rel, f.Content, "state file", priState, tk)
			p.stale = stale
			s.add(p)
		case f.Rel == "AGENTS.md":
			for _, sec := range f.Sections {
				id, title := "rule:AGENTS.md", "AGENTS.md"
				if sec.Heading != "" {
					h := red(sec.Heading) // ids are shown too
					id, title = id+"#"+h, "AGENTS.md: "+h
				}
				langs, topics := named(sec.Heading)
				why := "general section"
				if len(langs) > 0 {
					if !intersects(langs, have) {
						s.skip(id, KindRule, sec.Text, "the section is about "+strings.Join(langs, ", ")+"; the checkout has "+list(have), Prose)
						continue
					}
					why = "names " + strings.Join(langs, ", ") + ", a language of the checkout"
				}
				if len(topics) > 0 && filtered {
					if !intersectsSet(topics, act) {
						s.skip(id, KindRule, sec.Text, "the section is about "+strings.Join(topics, ", ")+", not a topic of "+what(r), Prose)
						continue
					}
					why = "about " + strings.Join(topics, ", ") + ", a topic of " + what(r)
				}
				p := mk(id, KindRule, f.Rel, title, sec.Text, why, priRule, Prose)
				p.stale = stale
				s.add(p)
			}
		case strings.HasSuffix(f.Rel, ".mdc"):
			id := "rule:" + f.Rel
			why, reason := mdcApplies(f, co, r, act, filtered)
			if why == "" {
				s.skip(id, KindRule, f.Body, reason, Prose)
				continue
			}
			title := f.Rel
			if f.Front != nil && f.Front.Description != "" {
				title += ": " + f.Front.Description
			}
			p := mk(id, KindRule, f.Rel, title, f.Body, why, priRule, Prose)
			if f.Front != nil {
				p.Globs = f.Front.Globs
			}
			p.stale = stale
			s.add(p)
		case f.Rel == "CONTRIBUTING.md":
			if filtered && !r.Op.ChangesCheckout && !act["commit"] && !act["style"] {
				s.skip("rule:"+f.Rel, KindRule, f.Content, "CONTRIBUTING.md applies to writes, commits, style and reviews, not to "+what(r), Prose)
				continue
			}
			p := mk("rule:"+f.Rel, KindRule, f.Rel, f.Rel, f.Content, "contribution rules", priRule, Prose)
			p.stale = stale
			s.add(p)
		case f.Role == RoleRule: // .github/copilot-instructions.md
			p := mk("rule:"+f.Rel, KindRule, f.Rel, f.Rel, f.Content, "repository-wide instructions", priRule, Prose)
			p.stale = stale
			s.add(p)
		case f.Rel == "README.md":
			p := mk("doc:README.md#head", KindDoc, f.Rel, "README.md (head)", head(f.Content, readmeHeadLines, readmeHeadBytes), "the README's head", priDoc, Prose)
			p.stale = stale
			s.add(p)
		case strings.HasPrefix(f.Rel, "docs/"):
			title := f.Title
			if title == "" {
				title = strings.TrimSuffix(path0(f.Rel), ".md")
			}
			docsIndex = append(docsIndex, "- "+f.Rel+": "+title)
		default: // CLAUDE.md, .codebase/*.md
			p := mk("doc:"+f.Rel, KindDoc, f.Rel, f.Rel, f.Content, "repository doc", priDoc, tk)
			p.stale = stale
			s.add(p)
		}
	}
	if len(docsIndex) > 0 {
		s.add(mk("doc:docs/index", KindDoc, "docs", "docs index", strings.Join(docsIndex, "\n"), "titles of docs/*.md", priDocsIndex, Prose))
	}
	return s
}

// mdcApplies says why a .mdc rule applies, or why not.
func mdcApplies(f *File, co *Checkout, r Request, act map[string]bool, filtered bool) (why, reason string) {
	fm := f.Front
	if fm == nil {
		fm = &FrontMatter{}
	}
	if fm.AlwaysApply {
		return "alwaysApply", ""
	}
	if len(fm.Globs) > 0 {
		paths, from := r.Paths, "a path of the request"
		if len(paths) == 0 {
			paths, from = co.Tracked, "a tracked file"
		}
		for _, p := range paths {
			for _, g := range fm.Globs {
				if globMatch(g, p) {
					return "globs " + g + " match " + p + " (" + from + ")", ""
				}
			}
		}
		return "", "its globs " + strings.Join(fm.Globs, ", ") + " match no " + from
	}
	if fm.Description != "" {
		langs, topics := named(fm.Description)
		if len(langs) > 0 && !intersects(langs, co.Languages) {
			return "", "the rule is about " + strings.Join(langs, ", ") + "; the checkout has " + list(co.Languages)
		}
		if !filtered {
			return "description: " + fm.Description, ""
		}
		if intersectsSet(topics, act) {
			return "its description names a topic of " + what(r), ""
		}
		return "", "its description names no topic of " + what(r)
	}
	return "", "a manual rule (no globs, no alwaysApply, no description)"
}

// globMatch matches a rule glob against a path; a glob without a slash
// also matches the path's base name (Cursor's "*.ts" matches at any depth).
func globMatch(g, p string) bool {
	if ok, _ := doublestar.Match(g, p); ok {
		return true
	}
	if !strings.Contains(g, "/") {
		ok, _ := doublestar.Match(g, path0(p))
		return ok
	}
	return false
}

func path0(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func what(r Request) string {
	switch {
	case r.Command != "" && r.Stage != "":
		return r.Command + " in stage " + strconv.Quote(r.Stage)
	case r.Command != "":
		return r.Command
	case r.Stage != "":
		return "stage " + strconv.Quote(r.Stage)
	}
	return "the request"
}

func list(l []string) string {
	if len(l) == 0 {
		return "no known language"
	}
	return strings.Join(l, ", ")
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func intersectsSet(a []string, m map[string]bool) bool {
	for _, x := range a {
		if m[x] {
			return true
		}
	}
	return false
}

// head returns the first lines of s, at most maxBytes (cut at a line).
func head(s string, lines, maxBytes int) string {
	end := 0
	for n := 0; n < lines && end < len(s); n++ {
		i := strings.IndexByte(s[end:], '\n')
		next := len(s)
		if i >= 0 {
			next = end + i + 1
		}
		if next > maxBytes {
			break
		}
		end = next
	}
	return strings.TrimRight(s[:end], "\n")
}

// RunStateText renders a run's stage state for an agent (no timestamps).
func RunStateText(st messages.RunState) string {
	var b strings.Builder
	b.WriteString("status: " + st.Status + "\n")
	if st.Goal != "" {
		b.WriteString("goal: " + st.Goal + "\n")
	}
	if st.CurrentStage != "" {
		b.WriteString("current stage: " + st.CurrentStage + "\n")
	}
	if len(st.CompletedStages) > 0 {
		b.WriteString("completed stages: " + strings.Join(st.CompletedStages, ", ") + "\n")
	}
	if st.Blocked {
		b.WriteString("blocked: " + st.BlockedReason + "\n")
	}
	if st.Tier != "" {
		b.WriteString("tier: " + st.Tier + "\n")
	}
	c := st.Counters
	b.WriteString("calls: " + strconv.FormatInt(c.Calls, 10) + ", failures: " + strconv.FormatInt(c.Failures, 10) +
		", mutations: " + strconv.FormatInt(c.Mutations, 10) + ", commands: " + strconv.FormatInt(c.Commands, 10))
	return b.String()
}

// Limits of the events shown.
const maxEventsPerKind = 10

// eventsOf returns the recent events of the request: with a run, its
// failed spans (newest first), then receipts, escalations and approvals;
// without one, r.Events.
func eventsOf(r Request) []Event {
	if r.Run == nil {
		return r.Events
	}
	return RunEvents(*r.Run, r.Spans)
}

// RunEvents returns the events of a run worth reading first: its failed
// calls (newest first), then its receipts, escalations and approvals
// (newest first), at most maxEventsPerKind of each.
func RunEvents(st messages.RunState, spans []messages.RunSpan) []Event {
	sorted := slices.Clone(spans)
	slices.SortStableFunc(sorted, func(a, b messages.RunSpan) int {
		if c := b.Start.Compare(a.Start); c != 0 {
			return c
		}
		return strings.Compare(a.SpanID, b.SpanID)
	})
	var failures, receipts, approvals, escalations []Event
	for _, s := range sorted {
		where := ""
		if s.Stage != "" {
			where = " in stage " + s.Stage
		}
		if s.Outcome == "error" && len(failures) < maxEventsPerKind {
			failures = append(failures, Event{Kind: "failure", ID: s.SpanID, Text: s.Op + " failed with " + s.ErrorCode + where + " (span " + s.SpanID + ")"})
		}
		if s.ReceiptID != "" && len(receipts) < maxEventsPerKind {
			receipts = append(receipts, Event{Kind: "receipt", ID: s.ReceiptID, Text: s.Op + " wrote receipt " + s.ReceiptID + where})
		}
		if s.ApprovalID != "" && len(approvals) < maxEventsPerKind {
			approvals = append(approvals, Event{Kind: "approval", ID: s.ApprovalID, Text: s.Op + " asked for approval " + s.ApprovalID + where + " (decision " + s.Decision + ")"})
		}
	}
	if st.LastFailure != nil && !slices.ContainsFunc(failures, func(e Event) bool { return e.ID == st.LastFailure.SpanID }) && len(failures) < maxEventsPerKind {
		f := st.LastFailure
		failures = append([]Event{{Kind: "failure", ID: f.SpanID, Text: f.Op + " failed with " + f.ErrorCode + " (span " + f.SpanID + ", the run's last failure)"}}, failures...)
	}
	for i := len(st.Escalations) - 1; i >= 0 && len(escalations) < maxEventsPerKind; i-- {
		e := st.Escalations[i]
		from := e.From
		if from == "" {
			from = "undeclared"
		}
		escalations = append(escalations, Event{Kind: "escalation", ID: strconv.Itoa(i + 1), Text: "escalated from " + from + " to " + e.To + ": " + e.Reason})
	}
	out := append(failures, receipts...)
	out = append(out, escalations...)
	return append(out, approvals...)
}

// observationParts returns the run's observations as parts, newest first,
// marking the stale ones: a harnessd note superseded by a newer one of the
// same kind, a note naming a tracked file changed after it was made.
func observationParts(co *Checkout, obs []messages.RunObservation, red func(string) string) []Part {
	idx := make([]int, len(obs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return obs[b].At.Compare(obs[a].At) })
	seenKind := map[string]bool{}
	var out []Part
	for _, i := range idx {
		o := obs[i]
		p := Part{ID: "observation:" + strconv.Itoa(i+1), Kind: KindObservation, Source: o.Source, Title: o.Source + " " + o.Kind,
			Text: red(o.Text), Why: "an observation of the run", pri: priObservation, tk: Prose}
		if o.Source == "harnessd" {
			if seenKind[o.Kind] {
				p.stale = "superseded by a newer harnessd " + o.Kind + " note"
			}
			seenKind[o.Kind] = true
		}
		if p.stale == "" {
			if f, at := changedSince(co, o.Text, o.At); f != "" {
				p.stale = "it names " + f + ", which changed after the observation (" + at + ")"
			}
		}
		out = append(out, p)
	}
	return out
}

// changedSince returns a tracked file named in text that changed after t.
func changedSince(co *Checkout, text string, t time.Time) (string, string) {
	if co == nil || t.IsZero() {
		return "", ""
	}
	for _, w := range strings.Fields(text) {
		w = strings.Trim(w, "\"'`()[]{},;")
		w = strings.TrimSuffix(w, ".")
		if i := strings.IndexByte(w, ':'); i > 0 {
			w = w[:i]
		}
		if w == "" || !co.IsTracked(w) {
			continue
		}
		if m := co.ModTime(w); m.After(t) {
			return w, "modified " + m.Sub(t).Round(time.Second).String() + " later"
		}
	}
	return "", ""
}
