package telemetry_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/harnessd/harnessd/internal/telemetry"
	"github.com/harnessd/harnessd/internal/telemetry/otlptest"
	"github.com/harnessd/harnessd/messages"
)

// wait bounds every wait for the receiver; spans normally arrive within
// BatchTimeout.
const wait = 10 * time.Second

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// start returns an exporter sending to a new receiver, shut down when the
// test ends.
func start(t *testing.T, o telemetry.Options) (*telemetry.Exporter, *otlptest.Receiver) {
	t.Helper()
	rcv := otlptest.New(t)
	if o.Endpoint == "" {
		o.Endpoint = rcv.URL()
	}
	if o.BatchTimeout == 0 {
		o.BatchTimeout = 5 * time.Millisecond
	}
	e, err := telemetry.New(context.Background(), o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return e, rcv
}

func attrs(s *tracepb.Span) map[string]*commonpb.AnyValue {
	m := make(map[string]*commonpb.AnyValue, len(s.Attributes))
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func byName(spans []*tracepb.Span) map[string]*tracepb.Span {
	m := make(map[string]*tracepb.Span, len(spans))
	for _, s := range spans {
		m[s.Name] = s
	}
	return m
}

func op(runID, spanID, parentID, name string) messages.RunSpan {
	return messages.RunSpan{
		RunID: runID, SpanID: spanID, ParentID: parentID,
		Kind: messages.SpanOperation, Op: name, Outcome: "ok",
		Start: t0, DurationMs: 12.5,
	}
}

func TestIDs(t *testing.T) {
	sum := sha256.Sum256([]byte("harnessd-trace\x00run_0123abcd"))
	if got := telemetry.TraceID("run_0123abcd"); !bytes.Equal(got[:], sum[:16]) {
		t.Errorf("TraceID = %x, want %x", got, sum[:16])
	}
	sum = sha256.Sum256([]byte("harnessd-span\x00sp_1"))
	if got := telemetry.SpanID("sp_1"); !bytes.Equal(got[:], sum[:8]) {
		t.Errorf("SpanID = %x, want %x", got, sum[:8])
	}
	if telemetry.TraceID("run_a") == telemetry.TraceID("run_b") || telemetry.SpanID("sp_a") == telemetry.SpanID("sp_b") {
		t.Error("different ids map to the same OTel id")
	}
	if !telemetry.TraceID("run_a").IsValid() || !telemetry.SpanID("run_a").IsValid() {
		t.Error("ids are not valid OTel ids")
	}
}

func TestNewRefusesBadEndpoint(t *testing.T) {
	for _, ep := range []string{"", "ftp://collector:21", "collector:port", "http://collector:4318?x=1", "http://"} {
		e, err := telemetry.New(context.Background(), telemetry.Options{Endpoint: ep})
		if err == nil {
			_ = e.Shutdown(context.Background())
			t.Errorf("New(%q) accepted", ep)
			continue
		}
		if ep != "" && !strings.Contains(err.Error(), ep) {
			t.Errorf("New(%q): %q does not name the endpoint", ep, err)
		}
	}
}

func TestExport(t *testing.T) {
	e, rcv := start(t, telemetry.Options{
		Headers:        map[string]string{"Authorization": "Bearer t0ken"},
		ServiceVersion: "1.2.3",
	})
	const run = "run_0123abcd"

	read := op(run, "sp_read", "", "read_file")
	read.InputHash = "sha256:abc"
	read.Input = json.RawMessage(`{"path":"SECRET_INPUT"}`)
	read.Route = "fast"
	read.Decision = "allow"
	read.Segments = map[string]float64{"mediate": 0.25, "exec": 11}
	read.OutputBytes = 2048
	read.ReadOnly = true
	read.Session = "sess-1"
	read.ReceiptID = "rc_1"
	read.Client = messages.Client{Name: "claude-code", Version: "2.1.0"}

	batch := op(run, "sp_batch", "", "batch")
	step := op(run, "sp_step", "sp_batch", "run_command")
	step.JobID = "job_1"
	step.CheckID = "ck_1"
	step.ApprovalID = "ap_1"

	failed := op(run, "sp_fail", "", "apply_patch")
	failed.Outcome = "error"
	failed.ErrorCode = "PATCH_CONFLICT"

	for _, s := range []messages.RunSpan{read, batch, step, failed} {
		e.Span(s)
	}
	state := messages.RunState{
		RunID: run, Goal: "fix the tests", RepoID: "repo_1", WorkflowClass: "bugfix",
		Status: messages.RunActive, StartedAt: t0.Add(-time.Minute),
		Caller:   messages.Caller{Session: "sess-1", Client: messages.Client{Name: "claude-code"}},
		Counters: messages.RunCounters{Calls: 4, Reads: 1, Failures: 1},
	}
	e.Run(state) // still active: nothing
	state.Status, state.EndReason, state.EndedAt = messages.RunEnded, "done", t0.Add(time.Minute)
	e.Run(state)

	spans := byName(rcv.Wait(t, 5, wait))
	root := spans[telemetry.RootSpanName]
	if root == nil {
		t.Fatalf("no root span %q in %v", telemetry.RootSpanName, spans)
	}
	for _, name := range []string{"tools/call read_file", "tools/call batch", "tools/call run_command", "tools/call apply_patch"} {
		if spans[name] == nil {
			t.Fatalf("no span %q", name)
		}
	}
	traceID := telemetry.TraceID(run)
	for name, s := range spans {
		if !bytes.Equal(s.TraceId, traceID[:]) {
			t.Errorf("%s: trace %x, want %x", name, s.TraceId, traceID)
		}
		for k, v := range attrs(s) {
			if strings.Contains(v.String(), "SECRET_INPUT") {
				t.Errorf("%s: attribute %s carries the input", name, k)
			}
			if _, ok := v.GetValue().(*commonpb.AnyValue_StringValue); ok && v.GetStringValue() == "" {
				t.Errorf("%s: empty string attribute %s", name, k)
			}
		}
	}

	// Tree: operations under the root, the step under its batch.
	rootID := telemetry.SpanID(run)
	if !bytes.Equal(root.SpanId, rootID[:]) || len(root.ParentSpanId) != 0 {
		t.Errorf("root: span %x parent %x, want span %x and no parent", root.SpanId, root.ParentSpanId, rootID)
	}
	for _, name := range []string{"tools/call read_file", "tools/call batch", "tools/call apply_patch"} {
		if !bytes.Equal(spans[name].ParentSpanId, rootID[:]) {
			t.Errorf("%s: parent %x, want the root %x", name, spans[name].ParentSpanId, rootID)
		}
	}
	batchID, stepID := telemetry.SpanID("sp_batch"), telemetry.SpanID("sp_step")
	if s := spans["tools/call run_command"]; !bytes.Equal(s.ParentSpanId, batchID[:]) || !bytes.Equal(s.SpanId, stepID[:]) {
		t.Errorf("step: span %x parent %x, want span %x parent %x", s.SpanId, s.ParentSpanId, stepID, batchID)
	}

	// An operation span: kind, times, attributes.
	s := spans["tools/call read_file"]
	if s.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("operation kind %v, want SERVER", s.Kind)
	}
	if s.StartTimeUnixNano != uint64(t0.UnixNano()) || s.EndTimeUnixNano != uint64(t0.Add(12500*time.Microsecond).UnixNano()) {
		t.Errorf("operation times %d..%d, want %v + 12.5ms", s.StartTimeUnixNano, s.EndTimeUnixNano, t0)
	}
	if s.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("ok operation status %v, want UNSET", s.Status)
	}
	a := attrs(s)
	wantStr := map[string]string{
		"gen_ai.tool.name":        "read_file",
		"gen_ai.operation.name":   "execute_tool",
		"mcp.method.name":         "tools/call",
		"mcp.session.id":          "sess-1",
		"harnessd.run_id":         run,
		"harnessd.span_id":        "sp_read",
		"harnessd.input_hash":     "sha256:abc",
		"harnessd.route":          "fast",
		"harnessd.decision":       "allow",
		"harnessd.receipt_id":     "rc_1",
		"harnessd.client.name":    "claude-code",
		"harnessd.client.version": "2.1.0",
	}
	for k, want := range wantStr {
		if got := a[k].GetStringValue(); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got := a["harnessd.output_bytes"].GetIntValue(); got != 2048 {
		t.Errorf("harnessd.output_bytes = %d, want 2048", got)
	}
	if got := a["harnessd.read_only"].GetBoolValue(); !got {
		t.Error("harnessd.read_only is not true")
	}
	if a["harnessd.segment.mediate_ms"].GetDoubleValue() != 0.25 || a["harnessd.segment.exec_ms"].GetDoubleValue() != 11 {
		t.Errorf("segments: mediate %v exec %v", a["harnessd.segment.mediate_ms"], a["harnessd.segment.exec_ms"])
	}
	for _, k := range []string{"error.type", "harnessd.job_id", "harnessd.check_id", "harnessd.approval_id"} {
		if _, ok := a[k]; ok {
			t.Errorf("%s set on a span without it", k)
		}
	}
	a = attrs(spans["tools/call run_command"])
	for k, want := range map[string]string{"harnessd.job_id": "job_1", "harnessd.check_id": "ck_1", "harnessd.approval_id": "ap_1"} {
		if got := a[k].GetStringValue(); got != want {
			t.Errorf("step %s = %q, want %q", k, got, want)
		}
	}

	// A failed operation.
	f := spans["tools/call apply_patch"]
	if f.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || f.Status.GetMessage() != "PATCH_CONFLICT" {
		t.Errorf("failed status %v, want ERROR PATCH_CONFLICT", f.Status)
	}
	if got := attrs(f)["error.type"].GetStringValue(); got != "PATCH_CONFLICT" {
		t.Errorf("error.type = %q, want PATCH_CONFLICT", got)
	}

	// The root span.
	if root.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("root kind %v, want INTERNAL", root.Kind)
	}
	if root.StartTimeUnixNano != uint64(state.StartedAt.UnixNano()) || root.EndTimeUnixNano != uint64(state.EndedAt.UnixNano()) {
		t.Errorf("root times %d..%d, want StartedAt..EndedAt", root.StartTimeUnixNano, root.EndTimeUnixNano)
	}
	if root.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET || len(root.Links) != 0 {
		t.Errorf("ended run: status %v links %v, want UNSET and none", root.Status, root.Links)
	}
	a = attrs(root)
	for k, want := range map[string]string{
		"gen_ai.operation.name":   "invoke_agent",
		"harnessd.run_id":         run,
		"harnessd.goal":           "fix the tests",
		"harnessd.workflow_class": "bugfix",
		"harnessd.status":         "ended",
		"harnessd.end_reason":     "done",
		"harnessd.repo_id":        "repo_1",
		"mcp.session.id":          "sess-1",
		"harnessd.client.name":    "claude-code",
	} {
		if got := a[k].GetStringValue(); got != want {
			t.Errorf("root %s = %q, want %q", k, got, want)
		}
	}
	if a["harnessd.counters.calls"].GetIntValue() != 4 || a["harnessd.counters.failures"].GetIntValue() != 1 {
		t.Errorf("counters: calls %v failures %v", a["harnessd.counters.calls"], a["harnessd.counters.failures"])
	}
	for _, k := range []string{"harnessd.parent_run_id", "harnessd.client.version", "error.type"} {
		if _, ok := a[k]; ok {
			t.Errorf("root %s set without a value", k)
		}
	}

	// Resource, scope, headers.
	for _, rs := range rcv.ResourceSpans() {
		ra := map[string]string{}
		for _, kv := range rs.Resource.GetAttributes() {
			ra[kv.Key] = kv.Value.GetStringValue()
		}
		if ra["service.name"] != "harnessd" || ra["service.version"] != "1.2.3" {
			t.Errorf("resource %v, want service.name harnessd, service.version 1.2.3", ra)
		}
		for _, ss := range rs.ScopeSpans {
			if ss.Scope.GetName() != "github.com/harnessd/harnessd/internal/telemetry" {
				t.Errorf("scope %q", ss.Scope.GetName())
			}
		}
	}
	if h := rcv.Header(); h.Get("Authorization") != "Bearer t0ken" || h.Get("Content-Encoding") != "gzip" {
		t.Errorf("headers %v, want the Authorization given and gzip", h)
	}
	if e.Dropped() != 0 {
		t.Errorf("Dropped = %d, want 0", e.Dropped())
	}
}

func TestRootOfChildAndUnfinishedRuns(t *testing.T) {
	e, rcv := start(t, telemetry.Options{})
	e.Run(messages.RunState{
		RunID: "run_child", ParentRunID: "run_parent", Status: messages.RunDeadline,
		StartedAt: t0, EndedAt: t0.Add(time.Hour),
	})
	root := rcv.Wait(t, 1, wait)[0]
	traceID, parentTrace, parentRoot := telemetry.TraceID("run_child"), telemetry.TraceID("run_parent"), telemetry.SpanID("run_parent")
	if !bytes.Equal(root.TraceId, traceID[:]) || len(root.ParentSpanId) != 0 {
		t.Errorf("child run: trace %x parent %x, want its own trace %x as a root", root.TraceId, root.ParentSpanId, traceID)
	}
	if len(root.Links) != 1 || !bytes.Equal(root.Links[0].TraceId, parentTrace[:]) || !bytes.Equal(root.Links[0].SpanId, parentRoot[:]) {
		t.Errorf("child run links %v, want one to %x/%x", root.Links, parentTrace, parentRoot)
	}
	if got := attrs(root)["harnessd.parent_run_id"].GetStringValue(); got != "run_parent" {
		t.Errorf("harnessd.parent_run_id = %q", got)
	}
	if root.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || root.Status.GetMessage() != "deadline" {
		t.Errorf("deadline run status %v, want ERROR deadline", root.Status)
	}
}

func TestRootCarriesEveryCounter(t *testing.T) {
	e, rcv := start(t, telemetry.Options{})
	e.Run(messages.RunState{RunID: "run_c", Status: messages.RunEnded, StartedAt: t0, EndedAt: t0})
	a := attrs(rcv.Wait(t, 1, wait)[0])
	for f := range reflect.TypeFor[messages.RunCounters]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if _, ok := a["harnessd.counters."+name]; !ok {
			t.Errorf("counter %s (harnessd.counters.%s) not exported", f.Name, name)
		}
	}
}

func TestErrorWithoutCode(t *testing.T) {
	e, rcv := start(t, telemetry.Options{})
	s := op("run_e", "sp_e", "", "run_command")
	s.Outcome = "error"
	e.Span(s)
	got := rcv.Wait(t, 1, wait)[0]
	if got.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("status %v, want ERROR", got.Status)
	}
	if et := attrs(got)["error.type"].GetStringValue(); et != "_OTHER" {
		t.Errorf("error.type = %q, want _OTHER", et)
	}
}

func TestDropsWhenQueueFull(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	e, rcv := start(t, telemetry.Options{QueueSize: 1, BatchTimeout: time.Millisecond, Logger: zap.New(core)})
	held, release := rcv.Hold()
	defer release()

	e.Span(op("run_q", "sp_0", "", "read_file"))
	<-held // the goroutine is busy exporting sp_0 and reads nothing
	for i := range 10 {
		e.Span(op("run_q", "sp_"+string(rune('a'+i)), "", "read_file")) // never blocks
	}
	if got := e.Dropped(); got != 9 {
		t.Errorf("Dropped = %d, want 9 (queue of 1, 10 spans)", got)
	}
	release()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	rcv.Wait(t, 2, wait)
	select {
	case s := <-rcv.Spans():
		t.Errorf("dropped span %q exported", s.Name)
	default:
	}
	if got := logs.FilterMessage("otlp spans dropped").All(); len(got) != 1 || got[0].ContextMap()["dropped"] != int64(9) {
		t.Errorf("logged %v, want one Warn for 9 dropped spans", logs.All())
	}
	e.Span(op("run_q", "sp_late", "", "read_file"))
	if got := e.Dropped(); got != 10 {
		t.Errorf("Dropped after Shutdown = %d, want 10", got)
	}
}

func TestShutdownFlushes(t *testing.T) {
	e, rcv := start(t, telemetry.Options{BatchTimeout: time.Hour})
	for _, id := range []string{"sp_1", "sp_2", "sp_3"} {
		e.Span(op("run_f", id, "", "read_file"))
	}
	e.Run(messages.RunState{RunID: "run_f", Status: messages.RunAbandoned, StartedAt: t0, EndedAt: t0})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// Shutdown returned after the receiver answered: the spans are there.
	n := 0
	for _, rs := range rcv.ResourceSpans() {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	if n != 4 {
		t.Errorf("flushed %d spans, want 4", n)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

func TestShutdownGivesUpAtDeadline(t *testing.T) {
	e, rcv := start(t, telemetry.Options{QueueSize: 8})
	held, release := rcv.Hold()
	defer release()
	e.Span(op("run_d", "sp_1", "", "read_file"))
	<-held
	e.Span(op("run_d", "sp_2", "", "read_file"))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with an ended ctx = %v, want context.Canceled", err)
	}
	// sp_1 was in flight (abandoned, logged); sp_2 was still queued.
	if got := e.Dropped(); got != 1 {
		t.Errorf("Dropped = %d, want 1", got)
	}
}

func TestExportFailureIsLogged(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	e, rcv := start(t, telemetry.Options{Logger: zap.New(core), BatchTimeout: time.Hour})
	rcv.Fail(http.StatusBadRequest) // not retried
	e.Span(op("run_l", "sp_1", "", "read_file"))
	if err := e.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown returned the export failure: %v", err)
	}
	got := logs.FilterMessage("otlp export failed").All()
	if len(got) != 1 || got[0].ContextMap()["spans"] != int64(1) {
		t.Errorf("logged %v, want one Warn for 1 span", logs.All())
	}
}

func TestNilExporter(t *testing.T) {
	var e *telemetry.Exporter
	e.Span(op("run_n", "sp_1", "", "read_file"))
	e.Run(messages.RunState{RunID: "run_n", Status: messages.RunEnded})
	if e.Dropped() != 0 || e.Shutdown(context.Background()) != nil {
		t.Error("nil exporter did something")
	}
}
