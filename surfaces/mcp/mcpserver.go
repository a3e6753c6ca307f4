// Package mcpserver exposes harnessd's agent-facing operations as MCP tools
// with the official go-sdk: the daemon serves it over streamable HTTP and
// over its MCP socket (which `harnessd mcp` bridges stdio to). Every tool
// call runs through the request pipeline (harness/op) of the Harness.
package mcpserver

import (
	"context"
	"encoding/json"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/op"
)

// Backend is what the server serves: the operations of the registry, and
// how to run one with raw JSON arguments (through the request pipeline).
type Backend interface {
	Ops() []harness.Op
	Exec(ctx context.Context, op string, args json.RawMessage) (any, error)
}

type local struct{ h *harness.Harness }

func (l local) Ops() []harness.Op { return l.h.Registry().All() }

func (l local) Exec(ctx context.Context, op string, args json.RawMessage) (any, error) {
	return l.h.CallOp(ctx, op, args)
}

func (l local) SessionClosed(id string) { l.h.SessionClosed(id) }

// sessionCloser is a Backend that wants to know when a session went away
// (its implicit run is detached and can be resumed).
type sessionCloser interface{ SessionClosed(id string) }

// Local returns the Backend of an open Harness.
func Local(h *harness.Harness) Backend { return local{h} }

// Factory builds MCP servers of one Backend: the tools of every agent
// operation are made once (NewFactory), and one server per distinct
// Options (and kind: stateful sessions, stateless requests) serves them.
// Sessions and approvals asked in the client are the factory's, whichever
// server a call comes through.
//
// Every server holds every tool; what a session lists and may call by
// name is the tools of its toolsets (a receiving middleware filters
// tools/list and answers a call of a hidden tool). A session's own sets
// start as its Options' and change with the toolsets tool; the
// tools/list_changed the SDK then sends every session of the server is
// passed (a sending middleware) only to the sessions whose list changed.
// A server per session would do the same without the filter, but the
// SDK's AddTool re-encodes and parses each tool's input schema
// (validateParamHeaderAnnotations): 0.5 to 2.5 ms per session for core
// alone, against nothing here.
type Factory struct {
	ex       Backend
	version  string
	tools    []toolOf // every agent operation, registry order
	byName   map[string]int
	toolsets *mcp.Tool
	ss       *sessions
	el       *elicitor

	mu      sync.Mutex // protects servers
	servers map[serverKey]*served
}

// serverKey names a factory's server: its Options and its kind.
type serverKey struct {
	options   string
	stateless bool
}

// toolOf is an operation's MCP tool and its toolset.
type toolOf struct {
	tool *mcp.Tool
	set  op.Toolset
}

// NewFactory returns the factory of ex's servers: it makes every agent
// operation's tool once.
func NewFactory(ex Backend, version string) *Factory {
	f := &Factory{ex: ex, version: version, byName: map[string]int{}, toolsets: toolsetsTool(),
		ss: &sessions{ids: map[*mcp.ServerSession]string{}}, servers: map[serverKey]*served{}}
	if c, ok := ex.(sessionCloser); ok {
		f.ss.closed = c.SessionClosed
	}
	if ap, ok := ex.(approver); ok {
		f.el = &elicitor{ap: ap, asked: map[string]askedEntry{}}
	}
	for _, o := range ex.Ops() {
		if !o.Agent {
			continue
		}
		set := o.Toolset
		if set == "" {
			set = op.Core
		}
		f.byName[o.Name] = len(f.tools)
		f.tools = append(f.tools, toolOf{tool: ToolOf(o), set: set})
	}
	return f
}

// Backend returns what f's servers serve (for what answers beside the
// go-sdk on the same connection: tasks).
func (f *Factory) Backend() Backend { return f.ex }

// Session returns the server for stateful sessions (streamable HTTP with
// a session id, a connection of the MCP socket) with Options o: one per
// distinct o, made on first use. Each of its sessions starts with o's
// toolsets and switches its own with the toolsets tool. o's bad values
// panic: validate them with ParseToolsets, ParseRole or
// OptionsFromRequest first.
func (f *Factory) Session(o Options) *mcp.Server { return f.server(o, false) }

// Shared returns the server for stateless requests with Options o: one
// per distinct o, made on first use. Its toolsets are fixed (the request
// chooses them); the implicit run of its calls is keyed by the client
// that the request names in its _meta (sessions.caller).
func (f *Factory) Shared(o Options) *mcp.Server { return f.server(o, true) }

// New returns an MCP server whose tools are the agent-facing operations of
// ex of the toolsets o names (default: core), each run by ex, for stateful
// sessions: NewFactory(ex, version).Session(o).
func New(ex Backend, version string, o ...Options) *mcp.Server {
	var opts Options
	if len(o) > 0 {
		opts = o[0]
	}
	return NewFactory(ex, version).Session(opts)
}

func (f *Factory) server(o Options, stateless bool) *mcp.Server { return f.served(o, stateless).s }

// served returns the server with Options o of the kind stateless says,
// made on first use.
func (f *Factory) served(o Options, stateless bool) *served {
	if err := o.check(); err != nil {
		panic("mcpserver: " + err.Error())
	}
	k := serverKey{options: o.key(), stateless: stateless}
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.servers[k]; ok {
		return v
	}
	v := f.build(o, stateless)
	f.servers[k] = v
	return v
}

// Connect serves t (a connection of the daemon's MCP socket) as a
// stateful session of the server with Options o, whose plain tool calls
// t answers beside the go-sdk (fastcall.go).
func (f *Factory) Connect(ctx context.Context, o Options, t *StreamTransport) (*mcp.ServerSession, error) {
	v := f.served(o, false)
	ss, err := v.s.Connect(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	if c := t.conn; c != nil {
		c.fast.Store(newFastPath(v, ss, c.writeFrame))
	}
	return ss, nil
}

// served is one server's state: its sessions' role, whether its requests
// are stateless, the toolsets a session starts with, and the sessions
// that changed theirs.
type served struct {
	f         *Factory
	s         *mcp.Server
	handlers  map[string]mcp.ToolHandler // each operation's tool's
	role      string                     // the Caller's role, "" = operator
	stateless bool
	sets      map[op.Toolset]bool // a session's toolsets until it changes them

	mu      sync.Mutex // protects changed
	changed map[*mcp.ServerSession]*sessionSets
}

// sessionSets are the toolsets of a session that changed them, and
// whether its client is owed tools/list_changed.
type sessionSets struct {
	on     map[op.Toolset]bool
	notify bool
}

func (f *Factory) build(o Options, stateless bool) *served {
	s := mcp.NewServer(&mcp.Implementation{Name: "harnessd", Version: f.version}, &mcp.ServerOptions{
		Instructions: Instructions,
		SetCacheable: cacheable,
	})
	v := &served{f: f, s: s, handlers: map[string]mcp.ToolHandler{}, role: o.RoleName(), stateless: stateless, sets: map[op.Toolset]bool{}, changed: map[*mcp.ServerSession]*sessionSets{}}
	for _, t := range o.sets() {
		v.sets[t] = true
	}
	s.AddReceivingMiddleware(v.receiving)
	s.AddSendingMiddleware(v.sending)
	s.AddTool(f.toolsets, v.toolsets)
	for i := range f.tools {
		name := f.tools[i].tool.Name
		v.handlers[name] = v.handler(name)
		s.AddTool(f.tools[i].tool, v.handlers[name])
	}
	registerContext(s, f.ex)
	return v
}

// ListTTL is how long a client may cache server/discover and the lists
// (tools, prompts, resources): they change only with the daemon's
// version or a session's toolsets, and a session that changes its
// toolsets is sent tools/list_changed, which drops a client's cache.
const ListTTL = time.Hour

// cacheable sets the 2026-07-28 cache hints: the lists and discover are
// fresh for ListTTL, private to the client (what it lists depends on its
// toolsets and role); a resource read (a run's assembled context) is
// stale at once.
func cacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	switch req.(type) {
	case *mcp.ReadResourceRequest:
		c.TTLMs, c.CacheScope = 0, "private"
	default:
		c.TTLMs, c.CacheScope = int(ListTTL/time.Millisecond), "private"
	}
}

// enabled reports whether session ss has toolset t.
func (v *served) enabled(ss *mcp.ServerSession, t op.Toolset) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if c, ok := v.changed[ss]; ok {
		return c.on[t]
	}
	return v.sets[t]
}

// hidden reports whether name is an operation's tool whose set session ss
// has not enabled, and the set.
func (v *served) hidden(ss *mcp.ServerSession, name string) (op.Toolset, bool) {
	i, ok := v.f.byName[name]
	if !ok {
		return "", false
	}
	set := v.f.tools[i].set
	return set, !v.enabled(ss, set)
}

// receiving lists a session the tools of its toolsets, and answers a call
// of a tool of a set it has not enabled with an error naming the set, and
// a call of a tool there is not with the nearest tool names, instead of
// the SDK's bare "unknown tool".
func (v *served) receiving(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				if set, hidden := v.hidden(r.Session, r.Params.Name); hidden {
					return ErrorResult(hiddenError(r.Params.Name, set, v.stateless)), nil
				}
				if _, known := v.f.byName[r.Params.Name]; !known && r.Params.Name != ToolsetsTool {
					return nil, v.f.unknownTool(r.Params.Name)
				}
			}
		case "tools/list":
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				out := *lr
				out.Tools = make([]*mcp.Tool, 0, len(lr.Tools))
				for _, t := range lr.Tools {
					if _, hidden := v.hidden(req.GetSession().(*mcp.ServerSession), t.Name); !hidden {
						out.Tools = append(out.Tools, t)
					}
				}
				return &out, nil
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// sending passes tools/list_changed only to the sessions whose toolsets
// changed since the last one.
func (v *served) sending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "notifications/tools/list_changed" {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			v.mu.Lock()
			c, ok := v.changed[ss]
			owed := ok && c.notify
			if owed {
				c.notify = false
			}
			v.mu.Unlock()
			if !owed {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}

// handler runs the operation name for a call of its tool.
func (v *served) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if token := req.Params.GetProgressToken(); token != nil {
			var stop func()
			ctx, stop = withProgress(ctx, req, token)
			defer stop()
		}
		c := v.f.ss.caller(req.Session, v.stateless)
		c.Role = v.role
		ctx = harness.WithCaller(ctx, c)
		out, err := v.f.ex.Exec(ctx, name, req.Params.Arguments)
		if err != nil && v.f.el != nil {
			// The client's person may decide the approval (elicit.go).
			if res, ok := v.f.el.approve(ctx, v.f.ex, req, name, err); ok {
				return res, nil
			}
		}
		if err != nil {
			return ErrorResult(err), nil
		}
		return Result(out)
	}
}

// toolsets is the toolsets tool: it enables and disables the sets its
// input names for the calling session (not on a stateless server, whose
// requests choose their sets), and answers every set with its tools.
func (v *served) toolsets(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	_, enable, disable, err := decodeToolsetsArgs(req.Params.Arguments)
	if err == nil && v.stateless && len(enable)+len(disable) > 0 {
		err = errs.New(errs.InvalidArgument, "toolsets: a stateless request cannot change the session's toolsets: choose them with ?toolsets= on the MCP URL (or the Harnessd-Toolsets header)")
	}
	if err != nil {
		return ErrorResult(err), nil
	}
	ss := req.Session
	v.mu.Lock()
	c, known := v.changed[ss]
	if !known {
		c = &sessionSets{on: maps.Clone(v.sets)}
	}
	changed := false
	for _, t := range enable {
		changed = changed || !c.on[t]
		c.on[t] = true
	}
	for _, t := range disable {
		changed = changed || c.on[t]
		delete(c.on, t)
	}
	if changed {
		c.notify = true
		if !known {
			v.changed[ss] = c
		}
	}
	res := ToolsetsResult{Role: "operator"}
	if v.role != "" {
		res.Role = v.role
	}
	for _, set := range op.Toolsets() {
		info := ToolsetInfo{Name: string(set), Enabled: c.on[set], Tools: []string{}}
		if set == op.Core {
			info.Tools = append(info.Tools, ToolsetsTool)
		}
		for i := range v.f.tools {
			if v.f.tools[i].set == set {
				info.Tools = append(info.Tools, v.f.tools[i].tool.Name)
			}
		}
		res.Toolsets = append(res.Toolsets, info)
	}
	v.mu.Unlock()
	if changed {
		if !known && ss != nil {
			// The session's sets go with it; the goroutine ends with it.
			go func() {
				_ = ss.Wait()
				v.mu.Lock()
				delete(v.changed, ss)
				v.mu.Unlock()
			}()
		}
		// Putting the toolsets tool back in place is a change of the
		// server's list: the SDK sends tools/list_changed (debounced),
		// which sending passes to the sessions that are owed one.
		v.s.AddTool(v.f.toolsets, v.toolsets)
	}
	return Result(&res)
}

// sessions names the MCP sessions: streamable HTTP sessions by their
// Mcp-Session-Id, the others (stdio over the socket) by an id of their
// own. Every tool call carries its session and the client's clientInfo,
// so it belongs to the session's run. A stateless request (MCP
// 2026-07-28) has no session: its calls are keyed by the client its _meta
// names, so one client's calls share its implicit run (an explicit run_id
// always wins), and a request naming no client belongs to no implicit run.
type sessions struct {
	mu     sync.Mutex
	ids    map[*mcp.ServerSession]string
	n      int
	closed func(id string)
}

// StatelessSession is the session key of the stateless requests of a
// client: its name and version as its requests' _meta name them.
func StatelessSession(c harness.Client) string {
	if c.Name == "" {
		return ""
	}
	return "mcp-client:" + c.Name + "/" + c.Version
}

func (s *sessions) caller(ss *mcp.ServerSession, stateless bool) harness.Caller {
	if ss == nil {
		return harness.Caller{}
	}
	var c harness.Caller
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		c.Client = harness.Client{Name: p.ClientInfo.Name, Version: p.ClientInfo.Version}
	}
	if stateless {
		// The request's session ends with it: nothing to remember or
		// detach. A legacy client's session id (when the handler passes
		// it on) still names its session.
		if c.Session = ss.ID(); c.Session == "" {
			c.Session = StatelessSession(c.Client)
		}
		return c
	}
	s.mu.Lock()
	id, ok := s.ids[ss]
	if !ok {
		id = ss.ID()
		if id == "" {
			s.n++
			id = "mcp-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(s.n)
		}
		s.ids[ss] = id
	}
	s.mu.Unlock()
	if !ok {
		// The session's end detaches its run; the goroutine ends with it.
		go func() {
			_ = ss.Wait()
			s.mu.Lock()
			delete(s.ids, ss)
			s.mu.Unlock()
			if s.closed != nil {
				s.closed(id)
			}
		}()
	}
	c.Session = id
	return c
}

// HeartbeatEvery is how often a tool call that is still running sends a
// progress notification (when the client asked for progress), so client
// request timeouts do not fire while a job or check runs.
var HeartbeatEvery = 5 * time.Second

// withProgress sends the operation's own progress reports, and a heartbeat
// while it is silent, as MCP progress notifications for token.
func withProgress(ctx context.Context, req *mcp.CallToolRequest, token any) (context.Context, func()) {
	var mu sync.Mutex // protects last and seq
	last, seq := time.Now(), 0.0
	notify := func(progress, total float64, msg string) {
		mu.Lock()
		seq++
		if progress < seq {
			progress = seq // progress must increase with every notification
		}
		seq = progress
		last = time.Now()
		mu.Unlock()
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Total: total, Message: msg})
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(HeartbeatEvery)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				mu.Lock()
				quiet := now.Sub(last) >= HeartbeatEvery
				mu.Unlock()
				if quiet {
					notify(0, 0, "still running ("+now.Sub(start).Round(time.Second).String()+")")
				}
			}
		}
	}()
	return harness.WithProgress(ctx, notify), func() { close(done); <-stopped }
}
