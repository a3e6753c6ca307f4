package suite

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// rawSurface is an MCP client of `harnessd mcp` that is not the go-sdk: a
// newline-delimited JSON-RPC loop with encoding/json, like the minimal
// clients agents embed (TypeScript, Rust, Python). It measures what harnessd
// adds over stdio without the go-sdk client's own decoding (see the MCP
// paragraph of the README). The same client drives Forge's MCP server for
// the side by side (forge.go).
type rawSurface struct {
	name  string // the surface's name
	what  string // the server, for errors: "harnessd mcp"
	cmd   *exec.Cmd
	stdin io.WriteCloser
	tools map[string]bool

	wmu     sync.Mutex // serializes frames on stdin
	mu      sync.Mutex // protects next, wait and err
	next    int64
	wait    map[int64]chan rawReply
	err     error // set when the reader stopped
	readEnd chan struct{}
}

type rawReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rawFrame is any frame the server writes.
type rawFrame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	rawReply
}

func (d *daemonProc) stdioRaw(ctx context.Context) (*rawSurface, error) {
	cmd := exec.Command(d.bin, "mcp", "--data-dir", d.paths.DataDir, "--toolsets", benchToolsets, "--log-level", "warn", "--log-format", "json")
	return startRaw(ctx, SurfaceMCPStdioRaw, "harnessd mcp", cmd, 30*time.Second)
}

// startRaw starts cmd, an MCP server on stdio (what names it in errors),
// and opens a session with it through the raw client: initialize within
// initTimeout, then tools/list. The surface is called name.
func startRaw(ctx context.Context, name, what string, cmd *exec.Cmd, initTimeout time.Duration) (*rawSurface, error) {
	stderr := &tailBuffer{max: 4 << 10}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", name, what, err)
	}
	s := &rawSurface{name: name, what: what, cmd: cmd, stdin: stdin, tools: map[string]bool{}, wait: map[int64]chan rawReply{}, readEnd: make(chan struct{})}
	go s.read(stdout)
	fail := func(err error) (*rawSurface, error) {
		_ = s.Close()
		if msg := stderr.String(); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	if _, err := s.rpc(cctx, "initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "harnessd-bench-raw", "version": "0"},
	}); err != nil {
		return fail(fmt.Errorf("initialize: %w", err))
	}
	if err := s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return fail(err)
	}
	res, err := s.rpc(cctx, "tools/list", map[string]any{})
	if err != nil {
		return fail(fmt.Errorf("list tools: %w", err))
	}
	var l struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &l); err != nil {
		return fail(fmt.Errorf("decode tools/list: %w", err))
	}
	for _, t := range l.Tools {
		s.tools[t.Name] = true
	}
	return s, nil
}

// read dispatches the server's answers to their callers; it answers the
// server's own requests (none is expected here) with "method not found".
func (s *rawSurface) read(r io.Reader) {
	defer close(s.readEnd)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var f rawFrame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			continue
		}
		if len(f.ID) == 0 || string(f.ID) == "null" {
			continue // a notification
		}
		if f.Method != "" {
			_ = s.send(map[string]any{"jsonrpc": "2.0", "id": f.ID, "error": map[string]any{"code": -32601, "message": "not supported by the bench client"}})
			continue
		}
		id, err := strconv.ParseInt(string(f.ID), 10, 64)
		if err != nil {
			continue
		}
		s.mu.Lock()
		ch := s.wait[id]
		delete(s.wait, id)
		s.mu.Unlock()
		if ch != nil {
			ch <- f.rawReply
		}
	}
	s.mu.Lock()
	s.err = errors.Join(errors.New(s.what+" closed its stdout"), sc.Err())
	for id, ch := range s.wait {
		close(ch)
		delete(s.wait, id)
	}
	s.mu.Unlock()
}

func (s *rawSurface) send(frame any) error {
	b, err := json.Marshal(frame)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.stdin.Write(append(b, '\n'))
	return err
}

// rpc sends one request and waits for its answer.
func (s *rawSurface) rpc(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch := make(chan rawReply, 1)
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return nil, err
	}
	s.next++
	id := s.next
	s.wait[id] = ch
	s.mu.Unlock()
	if err := s.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, s.err
		}
		if r.Error != nil {
			return nil, fmt.Errorf("JSON-RPC error %d: %s", r.Error.Code, r.Error.Message)
		}
		return r.Result, nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.wait, id)
		s.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (s *rawSurface) Name() string { return s.name }

func (s *rawSurface) HasOp(op string) bool { return s.tools[op] }

func (s *rawSurface) Call(ctx context.Context, op string, args map[string]any, out any) (sample, error) {
	if args == nil {
		args = map[string]any{}
	}
	start := time.Now()
	raw, err := s.rpc(ctx, "tools/call", map[string]any{"name": op, "arguments": args})
	smp := sample{wall: time.Since(start)}
	if err != nil {
		return smp, callError(ctx, s.Name(), op, err)
	}
	b, isError, err := rawToolBody(raw)
	if err != nil {
		return smp, errs.Wrap(errs.Internal, err, "%s %s: decode result: %v", s.Name(), op, err)
	}
	if len(b) == 0 {
		return smp, errs.New(errs.Internal, "%s %s: the result has no structured content", s.Name(), op)
	}
	return finishCall(smp, s.Name(), op, b, isError, out)
}

// rawToolBody returns the JSON of a tools/call result as a minimal client
// reads it: its first text block when that is a JSON object, else its
// structured content; and whether it is an error result.
func rawToolBody(raw json.RawMessage) (json.RawMessage, bool, error) {
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Structured json.RawMessage `json:"structuredContent"`
		IsError    bool            `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, false, err
	}
	b := res.Structured
	if len(res.Content) > 0 && res.Content[0].Type == "text" && len(res.Content[0].Text) > 0 && res.Content[0].Text[0] == '{' {
		b = json.RawMessage(res.Content[0].Text)
	}
	return b, res.IsError, nil
}

func (s *rawSurface) Close() error {
	s.stdin.Close()
	var err error
	select {
	case <-s.readEnd:
	case <-time.After(5 * time.Second):
		if a := s.cmd.SysProcAttr; a != nil && a.Setpgid {
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // the server's own children too
		} else {
			_ = s.cmd.Process.Kill()
		}
		<-s.readEnd
		err = errors.New(s.what + " did not close its stdout after stdin closed")
	}
	return errors.Join(err, s.cmd.Wait())
}
