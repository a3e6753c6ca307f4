package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/*.golden from the current output")

func TestMain(m *testing.M) {
	harness.SandboxMain() // the test binary is the launcher of confined checks (harness check)
	time.Local = time.UTC // the expected times are in UTC
	goleak.VerifyTestMain(m)
}

const testToken = "tok-for-tests"

// The daemon's answers, as fixed JSON (not marshalled from the Go types,
// so that a field renamed on either side shows).
const (
	runsJSON = `{"runs":[
{"run_id":"r-2","goal":"fix the flaky test in internal/lease","status":"active","caller":{"session":"s-2","client":{"name":"claude-code","version":"2.1.0"}},
 "counters":{"calls":3,"reads":0,"commands":0,"mutations":0,"jobs":0,"checks":0,"output_bytes":0,"approvals":0,"failures":0,"observations":0},
 "completed_stages":[],"blocked":false,"observations":[],"started_at":"2026-12-01T15:04:05Z","updated_at":"2026-12-01T15:04:06Z"},
{"run_id":"r-1","status":"ended","end_reason":"done","implicit":true,
 "counters":{"calls":12,"reads":0,"commands":0,"mutations":0,"jobs":0,"checks":0,"output_bytes":0,"approvals":0,"failures":0,"observations":0},
 "completed_stages":[],"blocked":false,"observations":[],"started_at":"2026-11-30T10:00:00Z","updated_at":"2026-11-30T10:02:03Z","ended_at":"2026-11-30T10:02:03Z"}]}`

	stateActive = `{"run_id":"r-1","goal":"fix the flaky test","status":"active","caller":{"session":"s-1","client":{"name":"codex","version":"0.9"}},
 "counters":{"calls":3,"reads":1,"commands":1,"mutations":0,"jobs":0,"checks":0,"output_bytes":100,"approvals":0,"failures":1,"observations":1},
 "completed_stages":["plan"],"current_stage":"edit","blocked":false,
 "observations":[{"at":"2026-12-01T15:04:06.0015Z","source":"agent","kind":"plan","text":"read first"}],
 "started_at":"2026-12-01T15:04:05Z","updated_at":"2026-12-01T15:04:08Z"}`
	stateEnded = `{"run_id":"r-1","goal":"fix the flaky test","status":"ended","end_reason":"tests pass",
 "counters":{"calls":4,"reads":1,"commands":1,"mutations":1,"jobs":0,"checks":0,"output_bytes":100,"approvals":0,"failures":1,"observations":1},
 "completed_stages":["plan","edit"],"blocked":false,"observations":[],
 "started_at":"2026-12-01T15:04:05Z","updated_at":"2026-12-01T15:06:08Z","ended_at":"2026-12-01T15:06:08Z"}`

	spanBatch = `{"run_id":"r-1","span_id":"s1","kind":"operation","operation":"batch","outcome":"ok","start":"2026-12-01T15:04:06Z","duration_ms":1500}`
	spanRead  = `{"run_id":"r-1","span_id":"s2","parent_id":"s1","kind":"operation","operation":"read_file","route":"fast","outcome":"ok","start":"2026-12-01T15:04:06.001Z","duration_ms":0.3}`
	spanCmd   = `{"run_id":"r-1","span_id":"s3","parent_id":"s1","kind":"operation","operation":"run_command","route":"sandbox","outcome":"error","error_code":"COMMAND_FAILED","start":"2026-12-01T15:04:06.002Z","duration_ms":1400,"receipt_id":"rc-1"}`
	spanPatch = `{"run_id":"r-1","span_id":"s4","kind":"operation","operation":"apply_patch","route":"mediated","outcome":"ok","start":"2026-12-01T15:04:09Z","duration_ms":26,"receipt_id":"rc-2"}`

	notFound = `{"error":{"code":"NOT_FOUND","message":"run nope not found"}}`
)

var detailJSON = `{"state":` + stateActive + `,"spans":[` + spanBatch + `,` + spanRead + `,` + spanCmd + `],"dropped_spans":2}`

// fake is a daemon on the unix socket of a fresh data dir, answering the
// runs endpoints with fixed JSON.
type fake struct {
	dataDir string
	mu      sync.Mutex
	reqs    []*http.Request
	// events serves GET /v1/runs/r-1/events.
	events http.HandlerFunc
	// detail answers GET /v1/runs/r-1.
	detail string
	// assess answers POST /v1/run_assess for r-1.
	assess string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	// A short dir: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "hr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	paths := daemon.PathsOf(dir)
	if err := os.WriteFile(paths.Token, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fake{dataDir: dir, detail: detailJSON}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/runs", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, runsJSON)
	})
	mux.HandleFunc("GET /v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "r-1" {
			writeJSON(w, http.StatusNotFound, notFound)
			return
		}
		f.mu.Lock()
		d := f.detail
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, d)
	})
	mux.HandleFunc("POST /v1/run_assess", func(w http.ResponseWriter, r *http.Request) {
		var args struct {
			RunID string `json:"run_id"`
		}
		if json.NewDecoder(r.Body).Decode(&args) != nil || args.RunID != "r-1" {
			writeJSON(w, http.StatusNotFound, notFound)
			return
		}
		f.mu.Lock()
		a := f.assess
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, a)
	})
	mux.HandleFunc("GET /v1/runs/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "r-1" || f.events == nil {
			writeJSON(w, http.StatusNotFound, notFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f.events(w, r)
	})
	ln, err := net.Listen("unix", paths.Socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Clone(context.Background()))
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

func (f *fake) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.reqs...)
}

func writeJSON(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	io.WriteString(w, body)
}

// sse writes one event, a data line per line of data, and flushes it.
func sse(w http.ResponseWriter, typ, data string) {
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, strings.ReplaceAll(data, "\n", "\ndata: "))
	w.(http.Flusher).Flush()
}

func event(seq int, typ, field, obj string) string {
	return fmt.Sprintf(`{"run_id":"r-1","seq":%d,"type":%q,%q:%s}`, seq, typ, field, obj)
}

// syncBuffer is a bytes.Buffer safe to read while the CLI writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cliRun runs the CLI against dataDir.
func cliRun(t *testing.T, dataDir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb syncBuffer
	code = run(append([]string{"--data-dir", dataDir}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func wantLines(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("output lacks %q:\n%s", w, got)
		}
	}
}

func TestRunsList(t *testing.T) {
	f := newFake(t)
	code, out, errOut := cliRun(t, f.dataDir, "runs", "--status", "active", "--limit", "5")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	wantLines(t, out,
		"RUN  STATUS  CLIENT             GOAL                                  CALLS  STARTED           DURATION\n",
		"r-2  active  claude-code 2.1.0  fix the flaky test in internal/lease  3      ",
		"r-1  ended   -                  (implicit)                            12     2026-11-30 10:00  2m03s\n")
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if got := r.URL.RawQuery; got != "limit=5&status=active" {
		t.Errorf("query %q", got)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
		t.Errorf("Authorization %q: the human token is not sent", got)
	}

	code, out, _ = cliRun(t, f.dataDir, "--json", "runs")
	if code != exitOK || !json.Valid([]byte(out)) || !strings.Contains(out, `"run_id": "r-2"`) {
		t.Errorf("--json: exit %d, output:\n%s", code, out)
	}
	if q := f.requests()[1].URL.RawQuery; q != "limit=50" {
		t.Errorf("default query %q", q)
	}
}

func TestRunShow(t *testing.T) {
	f := newFake(t)
	code, out, errOut := cliRun(t, f.dataDir, "run", "show", "r-1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	wantLines(t, out,
		"run       r-1\n",
		"status    active\n",
		"client    codex 0.9\n",
		" so far\n",
		"counters  calls=3 reads=1 commands=1 output=100B failures=1 observations=1\n",
		"stages    completed plan; current edit\n",
		"dropped   2 read-only span(s)",
		"\n*   15:04:06.000  batch        ok               1.5s\n",
		"| * 15:04:06.001  read_file    ok              0.3ms\n",
		"|   ~ note [agent/plan] read first\n",
		"| * 15:04:06.002  run_command  COMMAND_FAILED   1.4s  route sandbox  receipt rc-1\n")
	if strings.Contains(out, "\x1b") {
		t.Error("colors when stdout is not a terminal")
	}

	code, out, _ = cliRun(t, f.dataDir, "--json", "run", "show", "r-1")
	var d runDetail
	if code != exitOK || json.Unmarshal([]byte(out), &d) != nil || len(d.Spans) != 3 || d.DroppedSpans != 2 {
		t.Errorf("--json: exit %d, output:\n%s", code, out)
	}
}

func TestRunTail(t *testing.T) {
	f := newFake(t)
	code, out, errOut := cliRun(t, f.dataDir, "run", "tail", "r-1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "15:04:06.000  batch               ok  1.5s\n" +
		"15:04:06.001  ↳ read_file         ok  0.3ms\n" +
		"15:04:06.001  ~ note [agent/plan] read first\n" +
		"15:04:06.002  ↳ run_command       COMMAND_FAILED  1.4s  route sandbox  receipt rc-1\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}

	code, out, _ = cliRun(t, f.dataDir, "--json", "run", "tail", "r-1")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitOK || len(lines) != 3 || lines[2] != spanCmd {
		t.Errorf("--json: exit %d, output:\n%s", code, out)
	}
}

// followEvents replays the spans, then goes live: an observation, a stage,
// the final state. Then it holds the stream open: the CLI must stop at the
// final state, not wait for the end of the stream.
func followEvents(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, ": keep-alive\n\n")
	sse(w, "span", event(1, "span", "span", spanBatch))
	sse(w, "span", event(2, "span", "span", spanRead))
	// CRLF line ends and data over two lines, as SSE allows.
	fmt.Fprintf(w, "event: span\r\nid: 3\r\ndata: %s\r\ndata: %s\r\n\r\n", `{"run_id":"r-1","seq":3,"type":"span",`, `"span":`+spanCmd+`}`)
	w.(http.Flusher).Flush()
	sse(w, "observation", event(4, "observation", "observation", `{"at":"2026-12-01T15:04:08.5Z","source":"harnessd","kind":"failure","text":"run_command failed"}`))
	sse(w, "state", event(5, "state", "state", stateActive))
	sse(w, "span", event(6, "span", "span", spanPatch))
	sse(w, "state", event(7, "state", "state", stateEnded))
	<-r.Context().Done()
}

func TestRunTailFollow(t *testing.T) {
	f := newFake(t)
	f.events = followEvents
	code, out, errOut := cliRun(t, f.dataDir, "run", "tail", "-f", "r-1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "15:04:06.000  batch               ok  1.5s\n" +
		"15:04:06.001  ↳ read_file         ok  0.3ms\n" +
		"15:04:06.002  ↳ run_command       COMMAND_FAILED  1.4s  route sandbox  receipt rc-1\n" +
		"15:04:08.500  ~ note [harnessd/failure] run_command failed\n" +
		"15:04:09.000  apply_patch         ok  26ms  route mediated  receipt rc-2\n" +
		"15:06:08.000  > stage edit completed\n" +
		"run r-1 ended (tests pass) after 2m03s: calls=4 reads=1 commands=1 mutations=1 output=100B failures=1 observations=1\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if acc := f.requests()[0].Header.Get("Accept"); acc != "text/event-stream" {
		t.Errorf("Accept %q", acc)
	}
}

func TestRunTailFollowJSON(t *testing.T) {
	f := newFake(t)
	f.events = followEvents
	code, out, errOut := cliRun(t, f.dataDir, "--json", "run", "tail", "-f", "r-1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines, want one per event (7):\n%s", len(lines), out)
	}
	for i, l := range lines {
		var ev messages.RunEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Seq != uint64(i+1) {
			t.Errorf("line %d %q: %v (seq %d)", i, l, err, ev.Seq)
		}
	}
	var last messages.RunEvent
	_ = json.Unmarshal([]byte(lines[6]), &last)
	if last.Type != "state" || last.State == nil || last.State.Status != messages.RunEnded {
		t.Errorf("last line %q is not the final state", lines[6])
	}
}

// TestRunTailFollowEOF: a stream that ends without the final state is
// settled by asking for the run.
func TestRunTailFollowEOF(t *testing.T) {
	f := newFake(t)
	f.events = func(w http.ResponseWriter, r *http.Request) { sse(w, "span", event(1, "span", "span", spanPatch)) }
	f.detail = `{"state":` + stateEnded + `,"spans":[]}`
	code, out, errOut := cliRun(t, f.dataDir, "run", "tail", "-f", "r-1")
	if code != exitOK || !strings.HasSuffix(out, "run r-1 ended (tests pass) after 2m03s: calls=4 reads=1 commands=1 mutations=1 output=100B failures=1 observations=1\n") {
		t.Errorf("ended run: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	f.mu.Lock()
	f.detail = `{"state":` + stateActive + `,"spans":[]}`
	f.mu.Unlock()
	code, _, errOut = cliRun(t, f.dataDir, "run", "tail", "-f", "r-1")
	if code != exitFailed || !strings.Contains(errOut, "harness: INTERNAL: the event stream of run r-1 ended while the run is active") {
		t.Errorf("active run: exit %d, stderr %q", code, errOut)
	}
}

// TestRunTailFollowInterrupt: Ctrl-C ends a follow with exit 0, and
// --timeout does not end it.
func TestRunTailFollowInterrupt(t *testing.T) {
	f := newFake(t)
	f.events = func(w http.ResponseWriter, r *http.Request) {
		sse(w, "span", event(1, "span", "span", spanBatch))
		<-r.Context().Done()
	}
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--data-dir", f.dataDir, "--timeout", "100ms", "run", "tail", "-f", "r-1"}, strings.NewReader(""), &out, &errb)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "batch") {
		if time.Now().After(deadline) {
			t.Fatalf("no span line; stdout %q stderr %q", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case code := <-done:
		t.Fatalf("follow ended (exit %d) before Ctrl-C: %s", code, errb.String())
	case <-time.After(300 * time.Millisecond): // past --timeout
	}
	// The CLI is inside followRun, so its signal handlers are installed.
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d after Ctrl-C: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not stop on Ctrl-C")
	}
}

// TestFollowRunCancel is Ctrl-C without a signal: a cancelled context.
func TestFollowRunCancel(t *testing.T) {
	f := newFake(t)
	sent := make(chan struct{})
	f.events = func(w http.ResponseWriter, r *http.Request) {
		sse(w, "span", event(1, "span", "span", spanBatch))
		close(sent)
		<-r.Context().Done()
	}
	c := &cli{c: client.Unix(daemon.PathsOf(f.dataDir).Socket), stdout: io.Discard, stderr: io.Discard}
	defer c.c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-sent; cancel() }()
	if err := c.followRun(ctx, "r-1"); err != nil {
		t.Errorf("followRun after cancel: %v", err)
	}
}

func TestRunNotFound(t *testing.T) {
	f := newFake(t)
	f.events = followEvents
	for _, args := range [][]string{{"run", "show", "nope"}, {"run", "tail", "nope"}, {"run", "tail", "-f", "nope"}} {
		code, out, errOut := cliRun(t, f.dataDir, args...)
		if code != exitFailed || errOut != "harness: NOT_FOUND: run nope not found\n" || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	code, out, _ := cliRun(t, f.dataDir, "--json", "run", "show", "nope")
	if code != exitFailed || !strings.Contains(out, `"code":"NOT_FOUND"`) {
		t.Errorf("--json: exit %d, stdout %q", code, out)
	}
}

func TestRunsUsage(t *testing.T) {
	f := newFake(t)
	for _, args := range [][]string{
		{"run"}, {"run", "show"}, {"run", "show", "a", "b"}, {"run", "show", "-f", "r-1"}, {"run", "tail"},
		{"run", "bogus", "r-1"}, {"run", "tail", "--bogus", "r-1"}, {"runs", "extra"}, {"runs", "--limit", "x"},
		{"run", "explain"}, {"run", "explain", "a", "b"}, {"run", "explain", "-f", "r-1"},
	} {
		if code, _, errOut := cliRun(t, f.dataDir, args...); code != exitUsage || !strings.Contains(errOut, "usage: harness run") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	if len(f.requests()) != 0 {
		t.Error("a usage error reached the daemon")
	}
	if _, out, _ := cliRun(t, f.dataDir, "--help"); !strings.Contains(out, "harness runs [--status S]") || !strings.Contains(out, "harness run show RUN_ID") {
		t.Errorf("help lacks the run commands:\n%s", out)
	}
}

func TestRunsNoDaemon(t *testing.T) {
	dir, err := os.MkdirTemp("", "hr")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, args := range [][]string{{"runs"}, {"run", "tail", "-f", "r-1"}} {
		if code, _, errOut := cliRun(t, dir, args...); code != exitUnavailable {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// The answers of a blocked run with a retried failure, a child and an
// escalation, as fixed JSON.
const (
	stateBlocked = `{"run_id":"r-1","goal":"fix the flaky test","workflow_class":"bugfix","tier":"bounded_work","status":"active",
 "budget":{"commands":10,"mutations":2},
 "counters":{"calls":6,"reads":1,"commands":4,"mutations":2,"jobs":0,"checks":0,"output_bytes":100,"approvals":0,"failures":3,"observations":2},
 "drawn":{"calls":0,"reads":0,"commands":1,"mutations":0,"jobs":0,"checks":0,"output_bytes":0,"approvals":0,"failures":0,"observations":0},
 "completed_stages":["plan"],"current_stage":"test","blocked":true,"blocked_reason":"the check keeps timing out",
 "observations":[],"escalations":[{"at":"2026-12-01T15:04:06.5Z","from":"direct","to":"bounded_work","reason":"the fix needs a long check"}],
 "children":["r-2"],"started_at":"2026-12-01T15:04:05Z","updated_at":"2026-12-01T15:04:09Z"}`
	assessJSON = `{"run_id":"r-1",
 "span":{"run_id":"r-1","span_id":"s9","kind":"operation","operation":"run_command","stage":"test","outcome":"error","error_code":"TIMEOUT","start":"2026-12-01T15:04:08Z","duration_ms":15000},
 "attempts":[{"span_id":"s5","error_code":"TIMEOUT","at":"2026-12-01T15:04:07Z","duration_ms":15000},{"span_id":"s9","error_code":"TIMEOUT","at":"2026-12-01T15:04:08Z","duration_ms":15000}],
 "max_retries":3,"retries_left":2,
 "assessment":{"type":"transient","code":"TIMEOUT","operation":"run_command","span_id":"s9","attempts":2,"retryable":true,
  "evidence":["run_command failed with TIMEOUT (span s9): the call ran out of time","the same call (same operation and input) failed twice in stage \"test\": TIMEOUT, TIMEOUT","the run's mutations budget is used up (2 of 2): a retry that needs it is refused"]},
 "plan":{"action":"escalate_durable","max_attempts":1,"reason":"the command ran out of the Fast Path's time: run it as a durable job (job_start) with a longer timeout"},
 "children":[{"run_id":"r-2","goal":"write the regression test","status":"active","completed_stages":[],"current_stage":"tests","blocked":true,"blocked_reason":"waits for the API","failures":1,
  "last_failure":{"span_id":"c5","operation":"apply_patch","error_code":"PATCH_CONFLICT","at":"2026-12-01T15:04:07.5Z"}}]}`
)

// TestRunExplain is the golden test of `harness run explain`: the run from
// GET /v1/runs/{id}, the assessment from POST /v1/run_assess, in sentences.
func TestRunExplain(t *testing.T) {
	f := newFake(t)
	f.detail = `{"state":` + stateBlocked + `,"spans":[],"dropped_spans":0}`
	f.assess = assessJSON
	code, out, errOut := cliRun(t, f.dataDir, "run", "explain", "r-1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden := filepath.Join("testdata", "run_explain.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestRunExplain -update-golden writes it)", err)
	}
	if out != string(want) {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	reqs := f.requests()
	if len(reqs) != 2 || reqs[0].URL.Path != "/v1/runs/r-1" || reqs[1].Method != "POST" || reqs[1].URL.Path != "/v1/run_assess" {
		t.Errorf("requests: %v", reqs)
	}

	code, out, _ = cliRun(t, f.dataDir, "--json", "run", "explain", "r-1")
	var j struct {
		State      messages.RunState `json:"state"`
		Assessment struct {
			Plan struct {
				Action string `json:"action"`
			} `json:"plan"`
		} `json:"assessment"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &j) != nil || j.State.RunID != "r-1" || j.Assessment.Plan.Action != "escalate_durable" {
		t.Errorf("--json: exit %d, output:\n%s", code, out)
	}

	f.mu.Lock()
	f.detail, f.assess = `{"state":`+stateEnded+`,"spans":[]}`, `{"run_id":"r-1","max_retries":3,"retries_left":3}`
	f.mu.Unlock()
	code, out, errOut = cliRun(t, f.dataDir, "run", "explain", "r-1")
	if code != exitOK || !strings.Contains(out, "Run r-1 (\"fix the flaky test\") has ended: tests pass.") || !strings.Contains(out, "Nothing has failed.") {
		t.Errorf("an ended run: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := cliRun(t, f.dataDir, "run", "explain", "nope"); code == exitOK || !strings.Contains(errOut, "NOT_FOUND") {
		t.Errorf("an unknown run: exit %d, stderr %q", code, errOut)
	}
}
