package testutil

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// GitHTTPServer is a loopback git HTTP server: git-http-backend behind
// net/http/cgi, wanting basic auth user:token for everything. Receives
// counts the pushes (receive-pack requests) that got past the auth.
type GitHTTPServer struct {
	URL, Root string
	Receives  atomic.Int64
}

// NewGitHTTPServer starts a GitHTTPServer for the test (closed at its
// end), or skips the test when git-http-backend is missing.
func NewGitHTTPServer(t testing.TB, user, token string) *GitHTTPServer {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("no git-http-backend: %v", err)
	}
	s := &GitHTTPServer{Root: t.TempDir()}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			s.Receives.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Bare makes a bare repository name on the server that takes pushes and
// returns its URL.
func (s *GitHTTPServer) Bare(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(s.Root, name)
	Git(t, s.Root, "init", "-q", "--bare", dir)
	Git(t, dir, "config", "http.receivepack", "true")
	return s.URL + "/" + name
}
