package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
)

// maxEventBytes bounds one server-sent event (a run's state carries its
// observations, so events can be large, but not unbounded).
const maxEventBytes = 16 << 20

// Events GETs a server-sent events endpoint and calls fn for every event
// until the stream ends (nil), fn returns an error (that error) or ctx is
// done (a Cancelled or Timeout error). An error answer is reported like
// Get's: the daemon's coded error, or Unavailable when it cannot be
// reached.
func (c *Client) Events(ctx context.Context, path string, fn func(Event) error) error {
	body, err := c.stream(ctx, path)
	if err != nil {
		return err
	}
	defer body.Close()
	err = ReadEvents(body, fn)
	if err != nil && ctx.Err() != nil {
		return errs.Wrap(errs.CodeOf(ctx.Err()), ctx.Err(), "GET %s: %v", path, ctx.Err())
	}
	return err
}

// stream GETs the events at path and returns the body of a 2xx answer for
// the caller to read and close.
func (c *Client) stream(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, errs.New(errs.InvalidArgument, "request %s: %v", path, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errs.Wrap(errs.CodeOf(ctx.Err()), ctx.Err(), "GET %s: %v", path, ctx.Err())
		}
		return nil, errs.Wrap(errs.Unavailable, err, "harnessd is not answering: %v", err)
	}
	if resp.StatusCode/100 == 2 {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb struct {
		Error *errs.Error `json:"error"`
	}
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		return nil, eb.Error
	}
	return nil, errs.New(errs.Internal, "GET %s: HTTP %d: %s", path, resp.StatusCode, strings.TrimSpace(string(b)))
}

// Event is one server-sent event.
type Event struct {
	// Type is the event's "event:" field, "message" when it has none.
	Type string
	ID   string
	// Data is its "data:" lines joined by newlines.
	Data []byte
}

// ReadEvents parses a server-sent events stream (the WHATWG format: fields
// up to a blank line, ":" comments, LF or CRLF line ends) and calls fn for
// every event with data. It returns nil at the end of r, fn's error, or the
// read error. An event cut off by the end of r is dropped, as browsers do.
func ReadEvents(r io.Reader, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventBytes)
	var ev Event
	var data bytes.Buffer
	hasData := false
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		if len(line) == 0 {
			if hasData {
				ev.Data = bytes.Clone(bytes.TrimSuffix(data.Bytes(), []byte("\n")))
				if ev.Type == "" {
					ev.Type = "message"
				}
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, hasData = Event{ID: ev.ID}, false // the last id carries over
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue // a comment: keep-alive
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Type = string(value)
		case "data":
			data.Write(value)
			data.WriteByte('\n')
			hasData = true
		case "id":
			if !bytes.ContainsRune(value, 0) {
				ev.ID = string(value)
			}
		}
	}
	return sc.Err()
}
