package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/recovery"
	"github.com/harnessd/harnessd/internal/runview"
	"github.com/harnessd/harnessd/messages"
)

var runsCommand = command{name: "runs", usage: "runs [--status S] [--limit N]   list runs, active first, then newest first", run: runsList,
	help: `Usage:
  harness runs [--status S] [--limit N]

Lists runs (an agent's session of work): active runs first, then newest first.
  --status S   only runs with this status: active, ended, deadline, abandoned
  --limit N    at most N runs (default 50)
`,
	flags: []string{"--status", "--limit"}}

var runCommand = command{name: "run", usage: "run show RUN_ID | tail [-f] RUN_ID | explain RUN_ID   a run's span tree, its spans as they happen (-f until it ends), or in sentences why it is blocked and what to do", run: runCmd,
	help: `Usage:
  harness run show RUN_ID        a run's span tree, like git log --graph
  harness run tail [-f] RUN_ID   its spans as they happen (-f: until it ends; Ctrl-C stops)
  harness run explain RUN_ID     in sentences: why it is blocked, what failed, what to do
`,
	subHelp: map[string]string{
		"show":    "Usage:\n  harness run show RUN_ID\n\nPrints a run's state and its span tree (colours only on a terminal, never with NO_COLOR or TERM=dumb).\n",
		"tail":    "Usage:\n  harness run tail [-f] RUN_ID\n\nPrints a run's spans; with -f (--follow) it follows them as they happen until the run ends (--timeout does not end a follow; Ctrl-C does).\n",
		"explain": "Usage:\n  harness run explain RUN_ID\n\nExplains in sentences why a run is blocked, what failed and the recovery plan.\n",
	},
	flags: []string{"--follow", "-f"}}

// runDetail is the answer of GET /v1/runs/{id}.
type runDetail struct {
	State        messages.RunState  `json:"state"`
	Spans        []messages.RunSpan `json:"spans"`
	DroppedSpans int64              `json:"dropped_spans"`
}

func runPath(id string) string { return "/v1/runs/" + url.PathEscape(id) }

func runsList(ctx context.Context, c *cli, args []string) error {
	const usage = "usage: harness runs [--status S] [--limit N]"
	fs := pflag.NewFlagSet("runs", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	status := fs.String("status", "", "only runs with this status (active, ended, deadline, abandoned)")
	limit := fs.Int("limit", 50, "at most this many runs")
	if err := fs.Parse(args); err != nil {
		return usageErr{err.Error() + "; " + usage}
	}
	if fs.NArg() != 0 {
		return usageErr{usage}
	}
	q := url.Values{}
	if *status != "" {
		q.Set("status", *status)
	}
	if *limit > 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	path := "/v1/runs"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	raw, err := c.c.Get(ctx, path)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	var r struct {
		Runs []messages.RunState `json:"runs"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return errs.New(errs.Internal, "decode runs: %v", err)
	}
	if len(r.Runs) == 0 {
		_, err := fmt.Fprintln(c.stdout, "no runs")
		return err
	}
	escAll(&r.Runs)
	return runview.List(c.stdout, r.Runs, time.Now())
}

func runCmd(ctx context.Context, c *cli, args []string) error {
	const usage = "usage: harness run show RUN_ID | tail [-f] RUN_ID | explain RUN_ID"
	if len(args) == 0 {
		return usageErr{usage}
	}
	fs := pflag.NewFlagSet("run "+args[0], pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	follow := fs.BoolP("follow", "f", false, "follow the run until it ends")
	if err := fs.Parse(args[1:]); err != nil {
		return usageErr{err.Error() + "; " + usage}
	}
	rest := fs.Args()
	switch args[0] {
	case "show":
		if len(rest) != 1 || *follow {
			return usageErr{"usage: harness run show RUN_ID"}
		}
		return c.runShow(ctx, rest[0])
	case "explain":
		if len(rest) != 1 || *follow {
			return usageErr{"usage: harness run explain RUN_ID"}
		}
		return c.runExplain(ctx, rest[0])
	case "tail":
		if len(rest) != 1 {
			return usageErr{"usage: harness run tail [-f] RUN_ID"}
		}
		if !*follow {
			return c.runTail(ctx, rest[0])
		}
		// A follow lasts as long as the run: --timeout (meant for calls)
		// does not end it, Ctrl-C does, and that is a normal exit.
		fctx, stop := signal.NotifyContext(context.WithoutCancel(ctx), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return c.followRun(fctx, rest[0])
	}
	return usageErr{fmt.Sprintf("unknown run subcommand %q; %s", args[0], usage)}
}

// getRun returns the answer of GET /v1/runs/{id} exactly, and decoded
// with its strings escaped for people (escAll).
func (c *cli) getRun(ctx context.Context, id string) (json.RawMessage, *runDetail, error) {
	raw, err := c.c.Get(ctx, runPath(id))
	if err != nil {
		return nil, nil, err
	}
	var d runDetail
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, nil, errs.New(errs.Internal, "decode run %s: %v", id, err)
	}
	escAll(&d)
	return raw, &d, nil
}

func (c *cli) runShow(ctx context.Context, id string) error {
	raw, d, err := c.getRun(ctx, id)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	return runview.Tree(c.stdout, d.State, d.Spans, runview.Options{
		Color: colorOn(c.stdout), Now: time.Now(), DroppedSpans: d.DroppedSpans,
	})
}

// runExplain says in sentences why a run is blocked, what failed last, the
// assessment and the recovery plan (run_assess), the budget left and the
// escalations (GET /v1/runs/{id}). With --json, both answers as one
// object {"state", "assessment"}.
func (c *cli) runExplain(ctx context.Context, id string) error {
	raw, d, err := c.getRun(ctx, id)
	if err != nil {
		return err
	}
	araw, err := c.c.Call(ctx, "run_assess", map[string]string{"run_id": id})
	if err != nil {
		return err
	}
	if c.json {
		var r struct {
			State json.RawMessage `json:"state"`
		}
		_ = json.Unmarshal(raw, &r) // getRun decoded it already
		b, err := json.Marshal(map[string]json.RawMessage{"state": r.State, "assessment": araw})
		if err != nil {
			return err
		}
		return c.printJSON(b)
	}
	var rep recovery.Report
	if err := json.Unmarshal(araw, &rep); err != nil {
		return errs.New(errs.Internal, "decode the assessment of run %s: %v", id, err)
	}
	escAll(&rep)
	return runview.Explain(c.stdout, d.State, &rep, runview.Options{Now: time.Now()})
}

// runTail prints the run's spans so far, with its observations, by time;
// with --json, one span per line (JSON Lines, like tail -f).
func (c *cli) runTail(ctx context.Context, id string) error {
	raw, d, err := c.getRun(ctx, id)
	if err != nil {
		return err
	}
	if c.json {
		var r struct {
			Spans []json.RawMessage `json:"spans"`
		}
		_ = json.Unmarshal(raw, &r) // getRun decoded it already
		for _, s := range r.Spans {
			if err := c.jsonLine(s); err != nil {
				return err
			}
		}
		return nil
	}
	spans := append([]messages.RunSpan(nil), d.Spans...)
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].Start.Before(spans[j].Start) })
	obs := append([]messages.RunObservation(nil), d.State.Observations...)
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].At.Before(obs[j].At) })
	var b bytes.Buffer
	for _, s := range spans {
		for ; len(obs) > 0 && obs[0].At.Before(s.Start); obs = obs[1:] {
			b.WriteString(runview.Note(obs[0]) + "\n")
		}
		b.WriteString(runview.Line(s) + "\n")
	}
	for _, o := range obs {
		b.WriteString(runview.Note(o) + "\n")
	}
	_, err = c.stdout.Write(b.Bytes())
	return err
}

// errRunEnded stops reading the event stream at the run's final state.
var errRunEnded = errors.New("run ended")

// followRun prints the run's events (the spans so far, then live ones)
// until the run ends, with its closing line, or ctx is done (Ctrl-C: not
// an error).
func (c *cli) followRun(ctx context.Context, id string) error {
	var prev *messages.RunState
	err := c.c.Events(ctx, runPath(id)+"/events", func(e client.Event) error {
		var ev messages.RunEvent
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			return errs.New(errs.Internal, "decode %s event of run %s: %v", e.Type, id, err)
		}
		if ev.Type == "" {
			ev.Type = e.Type
		}
		if c.json {
			if err := c.jsonLine(e.Data); err != nil {
				return err
			}
		} else {
			escAll(&ev)
			if err := c.printEvent(ev, prev); err != nil {
				return err
			}
		}
		if ev.Type == "state" && ev.State != nil {
			if ev.State.Status != messages.RunActive {
				return errRunEnded
			}
			prev = ev.State
		}
		return nil
	})
	switch {
	case errors.Is(err, errRunEnded), ctx.Err() != nil:
		return nil
	case err != nil:
		return err
	}
	// The stream ended without the final state: the run may have ended
	// as we connected, or the daemon went away.
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, d, err := c.getRun(gctx, id)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil
	case err != nil:
		return err
	case d.State.Status == messages.RunActive:
		return errs.New(errs.Internal, "the event stream of run %s ended while the run is active", id)
	}
	if c.json {
		// The state exactly as the daemon answered (d's strings are
		// escaped for people).
		var exact runDetail
		_ = json.Unmarshal(raw, &exact) // getRun decoded it already
		b, err := json.Marshal(messages.RunEvent{RunID: exact.State.RunID, Type: "state", State: &exact.State})
		if err != nil {
			return err
		}
		return c.jsonLine(b)
	}
	_, err = fmt.Fprintln(c.stdout, runview.Summary(d.State, time.Now()))
	return err
}

// printEvent prints one event of a followed run; prev is the last state
// seen (nil before the first).
func (c *cli) printEvent(ev messages.RunEvent, prev *messages.RunState) error {
	var lines []string
	switch {
	case ev.Type == "span" && ev.Span != nil:
		lines = []string{runview.Line(*ev.Span)}
	case ev.Type == "observation" && ev.Observation != nil:
		lines = []string{runview.Note(*ev.Observation)}
	case ev.Type == "state" && ev.State != nil:
		// The first state is the baseline: its stages happened before.
		if prev != nil {
			lines = runview.Changes(*prev, *ev.State)
		}
		if ev.State.Status != messages.RunActive {
			lines = append(lines, runview.Summary(*ev.State, time.Now()))
		}
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(c.stdout, l); err != nil {
			return err
		}
	}
	return nil
}

// jsonLine prints raw compacted onto one line (JSON Lines).
func (c *cli) jsonLine(raw []byte) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		buf.Reset()
		buf.Write(bytes.ReplaceAll(raw, []byte("\n"), []byte(" ")))
	}
	buf.WriteByte('\n')
	_, err := c.stdout.Write(buf.Bytes())
	return err
}

// colorOn reports whether w is a terminal that wants colors: not with
// NO_COLOR set (no-color.org) or TERM=dumb, and never into a pipe or file.
func colorOn(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// isTerminal reports a terminal (not merely a character device such as
// /dev/null).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
