package telemetry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/messages"
)

// Defaults and limits.
const (
	defaultServiceName  = "harnessd"
	defaultQueueSize    = 4096
	defaultBatchTimeout = 2 * time.Second
	// maxBatch bounds one OTLP request, well below collectors' usual 4 MiB.
	maxBatch = 512
	// requestTimeout bounds one HTTP attempt.
	requestTimeout = 10 * time.Second
)

// retry is short so that a collector that is down costs queued spans
// (dropped and counted) rather than a goroutine stuck for minutes.
var retry = otlptracehttp.RetryConfig{
	Enabled:         true,
	InitialInterval: time.Second,
	MaxInterval:     5 * time.Second,
	MaxElapsedTime:  30 * time.Second,
}

// Options configure an Exporter.
type Options struct {
	// Endpoint is the collector: "http://host:4318", "https://host" or
	// "host:port" (http). /v1/traces is added unless the URL has a path.
	Endpoint string
	// Headers are sent with every export, e.g. authorization. When nil,
	// OTEL_EXPORTER_OTLP_(TRACES_)HEADERS apply.
	Headers map[string]string
	// ServiceName (default "harnessd") and ServiceVersion go on the resource.
	ServiceName, ServiceVersion string
	// Logger gets export failures and drops at Warn; nil = nop.
	Logger *zap.Logger
	// QueueSize bounds the spans waiting for export (0 = 4096); spans
	// beyond it are dropped and counted.
	QueueSize int
	// BatchTimeout is how long a span may wait before it is exported
	// (0 = 2s).
	BatchTimeout time.Duration
}

// Exporter sends run spans to an OTLP/HTTP collector. Span and Run never
// block and never fail: spans go on a bounded queue that one goroutine
// batches and exports. Its methods are safe for concurrent use; on a nil
// *Exporter they do nothing, so callers need not check whether telemetry
// is configured.
type Exporter struct {
	log     *zap.Logger
	res     *resource.Resource
	exp     sdktrace.SpanExporter
	client  *http.Client
	timeout time.Duration

	queue chan sdktrace.ReadOnlySpan
	stop  chan struct{} // closed by Shutdown
	done  chan struct{} // closed when the goroutine returns
	// ctx is the exports' context, cancelled when Shutdown gives up on
	// the flush.
	ctx    context.Context
	cancel context.CancelFunc

	dropped atomic.Int64
	logged  int64 // drops already logged; owned by the goroutine

	// mu is held for reading while a span is enqueued, so that once
	// Shutdown has set closed no span can slip into the queue behind the
	// final flush.
	mu     sync.RWMutex
	closed bool
}

// New checks o, builds the OTLP/HTTP exporter and starts the batching
// goroutine; Shutdown stops it. ctx is used for the start only.
func New(ctx context.Context, o Options) (*Exporter, error) {
	endpoint, err := endpointURL(o.Endpoint)
	if err != nil {
		return nil, err
	}
	if o.ServiceName == "" {
		o.ServiceName = defaultServiceName
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.QueueSize <= 0 {
		o.QueueSize = defaultQueueSize
	}
	if o.BatchTimeout <= 0 {
		o.BatchTimeout = defaultBatchTimeout
	}

	// An own transport, so Shutdown can close its idle connections.
	transport := &http.Transport{}
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		transport = dt.Clone()
	}
	client := &http.Client{Transport: transport, Timeout: requestTimeout}
	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(endpoint),
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression),
		otlptracehttp.WithHTTPClient(client),
		otlptracehttp.WithRetry(retry),
	}
	if o.Headers != nil {
		opts = append(opts, otlptracehttp.WithHeaders(maps.Clone(o.Headers)))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter for %s: %w", endpoint, err)
	}

	attrs := []attribute.KeyValue{semconv.ServiceName(o.ServiceName)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.ServiceVersion))
	}
	e := &Exporter{
		log:     o.Logger,
		res:     resource.NewWithAttributes(semconv.SchemaURL, attrs...),
		exp:     exp,
		client:  client,
		timeout: o.BatchTimeout,
		queue:   make(chan sdktrace.ReadOnlySpan, o.QueueSize),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	go e.loop()
	return e, nil
}

// Span queues one operation of a run for export; when the queue is full
// the span is dropped and counted.
func (e *Exporter) Span(s messages.RunSpan) {
	if e == nil {
		return
	}
	e.enqueue(operationSpan(s, e.res))
}

// Run queues the root span of a run once it is no longer active. Call it
// once per run: a second call exports the same span (same ids) again.
func (e *Exporter) Run(st messages.RunState) {
	if e == nil || st.Status == messages.RunActive {
		return
	}
	e.enqueue(rootSpan(st, e.res))
}

// Dropped counts the spans never handed to the OTLP exporter: the queue
// was full, Shutdown had been called, or Shutdown gave up on its flush.
// Spans of a failed export are logged, not counted.
func (e *Exporter) Dropped() int64 {
	if e == nil {
		return 0
	}
	return e.dropped.Load()
}

// Shutdown exports what is queued, stops the goroutine and shuts the OTLP
// exporter down. When ctx ends first the export in flight is abandoned,
// the rest is dropped and ctx's error returned. Export failures are only
// logged. Calls after the first return nil.
func (e *Exporter) Shutdown(ctx context.Context) error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	first := !e.closed
	e.closed = true
	e.mu.Unlock()
	if !first {
		return nil
	}

	close(e.stop)
	var err error
	select {
	case <-e.done:
	case <-ctx.Done():
		err = fmt.Errorf("otlp flush: %w", ctx.Err())
		e.cancel()
		<-e.done
	}
	e.cancel()
	// The client's Stop only checks ctx; do not report its error twice.
	err = errors.Join(err, e.exp.Shutdown(context.WithoutCancel(ctx)))
	e.client.CloseIdleConnections()
	return err
}

// enqueue adds s to the queue without blocking.
func (e *Exporter) enqueue(s sdktrace.ReadOnlySpan) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if !e.closed {
		select {
		case e.queue <- s:
			return
		default:
		}
	}
	e.dropped.Add(1)
}

// loop batches the queue: a batch is exported when it is full or its
// first span has waited timeout. On stop it drains the queue and returns.
func (e *Exporter) loop() {
	defer close(e.done)
	batch := make([]sdktrace.ReadOnlySpan, 0, maxBatch)
	timer := time.NewTimer(e.timeout)
	timer.Stop()
	for {
		select {
		case s := <-e.queue:
			if len(batch) == 0 {
				timer.Reset(e.timeout)
			}
			batch = append(batch, s)
			if len(batch) < maxBatch {
				continue
			}
		case <-timer.C:
		case <-e.stop:
			timer.Stop()
			e.drain(batch)
			return
		}
		timer.Stop()
		batch = e.export(batch)
	}
}

// drain exports batch and everything still queued. Nothing is added to
// the queue once stop is closed.
func (e *Exporter) drain(batch []sdktrace.ReadOnlySpan) {
	for {
		select {
		case s := <-e.queue:
			batch = append(batch, s)
			if len(batch) == maxBatch {
				batch = e.export(batch)
			}
		default:
			e.export(batch)
			return
		}
	}
}

// export sends batch and returns it emptied for reuse (ExportSpans copies
// the spans into protobuf before it returns).
func (e *Exporter) export(batch []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	if len(batch) > 0 {
		if e.ctx.Err() != nil {
			// Shutdown gave up: do not try (and log) every batch.
			e.dropped.Add(int64(len(batch)))
		} else if err := e.exp.ExportSpans(e.ctx, batch); err != nil {
			e.log.Warn("otlp export failed", zap.Int("spans", len(batch)), zap.Error(err))
		}
	}
	if d := e.dropped.Load(); d != e.logged {
		e.log.Warn("otlp spans dropped", zap.Int64("dropped", d-e.logged), zap.Int64("dropped_total", d))
		e.logged = d
	}
	clear(batch)
	return batch[:0]
}
