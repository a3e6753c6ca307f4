// Package mcpserver exposes harnessd's agent-facing operations as MCP tools
// with the official go-sdk: the daemon serves it over streamable HTTP and
// over its MCP socket (which `harnessd mcp` bridges stdio to). Every tool
// call runs through the request pipeline (harness/op) of the Harness.
package mcpserver

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/harness"
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

// New returns an MCP server whose tools are the agent-facing operations of
// ex, each run by ex.
func New(ex Backend, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "harnessd", Version: version}, &mcp.ServerOptions{
		Instructions: Instructions,
	})
	ss := &sessions{ids: map[*mcp.ServerSession]string{}}
	if c, ok := ex.(sessionCloser); ok {
		ss.closed = c.SessionClosed
	}
	var el *elicitor
	if ap, ok := ex.(approver); ok {
		el = &elicitor{ap: ap, asked: map[string]askedEntry{}}
	}
	for _, o := range ex.Ops() {
		if !o.Agent {
			continue
		}
		name := o.Name
		s.AddTool(ToolOf(o), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if token := req.Params.GetProgressToken(); token != nil {
				var stop func()
				ctx, stop = withProgress(ctx, req, token)
				defer stop()
			}
			ctx = harness.WithCaller(ctx, ss.caller(req.Session))
			out, err := ex.Exec(ctx, name, req.Params.Arguments)
			if err != nil && el != nil {
				// The client's person may decide the approval (elicit.go).
				if res, ok := el.approve(ctx, ex, req, name, err); ok {
					return res, nil
				}
			}
			if err != nil {
				return ErrorResult(err), nil
			}
			return Result(out)
		})
	}
	registerContext(s, ex)
	return s
}

// sessions names the MCP sessions: streamable HTTP sessions by their
// Mcp-Session-Id, the others (stdio over the socket) by an id of their
// own. Every tool call carries its session and the client's clientInfo,
// so it belongs to the session's run.
type sessions struct {
	mu     sync.Mutex
	ids    map[*mcp.ServerSession]string
	n      int
	closed func(id string)
}

func (s *sessions) caller(ss *mcp.ServerSession) harness.Caller {
	if ss == nil {
		return harness.Caller{}
	}
	var c harness.Caller
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		c.Client = harness.Client{Name: p.ClientInfo.Name, Version: p.ClientInfo.Version}
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
