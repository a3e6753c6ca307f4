package daemon

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTCPHandlerGuards: on loopback TCP only GET /healthz is open; the
// console answers its own paths (it logs people in itself); every other
// path needs the bearer token.
func TestTCPHandlerGuards(t *testing.T) {
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) })
	}
	h := tcpHandler(named("ui"), "s3cret", named("api"))
	tests := []struct {
		method, path, token string
		status              int
		body                string
	}{
		{"GET", "/healthz", "", 200, "api"},
		{"HEAD", "/healthz", "", 200, ""},
		{"POST", "/healthz", "", 401, ""},
		{"GET", "/healthz/x", "", 401, ""},
		{"GET", "/v1/status", "", 401, ""},
		{"GET", "/v1/status", "wrong", 401, ""},
		{"GET", "/v1/status", "s3cret", 200, "api"},
		{"POST", "/v1/read_file", "", 401, ""},
		{"GET", "/ui/login", "", 200, "ui"},
		{"GET", "/ui", "", 200, "ui"},
		{"GET", "/uix", "", 401, ""},
		{"GET", "/mcp", "", 401, ""},
		{"GET", "/v1/fleet/blobs/" + strings.Repeat("a", 64), "", 200, "api"}, // the fleet secret, checked by fleet.BlobHandler
		{"POST", "/v1/fleet/blobs/" + strings.Repeat("a", 64), "", 401, ""},
		{"POST", "/v1/fleet/forward/apply_patch", "", 200, "api"}, // the fleet secret, checked by httpapi's forwarded
		{"GET", "/v1/fleet/forward/apply_patch", "", 401, ""},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.status {
			t.Errorf("%s %s (token %q): status %d, want %d", tt.method, tt.path, tt.token, rec.Code, tt.status)
		}
		if tt.body != "" && rec.Body.String() != tt.body {
			t.Errorf("%s %s: served by %q, want %q", tt.method, tt.path, rec.Body.String(), tt.body)
		}
	}
}
