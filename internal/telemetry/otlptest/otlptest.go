// Package otlptest is an in-process OTLP/HTTP trace receiver for tests:
// it decodes what exporters POST to /v1/traces and hands the spans to the
// test.
package otlptest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TracesPath is where the receiver takes exports.
const TracesPath = "/v1/traces"

// spanBuffer is how many spans Spans buffers before the receiver waits
// for the test to read.
const spanBuffer = 1 << 16

// Receiver is an OTLP/HTTP trace receiver on a local httptest.Server,
// closed when the test ends.
type Receiver struct {
	srv     *httptest.Server
	spans   chan *tracepb.Span
	closing chan struct{}

	mu       sync.Mutex
	received []*tracepb.ResourceSpans
	header   http.Header
	status   int           // answer every request with it when set
	gate     chan struct{} // requests wait for it to be closed when set
	held     chan struct{} // one value per request that waits at gate
}

// New starts a receiver; it is closed in t.Cleanup. Create it before the
// exporter that sends to it, so the exporter's cleanup (Shutdown) runs
// first.
func New(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{
		spans:   make(chan *tracepb.Span, spanBuffer),
		closing: make(chan struct{}),
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.handle))
	t.Cleanup(func() {
		close(r.closing) // frees held and blocked handlers
		r.srv.Close()
	})
	return r
}

// URL is the receiver's base URL (http://127.0.0.1:port), which exporters
// complete with /v1/traces.
func (r *Receiver) URL() string { return r.srv.URL }

// Spans has every span received, in order.
func (r *Receiver) Spans() <-chan *tracepb.Span { return r.spans }

// ResourceSpans returns everything received so far, with the resources
// and scopes of the spans.
func (r *Receiver) ResourceSpans() []*tracepb.ResourceSpans {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.ResourceSpans(nil), r.received...)
}

// Header returns the headers of the last export received.
func (r *Receiver) Header() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.header.Clone()
}

// Wait returns the next n spans, failing t when they do not arrive
// within timeout.
func (r *Receiver) Wait(t testing.TB, n int, timeout time.Duration) []*tracepb.Span {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	out := make([]*tracepb.Span, 0, n)
	for len(out) < n {
		select {
		case s := <-r.spans:
			out = append(out, s)
		case <-deadline.C:
			t.Fatalf("otlptest: got %d of %d spans within %v", len(out), n, timeout)
		}
	}
	return out
}

// Fail makes the receiver answer every later export with status (0 goes
// back to accepting). The spans of a failed export are not recorded.
func (r *Receiver) Fail(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

// Hold makes later exports wait, after their body is read, until release
// is called (or the test ends); held receives once per export that
// waits. It lets a test keep an exporter busy.
func (r *Receiver) Hold() (held <-chan struct{}, release func()) {
	gate := make(chan struct{})
	ch := make(chan struct{}, spanBuffer)
	r.mu.Lock()
	r.gate, r.held = gate, ch
	r.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			r.mu.Lock()
			if r.gate == gate {
				r.gate, r.held = nil, nil
			}
			r.mu.Unlock()
			close(gate)
		})
	}
}

func (r *Receiver) handle(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != TracesPath {
		http.Error(w, "want POST "+TracesPath, http.StatusNotFound)
		return
	}
	body := io.Reader(req.Body)
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer gz.Close()
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}

	r.mu.Lock()
	r.header = req.Header.Clone()
	status, gate, held := r.status, r.gate, r.held
	r.mu.Unlock()
	if gate != nil {
		select {
		case held <- struct{}{}:
		case <-r.closing:
			return
		}
		select {
		case <-gate:
		case <-r.closing:
			return
		}
	}
	if status != 0 {
		http.Error(w, "otlptest: failing on purpose", status)
		return
	}

	r.mu.Lock()
	r.received = append(r.received, msg.ResourceSpans...)
	r.mu.Unlock()
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				select {
				case r.spans <- s:
				case <-r.closing:
					return
				}
			}
		}
	}

	out, err := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}
