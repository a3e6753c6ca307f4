package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/telemetry"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
	"github.com/harnessd/harnessd/surfaces/console"
	httpapi "github.com/harnessd/harnessd/surfaces/http"
	mcpserver "github.com/harnessd/harnessd/surfaces/mcp"
)

// Config configures Serve.
type Config struct {
	DataDir string
	// Listen is an optional loopback TCP address (127.0.0.1:PORT or
	// [::1]:PORT) guarded by the bearer token in <data-dir>/token.
	Listen       string
	ShutdownWait time.Duration
	// LoopThreshold: identical results before LOOP_DETECTED; 0 = off.
	LoopThreshold int
	// PolicyPath is the policy file ("" = <data-dir>/policy.yaml).
	PolicyPath string
	// Sandbox is the confinement of spawned processes: "require", "auto"
	// (the default) or "off".
	Sandbox string
	// OTLPEndpoint exports run spans over OTLP/HTTP ("" = off), e.g.
	// http://127.0.0.1:4318.
	OTLPEndpoint string
	// StoreReserve is the free space kept on the data dir's file system
	// (0 = the default, negative = no check); see harness.Config.
	StoreReserve int64
	// NoClientApprovals keeps approvals out of MCP clients' elicitation
	// (see harness.Config.NoClientApprovals).
	NoClientApprovals bool
	// NoLiveIndex turns the live checkout index off (harness.Config.NoLiveIndex).
	NoLiveIndex bool
	// WatchInstances caps the checkouts watched at once
	// (harness.Config.WatchInstances).
	WatchInstances int
	// AllowRoots are allowed areas (harness.Config.AllowRoots).
	AllowRoots []string
	// Fleet joins the daemon to a fleet on etcd (harness.Config.Fleet).
	Fleet harness.FleetConfig
	// SessionIdle closes a streamable-HTTP MCP session after this long
	// without a request (0 = DefaultSessionIdle).
	SessionIdle time.Duration
	// Ready, if set, is called once the daemon accepts connections.
	Ready func(Paths)
	// StoreFaults makes the store's disk fail or stall (tests only; see
	// harness.Config.StoreFaults).
	StoreFaults *persistence.Faults
	// Abandoned, if set, is called when the shutdown passed its hard
	// deadline, with a channel closed once the abandoned work ended
	// (tests wait on it; the daemon exits without waiting).
	Abandoned func(finished <-chan struct{})
}

// ShutdownMargin is how long the whole shutdown may take beyond its
// ShutdownWait (--shutdown-wait) before Serve gives up on what is left
// (actors stuck in store writes on a frozen disk, a store that does not
// close) and returns ErrShutdownAbandoned: the daemon exits, and what
// was synced replays from the write-ahead log at the next start, as after
// kill -9.
const ShutdownMargin = 5 * time.Second

// ErrShutdownAbandoned is what Serve returns when its shutdown did not end
// within ShutdownWait plus ShutdownMargin (the daemon exits non-zero).
var ErrShutdownAbandoned = errors.New("shutdown did not end within its deadline; work abandoned")

func (c Config) validate() error {
	if c.DataDir == "" {
		return errors.New("data dir is empty")
	}
	if c.Listen != "" {
		host, port, err := net.SplitHostPort(c.Listen)
		if err != nil {
			return fmt.Errorf("--listen %q: %v", c.Listen, err)
		}
		if port == "" {
			return fmt.Errorf("--listen %q: no port", c.Listen)
		}
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("--listen %q: only loopback addresses are allowed (127.0.0.1, [::1], localhost)", c.Listen)
		}
	}
	if c.ShutdownWait < 0 {
		return fmt.Errorf("--shutdown-wait %s is negative", c.ShutdownWait)
	}
	if c.SessionIdle < 0 {
		return fmt.Errorf("--session-idle %s is negative", c.SessionIdle)
	}
	return nil
}

// Serve runs the daemon until ctx is cancelled, then shuts down in the
// order documented on the package.
func Serve(ctx context.Context, cfg Config, lg *zap.Logger) (err error) {
	if err := cfg.validate(); err != nil {
		return err
	}
	if cfg.ShutdownWait == 0 {
		cfg.ShutdownWait = 10 * time.Second
	}
	p := PathsOf(cfg.DataDir)
	if err := os.MkdirAll(p.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	release, held, err := lock(p)
	if err != nil {
		return err
	}
	defer release()

	loops := cfg.LoopThreshold
	if loops <= 0 {
		loops = -1
	}
	// The human credential exists from the first start: people's
	// endpoints need it on every transport.
	token, err := ensureToken(p)
	if err != nil {
		return err
	}
	// Spans leave over OTLP when asked: the exporter sees every run event
	// after the run actor recorded it, never on the call's own path.
	var exp *telemetry.Exporter
	if cfg.OTLPEndpoint != "" {
		if exp, err = telemetry.New(ctx, telemetry.Options{Endpoint: cfg.OTLPEndpoint, ServiceVersion: harness.VersionString(), Logger: lg.Named("otlp")}); err != nil {
			return fmt.Errorf("--otlp-endpoint: %w", err)
		}
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = exp.Shutdown(sctx)
	}()
	var onEvent func(messages.RunEvent)
	if exp != nil {
		onEvent = func(ev messages.RunEvent) {
			switch {
			case ev.Type == "span" && ev.Span != nil:
				exp.Span(*ev.Span)
			case ev.Type == "end" && ev.State != nil:
				exp.Run(*ev.State)
			}
		}
		lg.Info("exporting run spans over OTLP/HTTP", zap.String("endpoint", cfg.OTLPEndpoint))
	}
	h, err := harness.Open(ctx, harness.Config{DataDir: p.DataDir, Logger: lg, LoopThreshold: loops, PolicyPath: cfg.PolicyPath, Sandbox: cfg.Sandbox, RunEvents: onEvent,
		StoreReserve: cfg.StoreReserve, NoClientApprovals: cfg.NoClientApprovals, NoLiveIndex: cfg.NoLiveIndex, WatchInstances: cfg.WatchInstances, AllowRoots: cfg.AllowRoots,
		StoreFaults: cfg.StoreFaults, Fleet: cfg.Fleet})
	if err != nil {
		return err
	}
	for _, l := range h.SandboxStatus() {
		lg.Info("sandbox", zap.String("profile", string(l.Profile)), zap.String("layers", l.String()), zap.Strings("weakened", l.Weakened))
	}
	closeHarness := func() error {
		cctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownWait)
		defer cancel()
		return h.Close(cctx)
	}

	reg := prometheus.NewRegistry()
	metrics := httpapi.NewMetrics(reg, h)
	mcpF := mcpserver.NewFactory(counted{Backend: mcpserver.Local(h), m: metrics}, harness.VersionString())
	// mcphttp.go: both protocol generations; mcpfactory.go: each request's
	// toolsets and role; tasks (job-backed MCP tasks) in front of both.
	tasks := mcpserver.NewTasks(mcpF.Backend())
	mcpHandler := mcpserver.WithTasks(newMCPHTTP(factoryServers(mcpF), cfg.SessionIdle), tasks)
	tokenPath, _ := filepath.Abs(p.Token) // the login page and the log name the real file
	ui := console.New(h, token, console.Options{TokenPath: tokenPath})
	handler := httpapi.Handler(h, httpapi.Options{MCP: mcpHandler, HumanToken: token, Registry: reg, Metrics: metrics, Console: ui})

	// The socket is stale if we hold the lock.
	_ = os.Remove(p.Socket)
	unixLn, err := net.Listen("unix", p.Socket)
	if err != nil {
		return errors.Join(fmt.Errorf("listen on %s: %w", p.Socket, err), closeHarness())
	}
	defer os.Remove(p.Socket)
	if err := os.Chmod(p.Socket, 0o600); err != nil {
		unixLn.Close()
		return errors.Join(fmt.Errorf("chmod socket: %w", err), closeHarness())
	}
	mcpLn, err := listenMCP(p.MCPSocket, mcpF, tasks, lg.Named("mcp"))
	if err != nil {
		unixLn.Close()
		return errors.Join(fmt.Errorf("listen on %s: %w", p.MCPSocket, err), closeHarness())
	}
	defer os.Remove(p.MCPSocket)
	listeners := []net.Listener{unixLn}
	handlers := []http.Handler{handler}
	if cfg.Listen != "" {
		tcpLn, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			unixLn.Close()
			mcpLn.close()
			return errors.Join(fmt.Errorf("listen on %s: %w", cfg.Listen, err), closeHarness())
		}
		listeners = append(listeners, tcpLn)
		handlers = append(handlers, tcpHandler(ui, token, handler))
	}

	baseCtx, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	servers := make([]*http.Server, len(listeners))
	serveErr := make(chan error, len(listeners))
	for i, ln := range listeners {
		srv := &http.Server{
			Handler:           handlers[i],
			ReadHeaderTimeout: 10 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return baseCtx },
			ErrorLog:          zap.NewStdLog(lg.Named("http")),
		}
		servers[i] = srv
		go func(ln net.Listener) {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				serveErr <- err
			}
		}(ln)
	}
	addrs := []string{p.Socket}
	if cfg.Listen != "" {
		addrs = append(addrs, listeners[1].Addr().String())
	}
	lg.Info("harnessd ready", zap.Strings("listen", addrs), zap.String("data_dir", p.DataDir),
		zap.Int("pid", os.Getpid()), zap.String("version", harness.VersionString()))
	if cfg.Listen != "" {
		lg.Info("console", zap.String("url", "http://"+listeners[1].Addr().String()+"/ui"), zap.String("token_file", tokenPath))
	} else {
		lg.Info("console: a browser needs a TCP listener, start with --listen 127.0.0.1:PORT and open http://127.0.0.1:PORT/ui", zap.String("token_file", tokenPath))
	}
	// SIGHUP reloads the policy; a bad file keeps the old one in force.
	// Registered before Ready, so a supervisor may send it at once.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if cfg.Ready != nil {
		cfg.Ready(p)
	}

	// The daemon holds its data dir: once the lock file or the store
	// directory is removed or replaced, writes are refused by the store
	// and the daemon stops, rather than acknowledge writes that vanish
	// while a second daemon starts on the same path.
	lost := make(chan error, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go watchDataDir(watchCtx, dataDirPoll, func() error {
		if err := stillHeld(p, held); err != nil {
			return err
		}
		return h.Store().Check()
	}, lost)

	var runErr error
wait:
	for {
		select {
		case runErr = <-lost:
			lg.Error("the data dir is gone or replaced; refusing new work and shutting down", zap.Error(runErr))
			break wait
		case <-ctx.Done():
			lg.Info("shutting down", zap.Duration("shutdown_wait", cfg.ShutdownWait))
			break wait
		case runErr = <-serveErr:
			lg.Error("server failed; shutting down", zap.Error(runErr))
			break wait
		case <-hup:
			if p, err := h.ReloadPolicy(ctx); err != nil {
				lg.Error("policy reload failed; the previous policy stays in force", zap.Error(err))
			} else {
				lg.Info("policy reloaded on SIGHUP", zap.String("digest", p.Digest), zap.Int("rules", p.Rules))
			}
		}
	}

	// The whole shutdown ends within ShutdownWait plus ShutdownMargin,
	// whatever is stuck: past it, what is left is abandoned (logged) and
	// the daemon exits non-zero.
	steps := &shutdownSteps{}
	finished := make(chan struct{})
	var closeErr error
	go func() {
		defer close(finished)
		closeErr = shutdown(cfg.ShutdownWait, steps, mcpLn, servers, closeHarness, cancelBase)
	}()
	deadline := cfg.ShutdownWait + ShutdownMargin
	hard := time.NewTimer(deadline)
	defer hard.Stop()
	select {
	case <-finished:
	case <-hard.C:
		lg.Error("shutdown did not end within its deadline; exiting with work abandoned (what was synced replays from the store's write-ahead log at the next start, as after kill -9)",
			zap.Duration("deadline", deadline), zap.Strings("abandoned", steps.pending(time.Now())),
			zap.Int("goroutines_in_store_calls", goroutinesIn(allStacks(), storeFrame)))
		if cfg.Abandoned != nil {
			cfg.Abandoned(finished)
		}
		return errors.Join(runErr, fmt.Errorf("%w (%s + %s)", ErrShutdownAbandoned, cfg.ShutdownWait, ShutdownMargin))
	}
	if closeErr != nil {
		lg.Error("close", zap.Error(closeErr))
	} else {
		lg.Info("stopped cleanly")
	}
	return errors.Join(runErr, closeErr)
}

// answerGrace is how long, once the harness closed, the HTTP servers
// may take to finish writing the answers of their last calls.
const answerGrace = time.Second

// shutdown runs the shutdown's steps in order, each marked in steps, and
// returns the harness's close error:
//  1. stop accepting; idle connections close, busy ones finish in 2;
//  2. close the harness: running operations finish, actors drain, the
//     store closes;
//  3. end what is left (MCP sessions and streams) and close the servers.
func shutdown(wait time.Duration, steps *shutdownSteps, mcpLn *mcpSocket, servers []*http.Server, closeHarness func() error, cancelBase context.CancelFunc) error {
	mcpLn.ln.Close()
	shutdownDone := make(chan struct{})
	sctx, cancelShutdown := context.WithTimeout(context.Background(), wait)
	defer cancelShutdown()
	endServers := steps.begin("HTTP servers: connections still open")
	go func() {
		defer close(shutdownDone)
		defer endServers()
		for _, srv := range servers {
			_ = srv.Shutdown(sctx)
		}
	}()
	endHarness := steps.begin("harness close: operations finishing, actors draining (a store write each may hold), store closing")
	closeErr := closeHarness()
	endHarness()
	endMCP := steps.begin("MCP sessions and streams")
	mcpLn.close()
	cancelBase()
	// The harness answered every call it had (lease waiters: UNAVAILABLE,
	// nothing written) and the streams ended; the handlers may still be
	// writing those answers: the servers' Shutdown waits for them a
	// moment before it is cut short (a cut answer is an EOF to its client).
	select {
	case <-shutdownDone:
	case <-time.After(answerGrace):
	}
	cancelShutdown()
	<-shutdownDone
	for _, srv := range servers {
		_ = srv.Close()
	}
	endMCP()
	return closeErr
}

// shutdownSteps records the shutdown's steps still running, so an
// abandoned shutdown can say what it left. Safe for concurrent use.
type shutdownSteps struct {
	mu      sync.Mutex // protects running
	running map[string]time.Time
}

// begin marks step as running from now; the func returned marks it done.
func (s *shutdownSteps) begin(step string) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		s.running = map[string]time.Time{}
	}
	s.running[step] = time.Now()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.running, step)
	}
}

// pending describes the steps still running at now, longest first.
func (s *shutdownSteps) pending(now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := slices.Collect(maps.Keys(s.running))
	slices.SortFunc(names, func(a, b string) int { return s.running[a].Compare(s.running[b]) })
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + " (for " + now.Sub(s.running[n]).Round(time.Millisecond).String() + ")"
	}
	return out
}

// storeFrame names the functions of the store in a goroutine dump.
const storeFrame = "harnessd/persistence.(*"

// allStacks returns the stacks of every goroutine.
func allStacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// goroutinesIn counts the goroutines of dump (runtime.Stack's, blank-line
// separated) with a frame containing frame.
func goroutinesIn(dump []byte, frame string) int {
	n := 0
	for g := range bytes.SplitSeq(dump, []byte("\n\n")) {
		if bytes.Contains(g, []byte(frame)) {
			n++
		}
	}
	return n
}

// dataDirPoll is how often the daemon checks that it still holds its data
// dir (a stat of the lock file and of the store directory).
const dataDirPoll = 250 * time.Millisecond

// watchDataDir runs check every interval until it fails, then sends its
// error on lost.
func watchDataDir(ctx context.Context, interval time.Duration, check func() error, lost chan<- error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := check(); err != nil {
				lost <- err
				return
			}
		}
	}
}

// tcpHandler is what the loopback TCP listener serves: the API behind the
// bearer token, the console behind its own login (a browser cannot send
// the token as a header), GET /healthz open, answering only that the
// daemon is up, and GET /v1/fleet/blobs/ behind the fleet's own
// credential (fleet.BlobHandler checks the fleet secret), as is POST
// /v1/fleet/forward/ (httpapi's forwarded checks it).
func tcpHandler(ui http.Handler, token string, api http.Handler) http.Handler {
	guarded := console.Route(ui, httpapi.RequireToken(token, api))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead)) ||
			(strings.HasPrefix(r.URL.Path, "/v1/fleet/blobs/") && r.Method == http.MethodGet) ||
			(strings.HasPrefix(r.URL.Path, "/v1/fleet/forward/") && r.Method == http.MethodPost) {
			api.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// counted counts the MCP tool calls in the daemon's metrics, beside the
// JSON API's.
type counted struct {
	mcpserver.Backend
	m *httpapi.Metrics
}

func (c counted) Exec(ctx context.Context, op string, args json.RawMessage) (any, error) {
	start := time.Now()
	out, err := c.Backend.Exec(ctx, op, args)
	c.m.Observe("mcp", op, err, time.Since(start))
	return out, err
}

// Approval and DecideApproval pass the client's approvals on (see
// mcpserver's elicit.go).
func (c counted) Approval(ctx context.Context, id string) (*harness.Approval, error) {
	if a, ok := c.Backend.(interface {
		Approval(context.Context, string) (*harness.Approval, error)
	}); ok {
		return a.Approval(ctx, id)
	}
	return nil, errs.New(errs.Unavailable, "approvals in the client are not available")
}

func (c counted) DecideApproval(ctx context.Context, id string, approve bool, by, reason string) (*harness.Approval, error) {
	if a, ok := c.Backend.(interface {
		DecideApproval(context.Context, string, bool, string, string) (*harness.Approval, error)
	}); ok {
		return a.DecideApproval(ctx, id, approve, by, reason)
	}
	return nil, errs.New(errs.Unavailable, "approvals in the client are not available")
}

// SessionClosed passes the end of a session on (its run is detached).
func (c counted) SessionClosed(id string) {
	if sc, ok := c.Backend.(interface{ SessionClosed(string) }); ok {
		sc.SessionClosed(id)
	}
}
