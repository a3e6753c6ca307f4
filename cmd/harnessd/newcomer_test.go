package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The newcomer test (issue #33): a fresh HOME, a clean clone, the README's
// quickstart run as written, ending with real calls through `harnessd mcp`
// as the agent snippets start it. The README is the one committed: the
// clone leaves uncommitted files out.

// README limits a newcomer reads in two minutes.
const (
	readmeMaxLines     = 250
	quickstartMaxLines = 30
)

// quickstart is what the README's Quickstart section tells a newcomer to
// run and to configure.
type quickstart struct {
	lines   int                 // of the section, its heading included, trailing blank lines not
	blocks  []string            // the ```sh blocks, in order
	servers map[string][]string // client -> the argv of the MCP server its snippet starts
	listen  string              // the address the daemon is started on (--listen)
	console string              // the console URL the section names
	token   string              // the token file's path the section names (~ not expanded)
}

var (
	claudeSnippet = regexp.MustCompile("`claude mcp add [^`]*? -- ([^`]+)`")
	codexCommand  = regexp.MustCompile("`command = (\"[^\"`]*\")`")
	codexArgs     = regexp.MustCompile("`args = (\\[[^\\]`]*\\])`")
	cursorSnippet = regexp.MustCompile("`(\\{\"mcpServers\"[^`]*\\})`")
	listenFlag    = regexp.MustCompile(`--listen\s+(\S+)`)
	consoleURL    = regexp.MustCompile(`http://[0-9.]+:[0-9]+/ui`)
	tokenPath     = regexp.MustCompile("`(~/[^`]*/token)`")
)

// parseQuickstart reads the Quickstart section of a README.
func parseQuickstart(readme string) (quickstart, error) {
	var q quickstart
	lines := strings.Split(readme, "\n")
	start := slices.Index(lines, "## Quickstart")
	if start < 0 {
		return q, errors.New(`no "## Quickstart" heading`)
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "## ") {
			end = i
			break
		}
	}
	for end > start && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	section := lines[start:end]
	q.lines = len(section)
	var block []string
	inBlock := false
	for _, l := range section {
		switch {
		case !inBlock && l == "```sh":
			inBlock, block = true, nil
		case inBlock && l == "```":
			inBlock = false
			q.blocks = append(q.blocks, strings.Join(block, "\n"))
		case inBlock:
			block = append(block, l)
		}
	}
	if inBlock {
		return q, errors.New("a ```sh block of the quickstart is not closed")
	}
	if len(q.blocks) == 0 {
		return q, errors.New("the quickstart has no ```sh block")
	}
	text := strings.Join(section, "\n")
	q.servers = map[string][]string{}
	if m := claudeSnippet.FindStringSubmatch(text); m != nil {
		q.servers["claude"] = strings.Fields(m[1])
	}
	if c, a := codexCommand.FindStringSubmatch(text), codexArgs.FindStringSubmatch(text); c != nil && a != nil {
		var cmd string
		var args []string
		if err := json.Unmarshal([]byte(c[1]), &cmd); err != nil {
			return q, fmt.Errorf("codex command %s: %v", c[1], err)
		}
		if err := json.Unmarshal([]byte(a[1]), &args); err != nil {
			return q, fmt.Errorf("codex args %s: %v", a[1], err)
		}
		q.servers["codex"] = append([]string{cmd}, args...)
	}
	if m := cursorSnippet.FindStringSubmatch(text); m != nil {
		var cfg struct {
			MCPServers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(m[1]), &cfg); err != nil {
			return q, fmt.Errorf("cursor snippet %s: %v", m[1], err)
		}
		s, ok := cfg.MCPServers["harnessd"]
		if !ok {
			return q, fmt.Errorf("cursor snippet %s has no harnessd server", m[1])
		}
		q.servers["cursor"] = append([]string{s.Command}, s.Args...)
	}
	for _, c := range []string{"claude", "codex", "cursor"} {
		if len(q.servers[c]) == 0 {
			return q, fmt.Errorf("the quickstart has no %s snippet", c)
		}
		if !slices.Equal(q.servers[c], q.servers["claude"]) {
			return q, fmt.Errorf("the %s snippet starts %q, the claude one %q: they must start the same server", c, q.servers[c], q.servers["claude"])
		}
	}
	for _, b := range q.blocks {
		if m := listenFlag.FindStringSubmatch(b); m != nil && strings.HasPrefix(strings.TrimSpace(b), "harnessd serve") {
			q.listen = m[1]
		}
	}
	if q.listen == "" {
		return q, errors.New("no ```sh block starts the daemon with harnessd serve --listen ADDR")
	}
	if q.console = consoleURL.FindString(text); q.console == "" || !strings.Contains(q.console, "//"+q.listen+"/") {
		return q, fmt.Errorf("the console URL %q is not on the daemon's --listen address %s", q.console, q.listen)
	}
	if m := tokenPath.FindStringSubmatch(text); m != nil {
		q.token = m[1]
	} else {
		return q, errors.New("the quickstart does not say where the token file is")
	}
	return q, nil
}

func TestParseQuickstart(t *testing.T) {
	const good = "# x\n\n## Quickstart\nIn a clone:\n```sh\nmake install\n```\n" +
		"```sh\nharnessd serve --listen 127.0.0.1:7411\n```\n" +
		"- `claude mcp add --scope user harnessd -- harnessd mcp`\n" +
		"- `[mcp_servers.harnessd]` with `command = \"harnessd\"` and `args = [\"mcp\"]`\n" +
		"- `{\"mcpServers\": {\"harnessd\": {\"command\": \"harnessd\", \"args\": [\"mcp\"]}}}`\n" +
		"The console is http://127.0.0.1:7411/ui, the token in `~/.local/state/harnessd/token`.\n\n\n## Next\n```sh\nnot this\n```\n"
	tests := []struct {
		name    string
		readme  string
		wantErr string
	}{
		{name: "good", readme: good},
		{name: "no heading", readme: strings.Replace(good, "## Quickstart", "## Start", 1), wantErr: "no \"## Quickstart\""},
		{name: "clients disagree", readme: strings.Replace(good, `"args": ["mcp"]`, `"args": ["mcp", "--role", "reader"]`, 1), wantErr: "the cursor snippet starts"},
		{name: "no codex", readme: strings.Replace(good, "`args = [\"mcp\"]`", "args", 1), wantErr: "no codex snippet"},
		{name: "bad cursor json", readme: strings.Replace(good, `"args": ["mcp"]}}}`, `"args": ["mcp"]}}`, 1), wantErr: "cursor snippet"},
		{name: "console elsewhere", readme: strings.Replace(good, "http://127.0.0.1:7411/ui", "http://127.0.0.1:8080/ui", 1), wantErr: "not on the daemon's --listen"},
		{name: "no daemon", readme: strings.Replace(good, "harnessd serve --listen 127.0.0.1:7411", "harnessd serve", 1), wantErr: "harnessd serve --listen"},
		{name: "no token", readme: strings.Replace(good, "`~/.local/state/harnessd/token`", "the data dir", 1), wantErr: "token file"},
		{name: "unclosed block", readme: strings.Replace(good, "\n```\n- `claude", "\n- `claude", 1), wantErr: "not closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := parseQuickstart(tt.readme)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"make install", "harnessd serve --listen 127.0.0.1:7411"}; !slices.Equal(q.blocks, want) {
				t.Errorf("blocks = %q, want %q", q.blocks, want)
			}
			if q.lines != 12 {
				t.Errorf("lines = %d, want 12 (heading to the last text line)", q.lines)
			}
			if q.listen != "127.0.0.1:7411" || q.console != "http://127.0.0.1:7411/ui" || q.token != "~/.local/state/harnessd/token" {
				t.Errorf("listen %q, console %q, token %q", q.listen, q.console, q.token)
			}
			if !slices.Equal(q.servers["codex"], []string{"harnessd", "mcp"}) {
				t.Errorf("servers = %q", q.servers)
			}
		})
	}
}

// TestReadmeFrontDoor holds the README of the working tree to its limits:
// what the newcomer test runs must also be short.
func TestReadmeFrontDoor(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimRight(string(b), "\n"), "\n") + 1; n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move reference text to docs/", n, readmeMaxLines)
	}
	q, err := parseQuickstart(string(b))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if q.lines > quickstartMaxLines {
		t.Errorf("the quickstart has %d lines, more than %d", q.lines, quickstartMaxLines)
	}
	for _, unknown := range []string{"FlowDeck", "Forge", "../shared"} {
		if bytes.Contains(b, []byte(unknown)) {
			t.Errorf("README.md names %q, which a reader cannot resolve", unknown)
		}
	}
}

// newcomerEnv is the environment of a newcomer's shell: a fresh HOME, no
// harnessd setting, no harnessd binary on PATH, and the Go settings of
// this process that keep the build offline and cached (a fresh HOME must
// not mean a fresh module cache).
func newcomerEnv(t *testing.T, home string) []string {
	t.Helper()
	goKeys := []string{"GOMODCACHE", "GOCACHE", "GOFLAGS", "GOTOOLCHAIN", "GONOSUMDB", "GOPRIVATE", "GOSUMDB", "GOINSECURE"}
	out, err := exec.Command("go", append([]string{"env", "-json"}, goKeys...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var goenv map[string]string
	if err := json.Unmarshal(out, &goenv); err != nil {
		t.Fatalf("go env: %v", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "PATH", k == "GOPATH", k == "GOBIN", k == "GOENV", k == "GOPROXY",
			strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "HARNESSD_"), slices.Contains(goKeys, k):
			continue
		}
		env = append(env, kv)
	}
	var path []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if hasExe(dir, "harnessd") || hasExe(dir, "harness") {
			continue // an earlier install must not stand in for the quickstart's
		}
		path = append(path, dir)
	}
	env = append(env, "HOME="+home, "PATH="+strings.Join(path, string(os.PathListSeparator)), "GOPROXY=off")
	for k, v := range goenv {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func hasExe(dir, name string) bool {
	fi, err := os.Stat(filepath.Join(dir, name))
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// runBlock runs one quickstart block in bash as a terminal would, in dir,
// and returns the environment it leaves (its exports carry over to the
// next block, as in one terminal session).
func runBlock(t *testing.T, block, dir string, env []string) []string {
	t.Helper()
	envFile := filepath.Join(t.TempDir(), "env")
	script := "set -euo pipefail\n" + block + "\nenv -0 > \"$NEWCOMER_ENV_FILE\"\n"
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(slices.Clone(env), "NEWCOMER_ENV_FILE="+envFile)
	began := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart block failed (%v):\n%s\noutput:\n%s", err, block, out)
	}
	t.Logf("ran in %s:\n%s\n%s", time.Since(began).Round(time.Millisecond), block, out)
	raw, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	var next []string
	for kv := range strings.SplitSeq(strings.TrimRight(string(raw), "\x00"), "\x00") {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "NEWCOMER_ENV_FILE", "PWD", "OLDPWD", "SHLVL", "_":
			continue
		}
		next = append(next, kv)
	}
	return next
}

// shell runs a command line in bash with env and returns its output.
func shell(t *testing.T, env []string, line string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

// startBackground starts the quickstart's long-running block (the daemon)
// in its own process group and stops it at the end of the test: `harnessd
// stop`, then the group is killed if anything is left.
func startBackground(t *testing.T, block, dir string, env []string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", block)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		stop := exec.Command("bash", "-c", "harnessd stop")
		stop.Env = env
		if b, err := stop.CombinedOutput(); err != nil {
			t.Logf("harnessd stop: %v\n%s", err, b)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Errorf("the daemon did not stop after harnessd stop:\n%s", out.String())
		}
	})
	t.Logf("started in the background:\n%s", block)
}

// waitHealthy polls the daemon's open /healthz until it answers.
func waitHealthy(t *testing.T, hc *http.Client, addr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := hc.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon on %s is not healthy after 60s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond) // polling a subprocess, not an actor
	}
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// rpcClient speaks newline-delimited JSON-RPC to an MCP server over its
// stdio, as an agent's client does.
type rpcClient struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan []byte
	nextID int
}

func (c *rpcClient) send(msg map[string]any) {
	c.t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write to the MCP server: %v", err)
	}
}

// call sends a request and returns its result, skipping notifications.
func (c *rpcClient) call(method string, params any) json.RawMessage {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("%s: the MCP server closed its stdout", method)
			}
			var resp struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(line, &resp); err != nil {
				c.t.Fatalf("%s: a frame that is not JSON: %q", method, line)
			}
			if resp.ID == nil || *resp.ID != id {
				continue // a notification or a request of the server's
			}
			if resp.Error != nil {
				c.t.Fatalf("%s: %s", method, resp.Error)
			}
			return resp.Result
		case <-timeout:
			c.t.Fatalf("%s: no answer within 60s", method)
		}
	}
}

// tool calls a tool and returns its result, failing on a tool error.
func (c *rpcClient) tool(name string, args map[string]any) (text string, structured json.RawMessage) {
	c.t.Helper()
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Structured json.RawMessage `json:"structuredContent"`
		IsError    bool            `json:"isError"`
	}
	raw := c.call("tools/call", map[string]any{"name": name, "arguments": args})
	if err := json.Unmarshal(raw, &res); err != nil {
		c.t.Fatalf("%s: %s: %v", name, raw, err)
	}
	if res.IsError {
		c.t.Fatalf("%s(%v) failed: %s", name, args, raw)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		b.WriteString(ct.Text)
	}
	return b.String(), res.Structured
}

// agentSession starts argv (resolved on env's PATH, as the client would)
// in dir and talks MCP to it until the test ends.
func agentSession(t *testing.T, argv []string, dir string, env []string) *rpcClient {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"-c", `exec "$@"`, "bash"}, argv...)...)
	cmd.Dir = dir
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &rpcClient{t: t, stdin: stdin, lines: make(chan []byte, 16)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			c.lines <- slices.Clone(sc.Bytes())
		}
	}()
	t.Cleanup(func() {
		stdin.Close() // the agent is done: the bridge ends
		for range c.lines {
		}
		<-read
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("%q exited with %v:\n%s", argv, err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
			t.Errorf("%q did not exit after its stdin closed:\n%s", argv, stderr.String())
		}
	})
	return c
}

func TestNewcomerQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the newcomer test clones, installs and starts a daemon")
	}
	for _, tool := range []string{"git", "make", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (.ci/run installs it)", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", root, "rev-parse", "--is-inside-work-tree").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Skipf("%s is not a git checkout (%v: %s): the newcomer test clones it", root, err, out)
	}
	// Registered first, so it runs after every other cleanup (the daemon's,
	// the agent's): what they started must be gone by then.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })

	home := t.TempDir()
	env := newcomerEnv(t, home)
	// The README's prerequisite: git with an identity.
	shell(t, env, `git config --global user.name "New Comer" && git config --global user.email newcomer@example.com`)
	clone := filepath.Join(home, "src", "harnessd")
	shell(t, env, fmt.Sprintf("git clone --quiet %q %q", root, clone))
	// The newcomer's own repository, where the quickstart's ~/src/myapp is.
	app := filepath.Join(home, "src", "myapp")
	shell(t, env, fmt.Sprintf(`mkdir -p %q && cd %q && git init --quiet && printf 'hello from myapp\n' > README.md && git add README.md && git commit --quiet -m init`, app, app))

	readme, err := os.ReadFile(filepath.Join(clone, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := parseQuickstart(string(readme))
	if err != nil {
		t.Fatalf("the committed README.md: %v", err)
	}
	// The README's port may be taken on this machine (a daemon of the
	// person running the tests): the same commands on a free one.
	addr := freeAddr(t)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()

	for _, block := range q.blocks {
		block = strings.ReplaceAll(block, q.listen, addr)
		if strings.HasPrefix(strings.TrimSpace(block), "harnessd serve") {
			began := time.Now()
			startBackground(t, block, clone, env)
			waitHealthy(t, hc, addr)
			t.Logf("the daemon answered /healthz after %s", time.Since(began).Round(time.Millisecond))
			continue
		}
		env = runBlock(t, block, clone, env)
	}

	// What the quickstart installed is what the shell finds.
	gobin := filepath.Join(home, "go", "bin")
	if got := strings.Fields(shell(t, env, "command -v harnessd harness")); !slices.Equal(got, []string{filepath.Join(gobin, "harnessd"), filepath.Join(gobin, "harness")}) {
		t.Fatalf("the shell finds %q, want harnessd and harness in %s (make install's GOPATH/bin)", got, gobin)
	}
	// The token file is where the quickstart says, and the console answers
	// on the URL it gives.
	if _, err := os.Stat(filepath.Join(home, strings.TrimPrefix(q.token, "~/"))); err != nil {
		t.Errorf("the token file the quickstart names: %v", err)
	}
	resp, err := hc.Get(strings.Replace(q.console, q.listen, addr, 1))
	if err != nil {
		t.Fatalf("the console: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("the console at %s answered %d %s:\n%.300s", q.console, resp.StatusCode, resp.Header.Get("Content-Type"), page)
	}
	shell(t, env, "harness approvals")

	// The agent: the server every snippet starts, and its first calls.
	c := agentSession(t, q.servers["claude"], app, env)
	var init struct {
		ServerInfo struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(c.call("initialize", map[string]any{
		"protocolVersion": pin20251125, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "newcomer", "version": "0"},
	}), &init); err != nil || init.ServerInfo.Name != "harnessd" {
		t.Fatalf("initialize: server %+v (%v)", init.ServerInfo, err)
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})

	_, listed := c.tool("repository_list", map[string]any{})
	var repos struct {
		Repositories []struct {
			ID   string `json:"repo_id"`
			Root string `json:"root"`
		} `json:"repositories"`
	}
	if err := json.Unmarshal(listed, &repos); err != nil {
		t.Fatalf("repository_list: %s: %v", listed, err)
	}
	realApp, err := filepath.EvalSymlinks(app)
	if err != nil {
		t.Fatal(err)
	}
	var repoID string
	for _, r := range repos.Repositories {
		if r.Root == realApp {
			repoID = r.ID
		}
	}
	if repoID == "" {
		t.Fatalf("repository_list = %s, want %s (registered by the quickstart)", listed, realApp)
	}
	if text, _ := c.tool("read_file", map[string]any{"repo_id": repoID, "path": "README.md"}); !strings.Contains(text, "hello from myapp\n") {
		t.Fatalf("read_file README.md carries %q, want the file's text", text)
	}
	_, st := c.tool("git_status", map[string]any{"repo_id": repoID})
	var status struct {
		Clean bool   `json:"clean"`
		Head  string `json:"head"`
	}
	if err := json.Unmarshal(st, &status); err != nil || !status.Clean || status.Head == "" {
		t.Errorf("git_status = %s (%v), want a clean checkout with a head", st, err)
	}
}
