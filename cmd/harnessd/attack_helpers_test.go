package main

// Helpers of the attack suite (attack_e2e_test.go): a daemon with its MCP
// session and its two HTTP clients (the bare unix socket any process of the
// uid could reach, and the human one with the token), raw tool results, a
// leak detector that sees through the encodings an attacker would use, repo
// snapshots, execution markers and beacons, and process counting.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// atk is one daemon under attack.
type atk struct {
	dataDir string
	paths   daemon.Paths
	d       *daemonProc
	s       *mcp.ClientSession
	// bare is the unix socket with no credential: what any process of the
	// daemon's uid that reaches the socket can send.
	bare *client.Client
	// human carries the human token (the person at the CLI).
	human *client.Client
	token string
}

// newAtk starts a daemon on a fresh data dir (extra are `serve` flags) and
// connects an MCP session to it.
func newAtk(t *testing.T, extra ...string) *atk {
	t.Helper()
	return newAtkAt(t, t.TempDir(), extra...)
}

func newAtkAt(t *testing.T, dataDir string, extra ...string) *atk {
	t.Helper()
	a := &atk{dataDir: dataDir, paths: daemon.PathsOf(dataDir)}
	a.d = startDaemon(t, dataDir, extra...)
	a.finish(t)
	return a
}

func (a *atk) finish(t *testing.T) {
	t.Helper()
	a.s = mcpSession(t, a.dataDir)
	a.bare = client.Unix(a.paths.Socket)
	t.Cleanup(a.bare.Close)
	tok, err := daemon.ReadToken(a.paths)
	if err != nil || len(tok) < 32 {
		t.Fatalf("human token: %q, %v", tok, err)
	}
	a.token = tok
	a.human = client.Unix(a.paths.Socket).WithToken(tok)
	t.Cleanup(a.human.Close)
}

// pid is the daemon's pid.
func (a *atk) pid() int { return a.d.cmd.Process.Pid }

// startDaemonEnv is startDaemon with extra environment variables for the
// daemon (secrets in the daemon's own environment).
func startDaemonEnv(t *testing.T, dataDir string, env []string, extra ...string) *daemonProc {
	t.Helper()
	args := append([]string{"serve", "--data-dir", dataDir, "--log-format", "json"}, withArea(extra)...)
	d := &daemonProc{cmd: exec.Command(harnessdBin, args...), dataDir: dataDir, stderr: &syncBuffer{}, done: make(chan struct{})}
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.done
	})
	c := client.Unix(daemon.PathsOf(dataDir).Socket)
	defer c.Close()
	eventually(t, "the daemon to be healthy", func() bool {
		select {
		case <-d.done:
			t.Fatalf("daemon exited early: %v\n%s", d.err, d.stderr.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Healthy(ctx) == nil
	})
	return d
}

// out is one tool result as the agent sees it.
type out struct {
	name string
	args map[string]any
	// raw is the JSON of the whole MCP result (content and structured
	// content), or the protocol error.
	raw string
	// texts are the decoded strings of the result: each text content and
	// every string leaf of the structured content.
	texts []string
	isErr bool
	code  string
	m     map[string]any
}

// tool calls an MCP tool and keeps everything the agent would see.
func (a *atk) tool(t *testing.T, name string, args map[string]any) out {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := out{name: name, args: args}
	res, err := a.s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		o.raw, o.isErr, o.texts = "protocol error: "+err.Error(), true, []string{err.Error()}
		return o
	}
	b, _ := json.Marshal(res)
	o.raw, o.isErr = string(b), res.IsError
	o.texts = append(o.texts, o.raw)
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			o.texts = append(o.texts, tc.Text)
		}
	}
	sb, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(sb, &o.m)
	collectStrings(o.m, &o.texts)
	if o.isErr {
		if e, ok := o.m["error"].(map[string]any); ok {
			o.code, _ = e["code"].(string)
		}
		if o.code == "" {
			o.code = "TOOL_ERROR"
		}
	}
	return o
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

// str returns the string at a dotted path of the structured result.
func (o out) str(path string) string {
	var v any = o.m
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// stdout and stderr of a run_command result.
func (o out) stdout() string { return o.str("stdout.text") }
func (o out) stderr() string { return o.str("stderr.text") }

func (o out) String() string {
	r := o.raw
	if len(r) > 1500 {
		r = r[:1500] + "...(" + strconv.Itoa(len(o.raw)) + " bytes)"
	}
	a, _ := json.Marshal(o.args)
	return fmt.Sprintf("%s %s -> %s", o.name, a, r)
}

// mustWork fails unless the tool succeeded.
func (o out) mustWork(t *testing.T) out {
	t.Helper()
	if o.isErr {
		t.Fatalf("positive control failed: %s", o)
	}
	return o
}

// register registers root and returns its repo id.
func (a *atk) register(t *testing.T, root string) string {
	t.Helper()
	o := a.tool(t, "repository_register", map[string]any{"path": root}).mustWork(t)
	id := o.str("repo_id")
	if id == "" {
		t.Fatalf("register: no repo_id: %s", o)
	}
	return id
}

// run is run_command.
func (a *atk) run(t *testing.T, id string, argv ...string) out {
	t.Helper()
	return a.tool(t, "run_command", map[string]any{"repo_id": id, "argv": argv, "timeout_ms": 10000})
}

// ---- secrets and leaks ------------------------------------------------------

const secretAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"

// newSecret returns a unique random value of 32 letters and digits: no
// window of it can appear in any output by accident.
func newSecret(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for b.Len() < 32 {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(secretAlphabet))))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteByte(secretAlphabet[n.Int64()])
	}
	return b.String()
}

// leakWindow is the length of the pieces of a secret the detector looks
// for: a 10-character piece of a random 32-character value does not occur
// by chance, and an attacker who gets pieces gets the value.
const leakWindow = 10

var (
	reB64 = regexp.MustCompile(`[A-Za-z0-9+/_-]{16,}={0,2}`)
	reHex = regexp.MustCompile(`(?i)[0-9a-f]{20,}`)
)

// leakOf reports how the secret (or a 10-character piece of it) appears in
// one of texts: as is, in another case, reversed, rot13, as hex, split by
// whitespace or punctuation (od -c, fold, xxd), or inside base64, hex,
// zlib or gzip data (a git object file, an archive) decoded two levels
// deep. "" when it does not.
func leakOf(secret string, texts ...string) string {
	if len(secret) < leakWindow {
		panic("secret too short")
	}
	for _, tx := range texts {
		for _, v := range decodedViews([]byte(tx), 0) {
			if how := leakIn(secret, v.data); how != "" {
				return how + v.via
			}
		}
	}
	return ""
}

type view struct {
	data []byte
	via  string
}

func decodedViews(b []byte, depth int) []view {
	out := []view{{data: b}}
	if len(b) < 16 {
		return out
	}
	inflate := func(d []byte, via string) {
		if len(d) < 2 {
			return
		}
		var r io.Reader
		switch {
		case d[0] == 0x1f && d[1] == 0x8b:
			if g, err := gzip.NewReader(bytes.NewReader(d)); err == nil {
				r, via = g, "gzip "+via
			}
		case d[0] == 0x78:
			if z, err := zlib.NewReader(bytes.NewReader(d)); err == nil {
				r, via = z, "zlib "+via
			}
		}
		if r != nil {
			if u, _ := io.ReadAll(io.LimitReader(r, 8<<20)); len(u) > 0 {
				out = append(out, view{data: u, via: " inside " + via})
			}
		}
	}
	add := func(d []byte, via string) {
		out = append(out, view{data: d, via: " inside " + via})
		inflate(d, via)
	}
	// Binary output may hold a compressed stream as is.
	for i := 0; i+1 < len(b) && i < 1<<20; i++ {
		if (b[i] == 0x78 && (b[i+1] == 0x01 || b[i+1] == 0x5e || b[i+1] == 0x9c || b[i+1] == 0xda)) || (b[i] == 0x1f && b[i+1] == 0x8b) {
			inflate(b[i:], "binary output")
		}
	}
	if depth > 0 {
		return out
	}
	flat := stripSpace(b)
	for _, m := range reB64.FindAll(flat, 300) {
		for off := 0; off < 4 && off < len(m); off++ {
			s := strings.TrimRight(string(m[off:]), "=")
			s = s[:len(s)/4*4]
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
				if d, err := enc.DecodeString(s); err == nil && len(d) >= 8 {
					add(d, "base64")
				}
			}
		}
	}
	for _, m := range reHex.FindAll(flat, 300) {
		for off := 0; off < 2; off++ {
			s := string(m[off:])
			s = s[:len(s)/2*2]
			if d, err := hex.DecodeString(s); err == nil {
				add(d, "hex")
			}
		}
	}
	return out
}

func stripSpace(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c != ' ' && c != '\n' && c != '\t' && c != '\r' {
			out = append(out, c)
		}
	}
	return out
}

// alnum keeps letters and digits only (od -c, xxd dumps, fold, padding).
func alnum(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func reverse(s string) string {
	r := []byte(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func rot13(s string) string {
	r := []byte(s)
	for i, c := range r {
		switch {
		case c >= 'a' && c <= 'z':
			r[i] = 'a' + (c-'a'+13)%26
		case c >= 'A' && c <= 'Z':
			r[i] = 'A' + (c-'A'+13)%26
		}
	}
	return string(r)
}

func leakIn(secret string, data []byte) string {
	raw := string(data)
	flat := alnum(data)
	lowFlat := strings.ToLower(flat)
	forms := []struct {
		name, hay, needle string
	}{
		{"verbatim", raw, secret},
		{"split by whitespace or punctuation", flat, secret},
		{"in another case", lowFlat, strings.ToLower(secret)},
		{"reversed", flat, reverse(secret)},
		{"rot13", flat, rot13(secret)},
		{"as hex", lowFlat, hex.EncodeToString([]byte(secret))},
		{"as reversed hex", lowFlat, hex.EncodeToString([]byte(reverse(secret)))},
	}
	for _, f := range forms {
		w := leakWindow
		if strings.HasPrefix(f.name, "as ") {
			w = 2 * leakWindow
		}
		for i := 0; i+w <= len(f.needle); i++ {
			if strings.Contains(f.hay, f.needle[i:i+w]) {
				return fmt.Sprintf("%s (piece %q)", f.name, f.needle[i:i+w])
			}
		}
	}
	return ""
}

// noLeak fails when any of the secrets comes back in the result, success
// or error, in any form leakOf knows.
func noLeak(t *testing.T, o out, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if how := leakOf(s, o.texts...); how != "" {
			t.Errorf("LEAK: secret %q came back %s\n  %s", s, how, o)
		}
	}
}

// noLeakIn is noLeak over arbitrary texts (job logs, audit entries).
func noLeakIn(t *testing.T, what string, texts []string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if how := leakOf(s, texts...); how != "" {
			all := strings.Join(texts, " | ")
			if len(all) > 1500 {
				all = all[:1500] + "..."
			}
			t.Errorf("LEAK: secret %q came back %s in %s\n  %s", s, how, what, all)
		}
	}
}

// ---- files ------------------------------------------------------------------

// snapshot hashes every file (and symlink, and directory name) under root,
// .git included: a command that wrote anything in the checkout shows.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			snap[rel] = "link:" + l
		case fi.IsDir():
			snap[rel] = "dir:" + fi.Mode().String()
		default:
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			snap[rel] = fi.Mode().String() + ":" + hex.EncodeToString(sum[:8])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// sameTree fails when root differs from before (ignore lists paths git or
// harnessd may rewrite on their own, like .git/index's stat cache).
func sameTree(t *testing.T, what, root string, before map[string]string, ignore ...string) {
	t.Helper()
	after := snapshot(t, root)
	var diffs []string
	skip := func(p string) bool {
		for _, i := range ignore {
			if p == i || strings.HasPrefix(p, i+"/") {
				return true
			}
		}
		return false
	}
	for p, h := range after {
		if skip(p) {
			continue
		}
		if b, ok := before[p]; !ok {
			diffs = append(diffs, "new "+p)
		} else if b != h {
			diffs = append(diffs, "changed "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok && !skip(p) {
			diffs = append(diffs, "removed "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("WRITE: %s changed the checkout %s: %v", what, root, diffs)
	}
}

// noFile fails when path exists.
func noFile(t *testing.T, what, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		b, _ := os.ReadFile(path)
		if len(b) > 200 {
			b = b[:200]
		}
		t.Errorf("MARKER: %s created %s (%q)", what, path, b)
	}
}

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

// shortDir is a directory with a short path (unix socket paths are
// limited to 107 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "atk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	d, _ = filepath.EvalSymlinks(d)
	return d
}

// homeDir makes a directory in $HOME (outside every root, like ~/.aws);
// "" when HOME is not writable.
func homeDir(t *testing.T) string {
	t.Helper()
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return ""
	}
	d, err := os.MkdirTemp(h, ".harnessd-attack-")
	if err != nil {
		return ""
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// need skips the test when a program is missing.
func need(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed: %v", p, err)
		}
	}
}

func have(prog string) bool { _, err := exec.LookPath(prog); return err == nil }

// ---- beacons ------------------------------------------------------------------

// beacon is a unix socket listener in a short directory outside every root:
// a payload that runs calls it (curl --unix-socket, python), so a run is
// seen even when its output and its file writes are swallowed.
type beacon struct {
	path string
	mu   sync.Mutex
	hits []string
}

func newBeacon(t *testing.T) *beacon {
	t.Helper()
	b := &beacon{path: filepath.Join(shortDir(t), "b.sock")}
	ln, err := net.Listen("unix", b.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				line, _ := bufio.NewReader(c).ReadString('\n')
				b.mu.Lock()
				b.hits = append(b.hits, strings.TrimSpace(line))
				b.mu.Unlock()
				_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"))
			}()
		}
	}()
	return b
}

// hit reports whether a request naming id reached the beacon.
func (b *beacon) hit(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range b.hits {
		if strings.Contains(h+" ", id+" ") {
			return true
		}
	}
	return false
}

// tcpTrap is a TCP listener on loopback that records every connection.
type tcpTrap struct {
	ln    net.Listener
	mu    sync.Mutex
	conns int
}

func newTCPTrap(t *testing.T) *tcpTrap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &tcpTrap{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tr.mu.Lock()
			tr.conns++
			tr.mu.Unlock()
			_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			c.Close()
		}
	}()
	return tr
}

func (tr *tcpTrap) port() string { return strconv.Itoa(tr.ln.Addr().(*net.TCPAddr).Port) }

func (tr *tcpTrap) count() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.conns
}

// udpTrap records every datagram sent to it.
type udpTrap struct {
	pc net.PacketConn
	mu sync.Mutex
	n  int
}

func newUDPTrap(t *testing.T) *udpTrap {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &udpTrap{pc: pc}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			u.mu.Lock()
			u.n++
			u.mu.Unlock()
		}
	}()
	return u
}

func (u *udpTrap) port() string { return strconv.Itoa(u.pc.LocalAddr().(*net.UDPAddr).Port) }

func (u *udpTrap) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n
}

// ---- processes --------------------------------------------------------------

// procTable reads pid -> ppid of every process.
func procTable() map[int]int {
	out := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) {
			continue
		}
		f := strings.Fields(s[i+2:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		out[pid] = pp
	}
	return out
}

// descendants counts the live processes below root.
func descendants(root int) int {
	tab := procTable()
	kids := map[int][]int{}
	for p, pp := range tab {
		kids[pp] = append(kids[pp], p)
	}
	n := 0
	q := []int{root}
	for len(q) > 0 {
		p := q[0]
		q = q[1:]
		for _, k := range kids[p] {
			n++
			q = append(q, k)
		}
	}
	return n
}

// marked returns the live processes whose command line contains marker.
func marked(marker string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		if alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// sampler counts, until stopped, the processes below the daemon and those
// carrying marker (a walk of /proc), and, much more often, the tasks of
// the whole system (/proc/loadavg): a walk takes tens of milliseconds when
// thousands of processes run, a fork bomb peaks in less. It keeps the
// maxima. Past hardLimit marked processes it kills them itself (they are
// the test's own attack) and says so.
type sampler struct {
	stop     chan struct{}
	done     chan struct{}
	maxDesc  int
	maxMark  int
	maxTasks int // growth of the system's task count over its baseline
	killedAt int
}

// tasks is the number of tasks (threads) of the system.
func tasks() int {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(total)
	return n
}

func sample(daemonPid int, marker string, baseline, hardLimit int) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	base := tasks()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for {
			s.maxTasks = max(s.maxTasks, tasks()-base)
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(3 * time.Millisecond)
		defer tick.Stop()
		for {
			d := descendants(daemonPid) - baseline
			m := len(marked(marker))
			s.maxDesc = max(s.maxDesc, d)
			s.maxMark = max(s.maxMark, m)
			if m > hardLimit && s.killedAt == 0 {
				s.killedAt = m
				for _, p := range marked(marker) {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	go func() { wg.Wait(); close(s.done) }()
	return s
}

func (s *sampler) end() *sampler {
	close(s.stop)
	<-s.done
	return s
}

// gitq runs git for the test itself with every repository program turned
// off, so that planting a payload does not trigger it in the test.
func gitq(t *testing.T, dir string, args ...string) string {
	t.Helper()
	pre := []string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat", "-c", "diff.external=",
		"-c", "safe.bareRepository=all"}
	cmd := exec.Command("git", append(pre, args...)...)
	cmd.Dir = dir
	cmd.Env = append(testutil.GitEnv(), "GIT_PAGER=cat")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, b)
	}
	return strings.TrimSpace(string(b))
}

// execGit is plain git, as a person would run it (no harnessd hardening).
func execGit(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(testutil.GitEnv(), "GIT_PAGER=cat")
	return cmd
}

// lookPath finds prog as exec would from dir.
func lookPath(prog, dir string) (string, error) {
	if strings.Contains(prog, "/") {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(dir, prog)
		}
		return prog, nil
	}
	return exec.LookPath(prog)
}

// outcome says in a few words what harnessd did with the call.
func (o out) outcome() string {
	if o.isErr {
		msg := o.str("error.message")
		if len(msg) > 160 {
			msg = msg[:160] + "..."
		}
		return "refused " + o.code + ": " + msg
	}
	if ec, ok := o.m["exit_code"]; ok {
		e := o.stderr()
		if len(e) > 160 {
			e = e[:160] + "..."
		}
		return fmt.Sprintf("ran, exit %v, stderr %q", ec, e)
	}
	return "ok"
}

func daemonPaths(dataDir string) daemon.Paths { return daemon.PathsOf(dataDir) }

// jobRun is a job as the agent sees it: its start, its final status and
// its logs.
type jobRun struct {
	start, final out
	logs         []out
	id, rid      string
}

// texts are all the job's results.
func (j jobRun) texts() []string {
	v := append(append([]string{}, j.start.texts...), j.final.texts...)
	for _, l := range j.logs {
		v = append(v, l.texts...)
	}
	return v
}

// refused reports whether job_start refused the job.
func (j jobRun) refused() bool { return j.start.isErr }

func (j jobRun) state() string { return j.final.str("state") }

func (j jobRun) String() string {
	if j.refused() {
		return "job_start " + j.start.outcome()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "job %s %s exit %v", j.id, j.state(), j.final.m["exit_code"])
	for _, l := range j.logs {
		d := l.str("data")
		if len(d) > 300 {
			d = d[:300] + "..."
		}
		fmt.Fprintf(&b, "; %s %q", l.str("stream"), d)
	}
	return b.String()
}

func (j jobRun) noLeak(t *testing.T, secrets ...string) {
	t.Helper()
	noLeakIn(t, "the job's start, status and logs ("+j.String()+")", j.texts(), secrets...)
	t.Logf("%s", j)
}

var jobSeq struct {
	sync.Mutex
	n int
}

// job starts a job through MCP (args without repo_id and request_id) and
// waits for it to end.
func (a *atk) job(t *testing.T, repoID string, args map[string]any) jobRun {
	t.Helper()
	jobSeq.Lock()
	jobSeq.n++
	n := jobSeq.n
	jobSeq.Unlock()
	full := map[string]any{"repo_id": repoID, "request_id": fmt.Sprintf("atk-%d-%d", time.Now().UnixNano(), n)}
	if _, ok := args["timeout_s"]; !ok {
		full["timeout_s"] = 30
	}
	for k, v := range args {
		full[k] = v
	}
	var j jobRun
	j.rid, _ = full["request_id"].(string)
	j.start = a.tool(t, "job_start", full)
	if j.start.isErr {
		return j
	}
	j.id = j.start.str("job_id")
	deadline := time.Now().Add(90 * time.Second)
	for {
		j.final = a.tool(t, "job_status", map[string]any{"job_id": j.id, "wait_s": 30})
		if st := j.final.str("state"); st != "queued" && st != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s did not end: %s", j.id, j.final)
		}
	}
	for _, stream := range []string{"stdout", "stderr"} {
		j.logs = append(j.logs, a.tool(t, "job_logs", map[string]any{"job_id": j.id, "stream": stream}))
	}
	j.logs = append(j.logs, a.tool(t, "job_logs", map[string]any{"job_id": j.id, "tail": 4096}))
	j.logs = append(j.logs, a.tool(t, "job_list", map[string]any{"repo_id": repoID}))
	return j
}

// output returns the job's stdout and stderr.
func (j jobRun) output() string {
	var b strings.Builder
	for _, l := range j.logs {
		b.WriteString(l.str("data"))
	}
	return b.String()
}

// relTo is target relative to base ("" when there is none).
func relTo(base, target string) string {
	r, err := filepath.Rel(base, target)
	if err != nil {
		return ""
	}
	return r
}

// dynRel writes a relative path with its ".." parts as $d (d=.. set by the
// script): the argument checks see no path that leaves the root.
func dynRel(rel string) string { return strings.ReplaceAll(rel, "../", "${d}/") }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func hexString(s string) string { return hex.EncodeToString([]byte(s)) }

func clientTCP(addr, token string) *client.Client { return client.TCP(addr, token) }

// group runs subtests from goroutines, width at a time: t.Run may be called
// from several goroutines, and such subtests are not held to -parallel
// (which defaults to GOMAXPROCS, 2 on the CI machines, while these mostly
// wait on the daemon).
type group struct {
	t   *testing.T
	wg  sync.WaitGroup
	sem chan struct{}
}

func newGroup(t *testing.T, width int) *group {
	return &group{t: t, sem: make(chan struct{}, width)}
}

func (g *group) run(name string, f func(t *testing.T)) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.sem <- struct{}{}
		defer func() { <-g.sem }()
		g.t.Run(name, f)
	}()
}

// wait waits for every subtest: call it (deferred) before the test returns.
func (g *group) wait() { g.wg.Wait() }
