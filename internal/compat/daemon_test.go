package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	buildOnce             sync.Once
	harnessdBin, buildErr = "", error(nil)
	binDir                string
)

// buildHarnessd builds ./cmd/harnessd once per test binary, or takes the
// binary HARNESSD_COMPAT_BIN names (to measure another build).
func buildHarnessd() (string, error) {
	buildOnce.Do(func() {
		if b := os.Getenv("HARNESSD_COMPAT_BIN"); b != "" {
			harnessdBin = b
			return
		}
		harnessdBin = binDir + "/harnessd"
		cmd := exec.Command("go", "build", "-o", harnessdBin, "./cmd/harnessd")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/harnessd: %w\n%s", err, out)
		}
	})
	return harnessdBin, buildErr
}

// lockedBuffer is a daemon's stderr.
type lockedBuffer struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// harnessd is one daemon with an agent's MCP session and a person's
// HTTP client (the token) for approvals.
type harnessd struct {
	dataDir string
	cmd     *exec.Cmd
	stderr  *lockedBuffer
	done    chan struct{}
	s       *mcp.ClientSession
	http    *http.Client // the daemon's unix socket (<data-dir>/harnessd.sock)
	token   string       // <data-dir>/token: a person's
	n       int          // request ids
}

// do sends one request to the daemon's JSON API on its unix socket.
func (h *harnessd) do(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://harnessd"+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := h.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return b, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, tail(string(b), 500))
	}
	return b, nil
}

// startHarnessd starts `harnessd serve` on dataDir with the default
// options plus extra, waits until it answers and connects an MCP session
// through `harnessd mcp`. env is the daemon's environment.
func startHarnessd(dataDir string, env []string, extra ...string) (*harnessd, error) {
	bin, err := buildHarnessd()
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--data-dir", dataDir, "--log-format", "json", "--log-level", "warn"}, extra...)
	h := &harnessd{dataDir: dataDir, cmd: exec.Command(bin, args...), stderr: &lockedBuffer{}, done: make(chan struct{})}
	h.cmd.Env = env
	h.cmd.Stderr = h.stderr
	// If the test binary dies (go test's -timeout), the daemon goes too.
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	sock := filepath.Join(dataDir, "harnessd.sock")
	h.http = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := withTimeout(time.Second)
		_, err := h.do(ctx, http.MethodGet, "/healthz", nil)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-h.done:
			return nil, fmt.Errorf("harnessd serve exited early: %s", tail(h.stderr.String(), 2000))
		default:
		}
		if time.Now().After(deadline) {
			h.stop()
			return nil, fmt.Errorf("harnessd not healthy: %v\n%s", err, tail(h.stderr.String(), 2000))
		}
		time.Sleep(50 * time.Millisecond) // polling a subprocess
	}
	tok, err := os.ReadFile(filepath.Join(dataDir, "token"))
	if err != nil {
		h.stop()
		return nil, fmt.Errorf("read the person's token: %w", err)
	}
	h.token = strings.TrimSpace(string(tok))
	// Every toolset: the corpus registers its checkouts (admin) as the
	// person would, and runs the rest as an agent.
	mc := exec.Command(bin, "mcp", "--data-dir", dataDir, "--log-level", "warn", "--toolsets", "all")
	mc.Env = env
	mc.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cl := mcp.NewClient(&mcp.Implementation{Name: "compat-corpus", Version: "v0"}, nil)
	ctx, cancel := withTimeout(60 * time.Second)
	defer cancel()
	s, err := cl.Connect(ctx, &mcp.CommandTransport{Command: mc}, nil)
	if err != nil {
		h.stop()
		return nil, fmt.Errorf("connect harnessd mcp: %w", err)
	}
	h.s = s
	return h, nil
}

// stop ends the session and the daemon (SIGTERM, then SIGKILL).
func (h *harnessd) stop() {
	if h.s != nil {
		_ = h.s.Close()
	}
	if h.http != nil {
		h.http.CloseIdleConnections()
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.done
	}
}

func (h *harnessd) requestID(what string) string {
	h.n++
	return fmt.Sprintf("compat-%s-%d", what, h.n)
}

// answer is one tool result as the agent sees it.
type answer struct {
	m     map[string]any
	isErr bool
	code  string
	msg   string
	// strs are the string leaves of the structured content.
	strs []string
	// text is the first text block: read_file's file text (its
	// structured content is the metadata).
	text string
}

// call calls a tool. A protocol error becomes an error answer.
func (h *harnessd) call(timeout time.Duration, name string, args map[string]any) answer {
	ctx, cancel := withTimeout(timeout)
	defer cancel()
	return h.callCtx(ctx, name, args)
}

func (h *harnessd) callCtx(ctx context.Context, name string, args map[string]any) answer {
	res, err := h.s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return answer{isErr: true, code: "PROTOCOL_ERROR", msg: err.Error()}
	}
	var a answer
	a.isErr = res.IsError
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			a.text = tc.Text
		}
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &a.m)
	if a.m == nil && res.IsError {
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				a.msg += tc.Text
			}
		}
	}
	collectStrings(a.m, &a.strs)
	if a.isErr {
		if e, ok := a.m["error"].(map[string]any); ok {
			a.code, _ = e["code"].(string)
			a.msg, _ = e["message"].(string)
		}
		if a.code == "" {
			a.code = "TOOL_ERROR"
		}
	}
	return a
}

func collectStrings(v any, into *[]string) {
	switch v := v.(type) {
	case string:
		*into = append(*into, v)
	case map[string]any:
		for _, x := range v {
			collectStrings(x, into)
		}
	case []any:
		for _, x := range v {
			collectStrings(x, into)
		}
	}
}

// get returns the value at a dotted path of the structured result.
func (a answer) get(path string) any {
	var v any = a.m
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func (a answer) str(path string) string {
	s, _ := a.get(path).(string)
	return s
}

func (a answer) num(path string) (int, bool) {
	f, ok := a.get(path).(float64)
	return int(f), ok
}

// redactionField is the largest `redactions` count anywhere in the
// result.
func (a answer) redactionField() int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if f, ok := x.(float64); ok && k == "redactions" && int(f) > n {
					n = int(f)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(a.m)
	return n
}

// errText is the one-line form of an error answer.
func (a answer) errText() string {
	msg := strings.Join(strings.Fields(a.msg), " ")
	if len(msg) > 240 {
		msg = msg[:240] + "…"
	}
	return a.code + ": " + msg
}

// callAsPerson calls a tool; when it answers APPROVAL_REQUIRED, a person
// approves that exact request and the call is retried with the approval.
// The note says so: the case then needs a person, which the default must
// not.
func (h *harnessd) callAsPerson(timeout time.Duration, name string, args map[string]any) (answer, string) {
	a := h.call(timeout, name, args)
	if a.code != "APPROVAL_REQUIRED" {
		return a, ""
	}
	id, _ := a.get("error.details.approval_id").(string)
	note := "needs a person's approval (" + a.errText() + ")"
	if id == "" {
		return a, note
	}
	ctx, cancel := withTimeout(30 * time.Second)
	defer cancel()
	if _, err := h.do(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(id)+"/approve", map[string]string{"by": "compat-corpus", "reason": "benign corpus"}); err != nil {
		return a, note + "; approving failed: " + err.Error()
	}
	args2 := map[string]any{}
	for k, v := range args {
		args2[k] = v
	}
	args2["approval_id"] = id
	return h.call(timeout, name, args2), note
}

// daemonEnv is the environment the daemon and every direct run share.
func daemonEnv() []string { return os.Environ() }

// hasAllowRoot reports whether the daemon knows --allow-root (older
// builds let agents register anything and know no secret_exceptions).
func hasAllowRoot() bool {
	bin, err := buildHarnessd()
	if err != nil {
		return false
	}
	out, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
	return strings.Contains(string(out), "--allow-root")
}
