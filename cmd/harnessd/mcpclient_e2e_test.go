package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// Real clients against a real daemon, on every transport, at both
// protocol generations (issue #30): go-sdk clients pinned to 2026-07-28
// and to 2025-11-25, and the official TypeScript client
// (@modelcontextprotocol/client 2.x, pinned to 2026-07-28), over stdio
// (`harnessd mcp`) and streamable HTTP (--listen, /mcp).

const (
	pin20260728 = "2026-07-28"
	pin20251125 = "2025-11-25"
)

// listeningDaemon starts a daemon that also listens on loopback TCP and
// returns its /mcp URL and bearer token.
func listeningDaemon(t *testing.T, dataDir string) (url, token string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	startDaemon(t, dataDir, "--listen", addr)
	token, err = daemon.ReadToken(daemon.PathsOf(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/mcp", token
}

// registerRepo registers a new repository holding README.md ("hello")
// through the daemon's JSON API, as its operator would
// (repository_register is not among an agent's default tools).
func registerRepo(t *testing.T, dataDir string) string {
	t.Helper()
	root := testutil.Repo(t, map[string]string{"README.md": "hello\n"})
	c := client.Unix(daemon.PathsOf(dataDir).Socket)
	defer c.Close()
	raw, err := c.Call(context.Background(), "repository_register", map[string]any{"path": root})
	if err != nil {
		t.Fatalf("repository_register: %v", err)
	}
	var reg repoResult
	if err := json.Unmarshal(raw, &reg); err != nil || reg.RepoID == "" {
		t.Fatalf("repository_register = %s (%v)", raw, err)
	}
	return reg.RepoID
}

// bearer adds the daemon's token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// goClient connects a go-sdk client pinned to version over transport
// ("stdio" or "http").
func goClient(t *testing.T, transport, version, dataDir, url, token string) *mcp.ClientSession {
	t.Helper()
	var tr mcp.Transport
	switch transport {
	case "stdio":
		tr = &mcp.CommandTransport{Command: exec.Command(harnessdBin, "mcp", "--data-dir", dataDir, "--log-level", "warn")}
	case "http":
		hc := &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
		t.Cleanup(hc.CloseIdleConnections)
		tr = &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-" + version, Version: "v0"}, nil).
		Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect over %s pinned to %s: %v", transport, version, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fileText is what a read_file result carries of the file: its text
// blocks and its structured content's content field.
func fileText(t *testing.T, s *mcp.ClientSession, repoID, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"repo_id": repoID, "path": path}})
	if err != nil || res.IsError {
		t.Fatalf("read_file %s: %v %+v", path, err, res)
	}
	var out strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out.WriteString(tc.Text)
		}
	}
	if m, ok := res.StructuredContent.(map[string]any); ok {
		if c, ok := m["content"].(string); ok {
			out.WriteString(c)
		}
	}
	return out.String()
}

func TestGoClientsEveryTransportBothProtocols(t *testing.T) {
	dataDir := t.TempDir()
	url, token := listeningDaemon(t, dataDir)
	for _, transport := range []string{"stdio", "http"} {
		for _, version := range []string{pin20260728, pin20251125} {
			t.Run(transport+"/"+version, func(t *testing.T) {
				repoID := registerRepo(t, dataDir)
				s := goClient(t, transport, version, dataDir, url, token)
				init := s.InitializeResult()
				if init.ProtocolVersion != version {
					t.Fatalf("negotiated %s, want %s", init.ProtocolVersion, version)
				}
				if init.ServerInfo == nil || init.ServerInfo.Name != "harnessd" || init.Instructions == "" {
					t.Errorf("server info %+v, instructions %d bytes; want harnessd and its instructions", init.ServerInfo, len(init.Instructions))
				}
				tools, err := s.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{"read_file", "apply_patch", "search"} {
					if !slices.ContainsFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == want }) {
						t.Errorf("tools/list lacks %s", want)
					}
				}
				if got := fileText(t, s, repoID, "README.md"); !strings.Contains(got, "hello\n") {
					t.Fatalf("read_file carries %q", got)
				}
				var receipt struct {
					FencingToken uint64 `json:"fencing_token"`
				}
				if callTool(t, s, "apply_patch", map[string]any{"repo_id": repoID, "request_id": "e2e-" + transport + "-" + version,
					"operations": []map[string]any{{"op": "replace", "path": "README.md", "old_text": "hello", "new_text": "patched"}}}, &receipt) {
					t.Fatalf("apply_patch failed: %+v", receipt)
				}
				if receipt.FencingToken == 0 {
					t.Errorf("apply_patch's receipt has no fencing token")
				}
				if got := fileText(t, s, repoID, "README.md"); !strings.Contains(got, "patched\n") {
					t.Fatalf("read_file after the patch carries %q", got)
				}
				wantToolError(t, s, "read_file", map[string]any{"repo_id": "no-such-repo", "path": "README.md"}, "REPOSITORY_NOT_REGISTERED")
			})
		}
	}
}

// skipOrFail skips, or fails under HARNESSD_REQUIRE_NODE_MCP=1: CI runs
// the official client and fails where it cannot, instead of skipping.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("HARNESSD_REQUIRE_NODE_MCP") == "1" {
		t.Fatalf("HARNESSD_REQUIRE_NODE_MCP=1: "+format, args...)
	}
	t.Skipf(format+" (HARNESSD_REQUIRE_NODE_MCP=1 makes this a failure)", args...)
}

// nodeClientDir returns a directory holding the node client of
// surfaces/mcp/testdata/nodeclient with its dependencies installed from
// its package-lock.json (npm ci), cached by the lock's digest.
func nodeClientDir(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, "%s is not installed (.ci/run installs it)", tool)
		}
	}
	out, err := exec.Command("node", "--version").Output()
	if major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), "."); err != nil || atoi(major) < 20 {
		skipOrFail(t, "node %s: @modelcontextprotocol/client 2.x needs node 20 or later", strings.TrimSpace(string(out)))
	}
	src := filepath.Join("..", "..", "surfaces", "mcp", "testdata", "nodeclient")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "harnessd-test", "nodeclient-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "client", "package.json")); err != nil {
		// Install beside, then rename into place: a concurrent run finds
		// a whole install or none.
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		for _, name := range []string{"package.json", "package-lock.json"} {
			copyFile(t, filepath.Join(src, name), filepath.Join(tmp, name))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir = tmp
		if out, err := cmd.CombinedOutput(); err != nil {
			skipOrFail(t, "npm ci of the node client (is the npm registry reachable?): %v\n%s", err, out)
		}
		// A concurrent run that installed first wins; its install is as good.
		if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.ENOTEMPTY) {
			t.Fatal(err)
		}
	}
	// The scripts are copied on every run: node resolves their imports
	// from the directory they live in.
	for _, name := range []string{"client.mjs", "task.mjs"} {
		copyFile(t, filepath.Join(src, name), filepath.Join(dir, name))
	}
	return dir
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	// Write beside and rename: a concurrent run never reads half a script.
	tmp := to + ".tmp-" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, to); err != nil {
		t.Fatal(err)
	}
}

// The official TypeScript client, pinned to 2026-07-28, over stdio and
// streamable HTTP: it negotiates 2026-07-28 (before #30 it failed on HTTP
// with "Unsupported protocol version: 2026-07-28"), lists, reads, patches
// and sees harnessd's error code.
func TestOfficialNodeClient(t *testing.T) {
	dir := nodeClientDir(t)
	dataDir := t.TempDir()
	url, token := listeningDaemon(t, dataDir)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			repoID := registerRepo(t, dataDir)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", "client.mjs")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(),
				"HARNESSD_MCP_TRANSPORT="+transport,
				"HARNESSD_BIN="+harnessdBin,
				"HARNESSD_DATA_DIR="+dataDir,
				"HARNESSD_MCP_URL="+url,
				"HARNESSD_TOKEN="+token,
				"HARNESSD_REPO_ID="+repoID,
				"HARNESSD_PROTOCOL="+pin20260728,
			)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node client.mjs over %s: %v\n%s", transport, err, stderr.String())
			}
			var seen struct {
				Negotiated   string   `json:"negotiated"`
				Era          string   `json:"era"`
				Server       string   `json:"server"`
				Supported    []string `json:"supported"`
				Instructions int      `json:"instructions"`
				Tools        []string `json:"tools"`
				Read         bool     `json:"read"`
				Patched      bool     `json:"patched"`
				ErrorIsError bool     `json:"error_is_error"`
				ErrorCode    string   `json:"error_code"`
			}
			if err := json.Unmarshal(out, &seen); err != nil {
				t.Fatalf("node client printed %q: %v\n%s", out, err, stderr.String())
			}
			if seen.Negotiated != pin20260728 || seen.Era != "modern" || seen.Server != "harnessd" {
				t.Errorf("negotiated %q era %q server %q, want %s modern harnessd", seen.Negotiated, seen.Era, seen.Server, pin20260728)
			}
			if !slices.Contains(seen.Supported, pin20260728) || !slices.Contains(seen.Supported, pin20251125) || seen.Instructions == 0 {
				t.Errorf("server/discover: versions %v, instructions %d bytes; want both generations and the instructions", seen.Supported, seen.Instructions)
			}
			if !slices.Contains(seen.Tools, "read_file") || !slices.Contains(seen.Tools, "apply_patch") {
				t.Errorf("tools/list = %v, want read_file and apply_patch among them", seen.Tools)
			}
			if !seen.Read || !seen.Patched {
				t.Errorf("read %v, patched and read back %v; want both", seen.Read, seen.Patched)
			}
			if !seen.ErrorIsError || seen.ErrorCode != "REPOSITORY_NOT_REGISTERED" {
				t.Errorf("read_file of an unknown repo: isError %v code %q, want REPOSITORY_NOT_REGISTERED", seen.ErrorIsError, seen.ErrorCode)
			}
		})
	}
}
