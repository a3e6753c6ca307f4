package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/testutil"
	httpapi "github.com/harnessd/harnessd/surfaces/http"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the test binary is the launcher of confined checks and jobs
	goleak.VerifyTestMain(m)
}

// humanToken is the human credential of the test handlers.
const humanToken = "human-token-for-tests"

func openHandler(t *testing.T) http.Handler {
	t.Helper()
	h, err := harness.Open(context.Background(), harness.Config{InMemory: true, AllowRoots: []string{os.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close harness: %v", err)
		}
	})
	return httpapi.Handler(h, httpapi.Options{HumanToken: humanToken})
}

// socketPath returns a path for a unix socket, short enough for the
// 108-byte limit whatever the test's name.
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s.sock")
}

// serveUnix serves handler on a fresh unix socket until the test ends and
// returns a client for it.
func serveUnix(t *testing.T, handler http.Handler) *client.Client {
	t.Helper()
	sock := socketPath(t)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	c := client.Unix(sock)
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return c
}

// serveTCP serves handler on loopback TCP until the test ends and returns
// its host:port.
func serveTCP(t *testing.T, handler http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func tcpClient(t *testing.T, addr, token string) *client.Client {
	t.Helper()
	c := client.TCP(addr, token)
	t.Cleanup(c.Close)
	return c
}

func codeOf(t *testing.T, err error) errs.Code {
	t.Helper()
	var e *errs.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *errs.Error", err, err)
	}
	return e.Code
}

func TestUnixCalls(t *testing.T) {
	c := serveUnix(t, openHandler(t))
	ctx := context.Background()
	if c.BaseURL() != "http://harnessd" || c.HTTPClient() == nil {
		t.Errorf("BaseURL = %q, HTTPClient = %v", c.BaseURL(), c.HTTPClient())
	}
	if err := c.Healthy(ctx); err != nil {
		t.Fatalf("Healthy: %v", err)
	}

	root := testutil.Repo(t, map[string]string{"README.md": "hello\n"})
	raw, err := c.Call(ctx, "repository_register", map[string]string{"path": root})
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		RepoID string `json:"repo_id"`
		Root   string `json:"root"`
	}
	if err := json.Unmarshal(raw, &reg); err != nil || reg.RepoID == "" || reg.Root != root {
		t.Fatalf("repository_register = %s (%v)", raw, err)
	}

	// json.RawMessage arguments are sent as they are.
	raw, err = c.Call(ctx, "read_file", json.RawMessage(`{"repo_id":"`+reg.RepoID+`","path":"README.md"}`))
	if err != nil {
		t.Fatal(err)
	}
	var rf struct{ Content string }
	if err := json.Unmarshal(raw, &rf); err != nil || rf.Content != "hello\n" {
		t.Fatalf("read_file = %s (%v)", raw, err)
	}

	// nil arguments are the empty object.
	raw, err = c.Call(ctx, "repository_list", nil)
	if err != nil || !strings.Contains(string(raw), reg.RepoID) {
		t.Fatalf("repository_list = %s, %v", raw, err)
	}
	raw, err = c.Post(ctx, "/v1/repository_list", nil)
	if err != nil || !strings.Contains(string(raw), reg.RepoID) {
		t.Fatalf("Post repository_list = %s, %v", raw, err)
	}
	raw, err = c.Get(ctx, "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Repositories int }
	if err := json.Unmarshal(raw, &st); err != nil || st.Repositories != 1 {
		t.Fatalf("status = %s (%v)", raw, err)
	}
	if _, err := c.GetRaw(ctx, "/v1/store/dump"); errs.CodeOf(err) != errs.Unauthenticated {
		t.Fatalf("store dump without the human token: %v, want UNAUTHENTICATED", err)
	}
	dump, err := c.WithToken(humanToken).GetRaw(ctx, "/v1/store/dump")
	if err != nil || len(dump) == 0 {
		t.Fatalf("store dump = %d bytes, %v", len(dump), err)
	}
}

func TestOperationErrors(t *testing.T) {
	c := serveUnix(t, openHandler(t))
	ctx := context.Background()
	tests := []struct {
		name string
		op   string
		args any
		want errs.Code
	}{
		{"unknown operation", "no_such_op", nil, errs.NotFound},
		{"unregistered repo", "read_file", map[string]string{"repo_id": "nope", "path": "x"}, errs.RepositoryNotRegistered},
		{"bad arguments", "read_file", json.RawMessage(`{"repo_id":`), errs.InvalidArgument},
		{"unencodable arguments", "read_file", map[string]any{"f": func() {}}, errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := c.Call(ctx, tt.op, tt.args)
			if err == nil {
				t.Fatalf("Call = %s, want an error", raw)
			}
			if got := codeOf(t, err); got != tt.want {
				t.Errorf("code %s (%v), want %s", got, err, tt.want)
			}
			if client.IsUnavailable(err) {
				t.Errorf("an operation error counts as unavailable")
			}
		})
	}
	if _, err := c.Post(ctx, "/v1/read_file", map[string]any{"f": func() {}}); codeOf(t, err) != errs.InvalidArgument {
		t.Errorf("Post of an unencodable body: %v", err)
	}
}

func TestDeadSocketIsUnavailable(t *testing.T) {
	c := client.Unix(socketPath(t)) // nothing listens there
	defer c.Close()
	err := c.Healthy(context.Background())
	if err == nil {
		t.Fatal("Healthy on a dead socket succeeded")
	}
	if !client.IsUnavailable(err) || codeOf(t, err) != errs.Unavailable {
		t.Errorf("IsUnavailable(%v) = false", err)
	}
	if _, err := c.Call(context.Background(), "repository_list", nil); !client.IsUnavailable(err) {
		t.Errorf("Call on a dead socket: %v, want UNAVAILABLE", err)
	}
}

func TestIsUnavailable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errs.New(errs.Unavailable, "down"), true},
		{fmt.Errorf("wrapped: %w", errs.New(errs.Unavailable, "down")), true},
		{errs.New(errs.Internal, "boom"), false},
		{errs.New(errs.Timeout, "slow"), false},
		{errors.New("plain"), false},
	}
	for _, tt := range tests {
		if got := client.IsUnavailable(tt.err); got != tt.want {
			t.Errorf("IsUnavailable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestContextEnds(t *testing.T) {
	release := make(chan struct{})
	cancelled := make(chan context.CancelFunc, 1)
	c := serveUnix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case cancel := <-cancelled:
			cancel() // the client's context ends while the request is in flight
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release) }) // before the server closes

	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Call(ctx, "repository_list", nil)
		if got := codeOf(t, err); got != errs.Cancelled {
			t.Errorf("code %s (%v), want CANCELLED", got, err)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v does not wrap context.Canceled", err)
		}
	})
	t.Run("cancelled in flight", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cancelled <- cancel
		_, err := c.Call(ctx, "repository_list", nil)
		if got := codeOf(t, err); got != errs.Cancelled {
			t.Errorf("code %s (%v), want CANCELLED", got, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := c.Get(ctx, "/v1/status")
		if got := codeOf(t, err); got != errs.Timeout {
			t.Errorf("code %s (%v), want TIMEOUT", got, err)
		}
		if client.IsUnavailable(err) {
			t.Errorf("a timeout counts as unavailable")
		}
	})
}

func TestTCPToken(t *testing.T) {
	const token = "s3cr3t-token"
	addr := serveTCP(t, httpapi.RequireToken(token, openHandler(t)))
	ctx := context.Background()

	c := tcpClient(t, addr, token)
	if c.BaseURL() != "http://"+addr {
		t.Errorf("BaseURL = %q", c.BaseURL())
	}
	if err := c.Healthy(ctx); err != nil {
		t.Fatalf("Healthy with the token: %v", err)
	}
	if raw, err := c.Call(ctx, "repository_list", nil); err != nil || !json.Valid(raw) {
		t.Fatalf("repository_list with the token = %s, %v", raw, err)
	}

	for name, tok := range map[string]string{"wrong token": "nope", "no token": ""} {
		t.Run(name, func(t *testing.T) {
			c := tcpClient(t, addr, tok)
			raw, err := c.Call(ctx, "repository_list", nil)
			if err == nil {
				t.Fatalf("Call = %s, want an error", raw)
			}
			if codeOf(t, err) == "" || client.IsUnavailable(err) {
				t.Errorf("error %v: want the server's coded refusal", err)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error %v names the token", err)
			}
		})
	}
}

func TestNonJSONErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		ctype  string
		body   string
		code   errs.Code
		msg    []string // substrings of the message
	}{
		{"plain 502", 502, "text/plain", "upstream fell over\n", errs.Internal, []string{"HTTP 502", "upstream fell over", "/v1/status"}},
		{"JSON without error", 500, "application/json", `{"oops":true}`, errs.Internal, []string{"HTTP 500"}},
		{"error without code", 503, "application/json", `{"error":{"message":"x"}}`, errs.Internal, []string{"HTTP 503"}},
		{"coded error", 409, "application/json", `{"error":{"code":"MUTATION_BUSY","message":"busy"}}`, errs.MutationBusy, []string{"busy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := serveTCP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			c := tcpClient(t, addr, "")
			raw, err := c.Get(context.Background(), "/v1/status")
			if err == nil {
				t.Fatalf("Get = %s, want an error", raw)
			}
			if got := codeOf(t, err); got != tt.code {
				t.Errorf("code %s (%v), want %s", got, err, tt.code)
			}
			for _, s := range tt.msg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}
