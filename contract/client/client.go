// Package client talks to a running harnessd over its JSON API, on the unix
// socket of a data dir or on loopback TCP with a bearer token.
package client

import (
	"bytes"
	"context"
	"encoding/json"

	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// Client is a JSON API client. Safe for concurrent use.
type Client struct {
	hc    *http.Client
	base  string
	token string
}

// Unix returns a client for the daemon listening on socketPath.
func Unix(socketPath string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socketPath)
		},
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Client{hc: &http.Client{Transport: tr}, base: "http://harnessd"}
}

// TCP returns a client for a daemon listening on addr (host:port), with a
// transport of its own (Close drops only its connections).
func TCP(addr, token string) *Client {
	tr := &http.Transport{MaxIdleConns: 16, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}
	return &Client{hc: &http.Client{Transport: tr}, base: "http://" + addr, token: token}
}

// WithToken returns a copy of c that sends token as the bearer credential:
// people's endpoints (approvals, policy, audit, store dump) need the token
// of the data dir on every transport, the unix socket included.
func (c *Client) WithToken(token string) *Client {
	d := *c
	d.token = token
	return &d
}

// HTTPClient returns the underlying HTTP client (for the MCP client transport).
func (c *Client) HTTPClient() *http.Client { return c.hc }

// BaseURL returns the base URL requests go to.
func (c *Client) BaseURL() string { return c.base }

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Call runs an operation. args may be nil, a json.RawMessage or any value
// that marshals to a JSON object. Operation errors come back as *errs.Error.
func (c *Client) Call(ctx context.Context, op string, args any) (json.RawMessage, error) {
	var body []byte
	switch a := args.(type) {
	case nil:
		body = []byte("{}")
	case json.RawMessage:
		body = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, errs.New(errs.InvalidArgument, "encode arguments: %v", err)
		}
		body = b
	}
	return c.do(ctx, http.MethodPost, "/v1/"+op, body)
}

// Get fetches a JSON API path such as /v1/status.
func (c *Client) Get(ctx context.Context, path string) (json.RawMessage, error) {
	return c.do(ctx, http.MethodGet, path, nil)
}

// Post sends a JSON body (nil = none) to a JSON API path.
func (c *Client) Post(ctx context.Context, path string, body any) (json.RawMessage, error) {
	b := []byte("{}")
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, errs.New(errs.InvalidArgument, "encode body: %v", err)
		}
	}
	return c.do(ctx, http.MethodPost, path, b)
}

// Delete sends a DELETE to path (with its query) and returns the JSON body.
func (c *Client) Delete(ctx context.Context, path string) (json.RawMessage, error) {
	return c.do(ctx, http.MethodDelete, path, nil)
}

// GetRaw fetches a non-JSON endpoint (such as /v1/store/dump).
func (c *Client) GetRaw(ctx context.Context, path string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path, nil)
}

// Healthy returns nil when the daemon answers /healthz.
func (c *Client) Healthy(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/healthz", nil)
	return err
}

func (c *Client) do(ctx context.Context, method, path string, body []byte) (json.RawMessage, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, errs.New(errs.InvalidArgument, "request %s: %v", path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errs.Wrap(errs.CodeOf(ctx.Err()), ctx.Err(), "%s %s: %v", method, path, ctx.Err())
		}
		return nil, errs.Wrap(errs.Unavailable, err, "harnessd is not answering: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errs.Wrap(errs.CodeOf(ctx.Err()), ctx.Err(), "%s %s: read response: %v", method, path, ctx.Err())
		}
		return nil, errs.Wrap(errs.Unavailable, err, "read response: %v", err)
	}
	if resp.StatusCode/100 == 2 {
		return b, nil
	}
	var eb struct {
		Error *errs.Error `json:"error"`
	}
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		return nil, eb.Error
	}
	return nil, errs.New(errs.Internal, "%s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
}

// IsUnavailable reports whether err means the daemon could not be reached.
func IsUnavailable(err error) bool { return errs.CodeOf(err) == errs.Unavailable }
