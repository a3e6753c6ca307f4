package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
)

// The surface names.
const (
	SurfaceInproc   = "inproc"
	SurfaceMCPStdio = "mcp-stdio"
	SurfaceMCPHTTP  = "mcp-http"
	// SurfaceMCPStdioRaw is mcp-stdio with a minimal JSON-RPC client in
	// place of the go-sdk's (rawmcp.go): what harnessd adds on stdio.
	SurfaceMCPStdioRaw = "mcp-stdio-raw"
	// SurfaceForgeMCPStdioRaw is Forge's MCP server (the peer) through the
	// client of mcp-stdio-raw, on the same fixture (forge.go).
	SurfaceForgeMCPStdioRaw = "forge-mcp-stdio-raw"
	// SurfaceFSMCPStdioRaw is the official @modelcontextprotocol/server-filesystem
	// through the client of mcp-stdio-raw, on the same fixture (fsmcp.go).
	SurfaceFSMCPStdioRaw = "fs-mcp-stdio-raw"
)

// AllSurfaces lists every surface in run order.
var AllSurfaces = []string{SurfaceInproc, SurfaceMCPStdio, SurfaceMCPHTTP, SurfaceMCPStdioRaw}

// OptInSurfaces are run only when --surfaces names them.
var OptInSurfaces = []string{SurfaceForgeMCPStdioRaw, SurfaceFSMCPStdioRaw}

// numSegments is the number of latency segments a result reports.
const numSegments = 6

// sample is one measured call (or one iteration of calls, summed).
type sample struct {
	wall   time.Duration        // measured by the client around the call
	server float64              // latency.total_ms the operation reported
	seg    [numSegments]float64 // the reported segments
}

func (s *sample) add(o sample) {
	s.server += o.server
	for i := range s.seg {
		s.seg[i] += o.seg[i]
	}
}

// surface is one way to reach harnessd. Implementations are safe for
// concurrent use.
type surface interface {
	Name() string
	// Call runs op with args, timing it from the client's side. The result
	// is decoded into out (when non-nil) after the clock stops. A failed
	// operation returns its coded error.
	Call(ctx context.Context, op string, args map[string]any, out any) (sample, error)
	// HasOp reports whether the surface offers op.
	HasOp(op string) bool
	Close() error
}

// register registers root through s and returns its repo_id.
func register(ctx context.Context, s surface, root string) (string, error) {
	var r struct {
		RepoID string `json:"repo_id"`
	}
	if _, err := s.Call(ctx, "repository_register", map[string]any{"path": root}, &r); err != nil {
		return "", fmt.Errorf("%s: register %s: %w", s.Name(), root, err)
	}
	if r.RepoID == "" {
		return "", fmt.Errorf("%s: register %s: no repo_id in the result", s.Name(), root)
	}
	return r.RepoID, nil
}

// latencyOf converts a reported latency to sample fields.
func (s *sample) setLatency(l harness.Latency) {
	s.server = l.TotalMs
	for i, p := range []*float64{l.RoutingMs, l.PolicyMs, l.SnapshotMs, l.ExecutionMs, l.ReceiptMs, l.SandboxMs} {
		if p != nil {
			s.seg[i] = *p
		}
	}
}

// inproc calls a Harness in this process through CallOp, with the same
// JSON arguments the MCP surfaces send.
type inproc struct {
	h       *harness.Harness
	dataDir string
}

// openInproc opens a Harness on a new data dir under parent.
func openInproc(ctx context.Context, parent string) (*inproc, error) {
	dir, err := os.MkdirTemp(parent, "harnessd-bench-data-")
	if err != nil {
		return nil, err
	}
	// Loop detection off: the bench repeats identical calls on purpose.
	h, err := harness.Open(ctx, harness.Config{DataDir: dir, LoopThreshold: -1, AllowRoots: []string{parent}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("open harness: %w", err)
	}
	return &inproc{h: h, dataDir: dir}, nil
}

func (s *inproc) Name() string { return SurfaceInproc }

func (s *inproc) HasOp(op string) bool { _, ok := s.h.Registry().Lookup(op); return ok }

var metaType = reflect.TypeFor[harness.Meta]()

func (s *inproc) Call(ctx context.Context, op string, args map[string]any, out any) (sample, error) {
	start := time.Now()
	raw, err := json.Marshal(args)
	if err != nil {
		return sample{}, errs.Wrap(errs.InvalidArgument, err, "encode %s arguments: %v", op, err)
	}
	res, err := s.h.CallOp(ctx, op, raw)
	smp := sample{wall: time.Since(start)}
	if err != nil {
		return smp, err
	}
	// Every result embeds harness.Meta; read it without re-encoding.
	v := reflect.ValueOf(res)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	meta, found := harness.Meta{}, false
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName("Meta"); f.IsValid() && f.Type() == metaType {
			meta, found = f.Interface().(harness.Meta), true
		}
	}
	if !found || out != nil {
		b, err := json.Marshal(res)
		if err != nil {
			return smp, errs.Wrap(errs.Internal, err, "encode %s result: %v", op, err)
		}
		var m struct {
			Latency harness.Latency `json:"latency"`
		}
		if err := json.Unmarshal(b, &m); err == nil && !found {
			meta.Latency = m.Latency
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				return smp, errs.Wrap(errs.Internal, err, "decode %s result: %v", op, err)
			}
		}
	}
	smp.setLatency(meta.Latency)
	return smp, nil
}

func (s *inproc) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := s.h.Close(ctx)
	return errors.Join(err, os.RemoveAll(s.dataDir))
}

// mcpSurface is an MCP client session (stdio or streamable HTTP).
type mcpSurface struct {
	name  string
	sess  *mcp.ClientSession
	tools map[string]bool
	after func() // runs after the session closed
}

// connectMCP connects the go-sdk client over t and lists the tools.
func connectMCP(ctx context.Context, name string, t mcp.Transport, after func()) (*mcpSurface, error) {
	cl := mcp.NewClient(&mcp.Implementation{Name: "harnessd-bench", Version: harness.VersionString()}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sess, err := cl.Connect(cctx, t, nil)
	if err != nil {
		if after != nil {
			after()
		}
		return nil, fmt.Errorf("%s: connect: %w", name, err)
	}
	s := &mcpSurface{name: name, sess: sess, tools: map[string]bool{}, after: after}
	for tool, err := range sess.Tools(cctx, nil) {
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("%s: list tools: %w", name, err)
		}
		s.tools[tool.Name] = true
	}
	return s, nil
}

func (s *mcpSurface) Name() string { return s.name }

func (s *mcpSurface) HasOp(op string) bool { return s.tools[op] }

// toolBody is the structured content of any tool result: the latency of a
// success or the error of a failure.
type toolBody struct {
	Latency harness.Latency `json:"latency"`
	Error   *errs.Error     `json:"error"`
}

func (s *mcpSurface) Call(ctx context.Context, op string, args map[string]any, out any) (sample, error) {
	start := time.Now()
	res, err := s.sess.CallTool(ctx, &mcp.CallToolParams{Name: op, Arguments: args})
	smp := sample{wall: time.Since(start)}
	if err != nil {
		return smp, callError(ctx, s.name, op, err)
	}
	b, err := resultJSON(res)
	if err != nil {
		return smp, errs.Wrap(errs.Internal, err, "%s %s: %v", s.name, op, err)
	}
	return finishCall(smp, s.name, op, b, res.IsError, out)
}

// finishCall decodes a tool result's JSON b: the coded error of a failure,
// else the latency into smp and the result into out (when non-nil).
func finishCall(smp sample, surface, op string, b []byte, isError bool, out any) (sample, error) {
	var body toolBody
	if err := json.Unmarshal(b, &body); err != nil {
		return smp, errs.Wrap(errs.Internal, err, "%s %s: decode result: %v", surface, op, err)
	}
	if isError {
		if body.Error == nil || body.Error.Code == "" {
			return smp, errs.New(errs.Internal, "%s %s failed without a coded error: %.200s", surface, op, b)
		}
		return smp, body.Error
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return smp, errs.Wrap(errs.Internal, err, "%s %s: decode result: %v", surface, op, err)
		}
	}
	smp.setLatency(body.Latency)
	return smp, nil
}

// resultJSON returns a tool result's JSON: its text content (harnessd puts
// the structured content there too), else the re-encoded structured content.
func resultJSON(res *mcp.CallToolResult) ([]byte, error) {
	if len(res.Content) > 0 {
		if t, ok := res.Content[0].(*mcp.TextContent); ok && len(t.Text) > 0 && t.Text[0] == '{' {
			return []byte(t.Text), nil
		}
	}
	if res.StructuredContent == nil {
		return nil, errors.New("the result has no structured content")
	}
	return json.Marshal(res.StructuredContent)
}

func (s *mcpSurface) Close() error {
	err := s.sess.Close()
	if s.after != nil {
		s.after()
	}
	return err
}

// callError is a call's transport error: coded as ctx's end when ctx
// ended (CANCELLED or TIMEOUT), else UNAVAILABLE.
func callError(ctx context.Context, surface, op string, err error) error {
	if ctx.Err() != nil {
		return errs.Wrap(errs.CodeOf(ctx.Err()), err, "%s %s: %v", surface, op, err)
	}
	return errs.Wrap(errs.Unavailable, err, "%s %s: %v", surface, op, err)
}
