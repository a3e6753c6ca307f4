// Package httpapi serves harnessd's JSON API: POST /v1/<operation> for every
// operation, GET /v1/status, GET /v1/ops, GET /healthz and GET /metrics,
// plus the MCP streamable HTTP handler at /mcp.
package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/internal/jsonx"
)

// MaxBody bounds a request body.
const MaxBody = 8 << 20

// Options configures Handler.
type Options struct {
	// MCP is mounted at /mcp when non-nil.
	MCP http.Handler
	// Console is the web console (surfaces/console), mounted at
	// /ui/ when non-nil; it logs people in itself. The daemon passes it in
	// (as it does MCP): the surfaces are siblings, and the console is mounted by the daemon.
	Console http.Handler
	// Registry receives the API's metrics; nil = a private registry.
	Registry *prometheus.Registry
	// Metrics are shared with the MCP server (see NewMetrics); nil = new
	// metrics on Registry.
	Metrics *Metrics
	// HumanToken is the human credential (the data dir's token): people's
	// endpoints (approvals, policy, audit, store dump) require it on every
	// transport, the unix socket included, so no process the daemon
	// started can approve its own request. "" = those endpoints refuse.
	HumanToken string
}

type api struct {
	h     *harness.Harness
	token string
	m     *Metrics
}

// Metrics counts the operations served, by surface (http, mcp), and
// reports the daemon's gauges (runs, jobs, leases, pending approvals) at
// every scrape.
type Metrics struct {
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// NewMetrics registers the operation metrics and the gauges of h on reg.
func NewMetrics(reg *prometheus.Registry, h *harness.Harness) *Metrics {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harnessd_operations_total", Help: "Operations served, by surface (http, mcp), operation and result code.",
		}, []string{"surface", "operation", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "harnessd_operation_seconds", Help: "Operation latency, by surface and operation.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .05, .1, .5, 1, 5, 15},
		}, []string{"surface", "operation"}),
	}
	reg.MustRegister(m.calls, m.latency, gauges{h: h}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Observe counts one operation of surface that ended with err after d.
func (m *Metrics) Observe(surface, op string, err error, d time.Duration) {
	if m == nil {
		return
	}
	code := "OK"
	if err != nil {
		code = string(errs.CodeOf(err))
	}
	m.calls.WithLabelValues(surface, op, code).Inc()
	m.latency.WithLabelValues(surface, op).Observe(d.Seconds())
}

var (
	descRuns      = prometheus.NewDesc("harnessd_runs_active", "Runs that have not ended.", nil, nil)
	descJobs      = prometheus.NewDesc("harnessd_jobs", "Durable jobs by state.", []string{"state"}, nil)
	descLeases    = prometheus.NewDesc("harnessd_leases", "Write leases held.", nil, nil)
	descApprovals = prometheus.NewDesc("harnessd_approvals_pending", "Approval requests waiting for a person.", nil, nil)
	descJobCPU    = prometheus.NewDesc("harnessd_job_cpu_seconds_total", "CPU time (user+system) of the ended jobs on record, durable checks included.", nil, nil)
	descJobIO     = prometheus.NewDesc("harnessd_job_io_bytes_total", "Storage I/O of the ended jobs on record, by direction (read, write).", []string{"direction"}, nil)
	descJobPeak   = prometheus.NewDesc("harnessd_job_peak_rss_bytes", "The largest peak resident memory of one ended job on record.", nil, nil)
)

// gauges reads the daemon's state at scrape time.
type gauges struct{ h *harness.Harness }

func (g gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRuns
	ch <- descJobs
	ch <- descLeases
	ch <- descApprovals
	ch <- descJobCPU
	ch <- descJobIO
	ch <- descJobPeak
}

func (g gauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v := g.h.Gauges(ctx)
	ch <- prometheus.MustNewConstMetric(descRuns, prometheus.GaugeValue, float64(v.RunsActive))
	ch <- prometheus.MustNewConstMetric(descJobs, prometheus.GaugeValue, float64(v.JobsQueued), "queued")
	ch <- prometheus.MustNewConstMetric(descJobs, prometheus.GaugeValue, float64(v.JobsRunning), "running")
	ch <- prometheus.MustNewConstMetric(descLeases, prometheus.GaugeValue, float64(v.Leases))
	ch <- prometheus.MustNewConstMetric(descApprovals, prometheus.GaugeValue, float64(v.ApprovalsPending))
	e := v.JobsEnded
	ch <- prometheus.MustNewConstMetric(descJobCPU, prometheus.CounterValue, float64(e.CPUMs)/1000)
	ch <- prometheus.MustNewConstMetric(descJobIO, prometheus.CounterValue, float64(e.IOReadBytes), "read")
	ch <- prometheus.MustNewConstMetric(descJobIO, prometheus.CounterValue, float64(e.IOWriteBytes), "write")
	ch <- prometheus.MustNewConstMetric(descJobPeak, prometheus.GaugeValue, float64(e.PeakRSSBytes))
}

// Handler returns the daemon's HTTP handler.
func Handler(h *harness.Harness, o Options) http.Handler {
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := o.Metrics
	if m == nil {
		m = NewMetrics(reg, h)
	}
	a := &api{h: h, token: o.HumanToken, m: m}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /v1/status", a.status)
	mux.HandleFunc("GET /v1/ops", a.ops)
	mux.HandleFunc("GET /v1/repositories", func(w http.ResponseWriter, r *http.Request) { a.call(w, r, "repository_list", []byte("{}")) })
	mux.HandleFunc("POST /v1/{op}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			writeError(w, errs.New(errs.InvalidArgument, "request body: %v", err))
			return
		}
		a.call(w, r, r.PathValue("op"), body)
	})
	if n := h.Fleet(); n != nil {
		// Evidence blobs for the other nodes of the fleet: their own
		// credential (the fleet secret), not the human token.
		mux.Handle("GET /v1/fleet/blobs/", fleet.BlobHandler(n))
		// Operations forwarded to this node, the home of their repository
		// (fleetforward.go): the fleet secret too.
		mux.HandleFunc("POST "+fleet.ForwardPath+"{op}", a.forwarded(n))
	}
	if o.MCP != nil {
		mux.Handle("/mcp", o.MCP)
	}
	if o.Console != nil {
		mux.Handle("/ui/", o.Console)
		mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusSeeOther))
	}
	// People's endpoints need the human token on every transport.
	people := guardedMux{mux: mux, token: o.HumanToken}
	humanRoutes(people, h, o.HumanToken) // approvals, policy reload, audit
	storeRoutes(people, h)               // store dump
	jobRoutes(mux, h)                    // log streaming
	runRoutes(mux, h)                    // runs, spans and their events
	return mux
}

// guardedMux registers handlers that require the human token.
type guardedMux struct {
	mux   *http.ServeMux
	token string
}

// HandleFunc registers f behind RequireToken.
func (g guardedMux) HandleFunc(pattern string, f http.HandlerFunc) {
	g.mux.Handle(pattern, RequireToken(g.token, f))
}

func (a *api) call(w http.ResponseWriter, r *http.Request, op string, body []byte) {
	start := time.Now()
	ctx := r.Context()
	if HasToken(a.token, r) {
		// The human credential: a person's call (the harness CLI), whose
		// registrations are that person's grants.
		ctx = harness.AsPerson(ctx, "http (token "+TokenFingerprint(a.token)+")")
	}
	out, err := a.h.CallOp(ctx, op, body)
	if _, known := a.h.Registry().Lookup(op); known {
		a.m.Observe("http", op, err, time.Since(start))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

func (a *api) status(w http.ResponseWriter, r *http.Request) {
	st, err := a.h.Status(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

type opInfo struct {
	Name         string `json:"name"`
	Title        string `json:"title"`
	Description  string `json:"description"`
	ReadOnly     bool   `json:"read_only"`
	Destructive  bool   `json:"destructive"`
	Idempotent   bool   `json:"idempotent"`
	Agent        bool   `json:"agent"`
	InputSchema  any    `json:"input_schema"`
	OutputSchema any    `json:"output_schema,omitempty"`
}

func (a *api) ops(w http.ResponseWriter, r *http.Request) {
	var out []opInfo
	for _, o := range a.h.Registry().All() {
		info := opInfo{Name: o.Name, Title: o.Title, Description: o.Description, ReadOnly: o.ReadOnly, Destructive: o.Destructive,
			Idempotent: o.Idempotent, Agent: o.Agent, InputSchema: o.InputSchema}
		if o.OutputSchema != nil {
			info.OutputSchema = o.OutputSchema
		}
		out = append(out, info)
	}
	writeJSON(w, http.StatusOK, map[string]any{"operations": out})
}

// WriteError writes err as a JSON error response with its HTTP status.
func WriteError(w http.ResponseWriter, err error) { writeError(w, err) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := jsonx.Marshal(v)
	if err != nil {
		writeError(w, errs.Wrap(errs.Internal, err, "encode result: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, err error) {
	e := errs.From(err)
	writeJSON(w, StatusOf(e.Code), map[string]any{"error": e})
}

// StatusOf maps an error code to an HTTP status.
func StatusOf(c errs.Code) int {
	switch c {
	case errs.InvalidArgument, errs.RequestIDRequired, errs.NotAGitRepository, errs.IsDirectory:
		return http.StatusBadRequest
	case errs.NotFound, errs.RepositoryNotRegistered:
		return http.StatusNotFound
	case errs.PathOutsideRoot, errs.SecretPathDenied, errs.PathNotAllowed, errs.PolicyDenied, errs.RoleDenied, errs.ApprovalRequired:
		return http.StatusForbidden
	case errs.RouteRejected, errs.RouteDurableRequired, errs.LoopDetected:
		return http.StatusUnprocessableEntity
	case errs.MutationBusy, errs.RequestConflict, errs.RequestInProgress, errs.PatchConflict, errs.LeaseLost, errs.RequestOutcomeUnknown:
		return http.StatusConflict
	case errs.Timeout:
		return http.StatusGatewayTimeout
	case errs.Unavailable:
		return http.StatusServiceUnavailable
	case errs.Cancelled:
		return 499
	case errs.Unauthenticated:
		return http.StatusUnauthorized
	case errs.BudgetExceeded:
		return http.StatusTooManyRequests
	case errs.RunEnded:
		return http.StatusGone
	case errs.Deadlock:
		return http.StatusConflict
	case errs.VerificationRequired:
		return http.StatusPreconditionFailed
	case errs.RetryLimit:
		return http.StatusTooManyRequests
	case errs.StorageFull:
		return http.StatusInsufficientStorage
	case errs.StoreDamaged, errs.StorageUnavailable:
		return http.StatusServiceUnavailable
	case errs.RepositoryMoved, errs.TargetMoved:
		return http.StatusConflict
	case errs.RevertConflict, errs.PushRejected:
		return http.StatusConflict
	case errs.RemoteAuthFailed:
		return http.StatusBadGateway
	case errs.ConcurrentModification:
		return http.StatusConflict
	case errs.GitIdentityRequired:
		return http.StatusPreconditionFailed
	case errs.JobFailed, errs.CheckFailed:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

// HasToken reports whether r carries "Authorization: Bearer <token>"
// (compared in constant time); an empty token is never carried.
func HasToken(token string, r *http.Request) bool {
	scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return token != "" && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

// RequireToken wraps next so every request must carry
// "Authorization: Bearer <token>" (the scheme case-insensitive, the token
// compared in constant time). An empty token lets nothing through.
func RequireToken(token string, next http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		if token == "" || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="harnessd"`)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": errs.New(errs.Unauthenticated,
				"missing or wrong bearer token: send Authorization: Bearer <the contents of <data-dir>/token> (the harness CLI does)")})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TokenFingerprint names a token in the audit log without revealing it.
func TokenFingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:6])
}
