package main

// Helpers of the fleet's must-show tests (fleet_e2e_test.go): a 3-member
// etcd cluster in the test process (with a client to read and write its
// keys), TCP proxies in front of it (a partition without root tools),
// harnessd nodes joined to it, each with its own clone of one fixture
// repository, and two servers in the test process:
//
//   - the sink, the fleet's remote cache (harnessd serve --remote-cache,
//     bazel-remote's HTTP protocol): it accepts a PUT of an action record
//     only when its X-Harnessd-Fencing-Token is above the highest it has
//     accepted for that action (409 otherwise), checks every blob against
//     its digest, and records every request;
//   - the run log, which every run of a check process reports to, so the
//     tests count runs fleet-wide and hold a run in flight for as long as
//     a scenario needs.
//
// The check the nodes run is `go test ./pkg -run <Name>` where `go` is a
// small program built here: `go test` reports to the run log and prints
// its answer. The check declares no effects, so its evidence is shared
// and it runs once fleet-wide (a check declaring network runs on its node
// only); it runs in the check sandbox's own network namespace, where
// 127.0.0.1 is not the test's, so the run log listens on a unix socket
// next to the program, in the directory on PATH the sandbox binds into
// the check's view (a pathname socket is found by its inode, whatever the
// network namespace).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// fleetTTL is the nodes' session lease TTL (etcd's minimum is 2 s).
const fleetTTL = 2 * time.Second

// fleetPrefix is the key prefix the nodes use (the default).
const fleetPrefix = "/harnessd/"

// fakeGoSource is the `go` the checks run: `go version` answers a fixed
// toolchain version (the identity's fingerprint); `go test ... -run NAME`
// sends GET /run?who=NAME to the run log on runlog.sock next to the
// program, prints the answer ("ran who=NAME n=<the run's number>") and
// passes when it is 200. Standard library only, HTTP/1.0 by hand.
const fakeGoSource = `package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "version" {
		fmt.Println("go version go1.26.0-fleetfake linux/amd64")
		return
	}
	if len(args) == 0 || args[0] != "test" {
		fmt.Fprintln(os.Stderr, "fake go: unsupported", args)
		os.Exit(2)
	}
	who := ""
	for i, a := range args {
		if a == "-run" && i+1 < len(args) {
			who = args[i+1]
		}
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake go:", err)
		os.Exit(3)
	}
	c, err := net.Dial("unix", filepath.Join(filepath.Dir(exe), "runlog.sock"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake go: run log:", err)
		os.Exit(3)
	}
	fmt.Fprintf(c, "GET /run?who=%s HTTP/1.0\r\n\r\n", url.QueryEscape(who))
	b, err := io.ReadAll(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake go: run log:", err)
		os.Exit(3)
	}
	head, body, _ := strings.Cut(string(b), "\r\n\r\n")
	fmt.Print(body)
	if !strings.HasPrefix(head, "HTTP/1.0 200 ") && !strings.HasPrefix(head, "HTTP/1.1 200 ") {
		os.Exit(1)
	}
}
`

// buildFakeGo builds fakeGoSource as dir/go (a build of a few hundred
// milliseconds with a warm build cache).
func buildFakeGo(t *testing.T, dir string) {
	t.Helper()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(fakeGoSource), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "go"), "main.go")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GO111MODULE=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the fake go: %v\n%s", err, out)
	}
}

// runEntry is one run of a check process as the run log saw it.
type runEntry struct {
	Who      string
	Seq      int // 1-based, in arrival order over the whole log
	Arrived  time.Time
	Answered time.Time // zero while held
	Gone     bool      // the process went away while held
}

// runLog counts the runs of check processes and holds those of the names
// it is told to hold until the test releases them.
type runLog struct {
	srv *http.Server

	mu sync.Mutex // protects the fields below
	// runs are every run, in arrival order.
	runs []*runEntry
	// hold names whose runs are held.
	hold map[string]bool
	// pending are the held runs and their release channels.
	pending map[*runEntry]chan struct{}
}

// newRunLog serves the run log on sock (a unix socket).
func newRunLog(t *testing.T, sock string) *runLog {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("run log: listen on %s: %v", sock, err)
	}
	l := &runLog{hold: map[string]bool{}, pending: map[*runEntry]chan struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/run", l.run)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = l.srv.Serve(ln) }()
	t.Cleanup(func() {
		l.mu.Lock()
		for e, ch := range l.pending {
			close(ch)
			delete(l.pending, e)
		}
		l.hold = map[string]bool{}
		l.mu.Unlock()
		_ = l.srv.Close()
	})
	return l
}

func (l *runLog) run(w http.ResponseWriter, r *http.Request) {
	who := r.URL.Query().Get("who")
	l.mu.Lock()
	e := &runEntry{Who: who, Seq: len(l.runs) + 1, Arrived: time.Now()}
	l.runs = append(l.runs, e)
	var ch chan struct{}
	if l.hold[who] {
		ch = make(chan struct{})
		l.pending[e] = ch
	}
	l.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-r.Context().Done():
			l.mu.Lock()
			delete(l.pending, e)
			e.Gone = true
			l.mu.Unlock()
			return
		}
	}
	l.mu.Lock()
	e.Answered = time.Now()
	l.mu.Unlock()
	_, _ = fmt.Fprintf(w, "ran who=%s n=%d\n", who, e.Seq)
}

// holdRuns makes the runs of who wait until released.
func (l *runLog) holdRuns(who ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range who {
		l.hold[w] = true
	}
}

// held returns the held runs of who, oldest first.
func (l *runLog) held(who string) []runEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []runEntry
	for _, e := range l.runs {
		if _, ok := l.pending[e]; ok && e.Who == who {
			out = append(out, *e)
		}
	}
	return out
}

// heldCount is how many runs are held.
func (l *runLog) heldCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// release lets the held run number seq finish and stops holding the runs
// of its name; it returns the time of the release, or fails t when no
// such run is held.
func (l *runLog) release(t *testing.T, seq int) time.Time {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for e, ch := range l.pending {
		if e.Seq == seq {
			delete(l.pending, e)
			delete(l.hold, e.Who)
			close(ch)
			return time.Now()
		}
	}
	t.Fatalf("run log: run %d is not held", seq)
	return time.Time{}
}

// of returns the runs of who ("" = all), in arrival order.
func (l *runLog) of(who string) []runEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []runEntry
	for _, e := range l.runs {
		if who == "" || e.Who == who {
			out = append(out, *e)
		}
	}
	return out
}

func (e runEntry) String() string {
	state := "answered"
	switch {
	case e.Gone:
		state = "gone while held"
	case e.Answered.IsZero():
		state = "held"
	}
	return fmt.Sprintf("run %d of %s (%s)", e.Seq, e.Who, state)
}

// stdoutOf is what the run numbered seq of who printed.
func stdoutOf(who string, seq int) string { return fmt.Sprintf("ran who=%s n=%d\n", who, seq) }

// cacheReq is one request the sink answered.
type cacheReq struct {
	Method string
	Kind   string // "ac" or "cas"
	Hex    string
	Token  int64 // X-Harnessd-Fencing-Token of a PUT /ac/
	Status int
	At     time.Time
}

func (r cacheReq) String() string {
	return fmt.Sprintf("%s /%s/%.12s token %d -> %d", r.Method, r.Kind, r.Hex, r.Token, r.Status)
}

// sink is the fleet's remote cache and the fenced resource: a PUT of an
// action record is accepted only above the highest token accepted for
// that action so far; a blob only when it matches its digest.
type sink struct {
	srv *httptest.Server

	mu      sync.Mutex // protects the fields below
	ac      map[string][]byte
	highest map[string]int64
	cas     map[string][]byte
	reqs    []cacheReq
	// holding makes every PUT of an action record wait until released;
	// held are those waiting, by token.
	holding bool
	held    map[int64]chan struct{}
}

func newSink(t *testing.T) *sink {
	t.Helper()
	s := &sink{ac: map[string][]byte{}, highest: map[string]int64{}, cas: map[string][]byte{}, held: map[int64]chan struct{}{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.mu.Lock()
		for tok, ch := range s.held {
			close(ch)
			delete(s.held, tok)
		}
		s.holding = false
		s.mu.Unlock()
		s.srv.Close()
	})
	return s
}

// url is the sink's base URL (--remote-cache).
func (s *sink) url() string { return s.srv.URL + "/" }

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	kind, h, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	req := cacheReq{Method: r.Method, Kind: kind, Hex: h, At: time.Now()}
	answer := func(status int, body []byte) {
		req.Status = status
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
	if (kind != "ac" && kind != "cas") || len(h) != 64 {
		answer(http.StatusNotFound, []byte("no such path\n"))
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.mu.Lock()
		b, ok := s.ac[h]
		if kind == "cas" {
			b, ok = s.cas[h]
		}
		s.mu.Unlock()
		if !ok {
			answer(http.StatusNotFound, nil)
			return
		}
		answer(http.StatusOK, b)
	case http.MethodPut:
		body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err != nil {
			answer(http.StatusBadRequest, []byte(err.Error()))
			return
		}
		if kind == "cas" {
			if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != h {
				answer(http.StatusBadRequest, []byte("the blob does not match its digest\n"))
				return
			}
			s.mu.Lock()
			s.cas[h] = body
			s.mu.Unlock()
			answer(http.StatusOK, nil)
			return
		}
		tok, err := strconv.ParseInt(r.Header.Get("X-Harnessd-Fencing-Token"), 10, 64)
		req.Token = tok
		if err != nil || tok <= 0 {
			answer(http.StatusBadRequest, []byte("a PUT /ac/ needs X-Harnessd-Fencing-Token\n"))
			return
		}
		s.mu.Lock()
		var ch chan struct{}
		if s.holding {
			ch = make(chan struct{})
			s.held[tok] = ch
		}
		s.mu.Unlock()
		if ch != nil {
			// The decision is taken when the PUT is released.
			select {
			case <-ch:
			case <-r.Context().Done():
				s.mu.Lock()
				delete(s.held, tok)
				s.mu.Unlock()
				answer(499, nil)
				return
			}
		}
		s.mu.Lock()
		ok := tok > s.highest[h]
		if ok {
			s.highest[h], s.ac[h] = tok, body
		}
		s.mu.Unlock()
		if !ok {
			answer(http.StatusConflict, []byte("a record with a higher token is in place\n"))
			return
		}
		answer(http.StatusOK, nil)
	default:
		answer(http.StatusMethodNotAllowed, nil)
	}
}

// holdPuts makes every later PUT of an action record wait until
// released (releasePut).
func (s *sink) holdPuts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holding = true
}

// heldPuts returns the tokens of the held PUTs, in ascending order.
func (s *sink) heldPuts() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var toks []int64
	for tok := range s.held {
		toks = append(toks, tok)
	}
	sort.Slice(toks, func(i, j int) bool { return toks[i] < toks[j] })
	return toks
}

// releasePut lets the held PUT with token tok be decided, or fails t when
// none is held.
func (s *sink) releasePut(t *testing.T, tok int64) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.held[tok]
	if !ok {
		t.Fatalf("sink: no PUT with token %d is held (held: %v)", tok, s.held)
	}
	delete(s.held, tok)
	close(ch)
}

// acPuts returns the answered PUTs of action records, in answer order.
func (s *sink) acPuts() []cacheReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []cacheReq
	for _, r := range s.reqs {
		if r.Method == http.MethodPut && r.Kind == "ac" {
			out = append(out, r)
		}
	}
	return out
}

// putOf returns the PUT /ac/ with token tok, if any.
func (s *sink) putOf(tok int64) (cacheReq, bool) {
	for _, r := range s.acPuts() {
		if r.Token == tok {
			return r, true
		}
	}
	return cacheReq{}, false
}

// blob is the blob the sink holds under hex (nil when none).
func (s *sink) blob(hex string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cas[hex]
}

// corrupt replaces the blob under hex with b (a cache serving bad bytes).
func (s *sink) corrupt(hex string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cas[hex] = b
}

// evict drops the blob under hex (a cache that evicted it).
func (s *sink) evict(hex string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cas, hex)
}

// restore puts b back under hex.
func (s *sink) restore(hex string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cas[hex] = b
}

// record is the action record the sink holds under hex (nil when none).
func (s *sink) record(hex string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ac[hex]
}

// forge replaces the action record under hex (a cache that serves a
// record no node wrote).
func (s *sink) forge(hex string, rec []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ac[hex] = rec
}

// missed reports whether a GET of kind/hex was answered 404.
func (s *sink) missed(kind, hex string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.reqs {
		if r.Method == http.MethodGet && r.Kind == kind && r.Hex == hex && r.Status == http.StatusNotFound {
			return true
		}
	}
	return false
}

// gets counts the GETs of kind answered 200.
func (s *sink) gets(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.reqs {
		if r.Method == http.MethodGet && r.Kind == kind && r.Status == http.StatusOK {
			n++
		}
	}
	return n
}

// waitFor polls cond every 20 ms until it holds or timeout passes, then
// fails t naming what was awaited and what was found (found is called
// once more for the message).
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool, found func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			if found != nil {
				msg = ": " + found()
			}
			t.Fatalf("timed out after %s waiting for %s%s", timeout, what, msg)
		}
		time.Sleep(20 * time.Millisecond) // polling other processes and the sink, not an actor
	}
}

// etcdCluster is a 3-member etcd cluster in the test process.
type etcdCluster struct {
	dir string // the members' data dirs are <dir>/<name>.etcd

	mu      sync.Mutex // protects members
	members []*fleet.Embedded
	// clientAddrs are the members' client host:port.
	clientAddrs []string
	cli         *clientv3.Client
}

// startEtcd starts a 3-member cluster and a client of it.
func startEtcd(t *testing.T) *etcdCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	dir := t.TempDir()
	ms, err := fleet.StartCluster(ctx, 3, fleet.EmbedConfig{Dir: dir, UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("etcd: start a 3-member cluster: %v", err)
	}
	c := &etcdCluster{dir: dir, members: ms}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, m := range c.members {
			m.Close()
		}
	})
	t.Logf("etcd: 3 members up in %s", time.Since(start).Round(time.Millisecond))
	urls := fleet.ClientURLs(ms)
	for _, u := range urls {
		c.clientAddrs = append(c.clientAddrs, strings.TrimPrefix(u, "http://"))
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	c.cli = cli
	return c
}

// memberName is the name StartCluster gave member i.
func memberName(i int) string { return fmt.Sprintf("etcd%d", i+1) }

// stop stops member i (its data stays).
func (c *etcdCluster) stop(i int) {
	c.mu.Lock()
	m := c.members[i]
	c.mu.Unlock()
	m.Close()
}

// restart starts member i again from its data, on its URLs.
func (c *etcdCluster) restart(t *testing.T, i int) {
	t.Helper()
	c.mu.Lock()
	var peers []string
	for j, m := range c.members {
		peers = append(peers, memberName(j)+"="+m.PeerURL())
	}
	old := c.members[i]
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := fleet.StartEmbedded(ctx, fleet.EmbedConfig{Name: memberName(i), Dir: c.dir, ClientURL: old.ClientURL(), PeerURL: old.PeerURL(),
		InitialCluster: strings.Join(peers, ","), UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("etcd: restart member %s: %v", memberName(i), err)
	}
	c.mu.Lock()
	c.members[i] = m
	c.mu.Unlock()
}

// leader is the index of the member that leads now.
func (c *etcdCluster) leader(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, a := range c.clientAddrs {
		st, err := c.cli.Status(ctx, "http://"+a)
		if err == nil && st.Header.MemberId == st.Leader {
			return i
		}
	}
	t.Fatal("etcd: no member leads")
	return -1
}

// store is the --cluster-store value naming addrs.
func store(addrs []string) string { return "etcd://" + strings.Join(addrs, ",") }

// get reads key (nil when absent) and the cluster's revision.
func (c *etcdCluster) get(t *testing.T, key string) ([]byte, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.cli.Get(ctx, key)
	if err != nil {
		t.Fatalf("etcd get %s: %v", key, err)
	}
	if len(r.Kvs) == 0 {
		return nil, r.Header.Revision
	}
	return r.Kvs[0].Value, r.Header.Revision
}

// keys lists the keys under prefix.
func (c *etcdCluster) keys(t *testing.T, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatalf("etcd list %s: %v", prefix, err)
	}
	var ks []string
	for _, kv := range r.Kvs {
		ks = append(ks, string(kv.Key))
	}
	return ks
}

// claimKV is a check claimed now: its run key, the claiming node and
// its token (the key's create revision).
type claimKV struct {
	Key   string
	Node  string
	Token int64
}

// claims lists the checks claimed now.
func (c *etcdCluster) claims(t *testing.T) []claimKV {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.cli.Get(ctx, fleetPrefix+"check/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("etcd list the claims: %v", err)
	}
	var out []claimKV
	for _, kv := range r.Kvs {
		if !strings.HasSuffix(string(kv.Key), "/run") {
			continue
		}
		var v struct {
			Node string `json:"node"`
		}
		_ = json.Unmarshal(kv.Value, &v)
		out = append(out, claimKV{Key: string(kv.Key), Node: v.Node, Token: kv.CreateRevision})
	}
	return out
}

// put writes key.
func (c *etcdCluster) put(t *testing.T, key string, val []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.cli.Put(ctx, key, string(val)); err != nil {
		t.Fatalf("etcd put %s: %v", key, err)
	}
}

// tcpProxy forwards loopback connections to one etcd member; cutting it
// closes every connection and refuses new ones (an accepted connection
// is closed at once), which partitions its node from that member.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex // protects cut and conns
	cut   bool
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// pipe copies from src to dst until either ends, then closes both.
func (p *tcpProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// setCut cuts the proxy (closing every connection) or heals it.
func (p *tcpProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

// fleetEnv is one test's fleet: its etcd, sink, run log, toolchain and
// fixture.
type fleetEnv struct {
	etcd *etcdCluster
	sink *sink
	runs *runLog
	// bin holds the fake go and the run log's socket; env is the daemons'
	// extra environment (PATH with bin first): the same on every node,
	// so a check's identity is the same on every node.
	bin string
	env []string
	// src is the fixture repository each node clones.
	src string
	// key, when set, is the fleet key every node gets in its data dir
	// (<data-dir>/fleet.secret): records are sealed with it.
	key []byte
}

// newFleetEnv starts etcd (withEtcd), the sink, the run log and the
// toolchain, and makes the fixture repository.
func newFleetEnv(t *testing.T, withEtcd bool) *fleetEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the fleet tests start an etcd cluster and several harnessd processes")
	}
	// A check's evidence is shared (so it runs once fleet-wide) only when
	// the sandbox gives it a temp dir of its own: Landlock or namespaces.
	if k := sandbox.Probe(); k.LandlockABI == 0 && !k.UserNS {
		testutil.NeedSandbox(t, testutil.Landlock, false, "neither Landlock nor user namespaces ("+k.UserNSReason+
			"): a check gets no temp dir of its own, so its evidence is not shared and it never runs fleet-wide")
	}
	f := &fleetEnv{}
	f.bin = shortDir(t)
	buildFakeGo(t, f.bin)
	f.runs = newRunLog(t, filepath.Join(f.bin, "runlog.sock"))
	f.sink = newSink(t)
	f.env = []string{"PATH=" + f.bin + string(os.PathListSeparator) + os.Getenv("PATH"), "GOCACHE=" + t.TempDir()}
	f.src = testutil.Repo(t, map[string]string{
		"go.mod":        "module example.com/fleet\n\ngo 1.22\n",
		"pkg/a.go":      "package pkg\n\nfunc A() int { return 1 }\n",
		"pkg/a_test.go": "package pkg\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\n",
		"README.md":     "the fleet's fixture\n",
	})
	if withEtcd {
		f.etcd = startEtcd(t)
	}
	return f
}

// clone clones the fixture into a new directory (inside the allowed
// area) and returns its path.
func (f *fleetEnv) clone(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "repo")
	out, err := exec.Command("git", "clone", "-q", "--no-hardlinks", f.src, dst).CombinedOutput()
	if err != nil {
		t.Fatalf("git clone %s: %v\n%s", f.src, err, out)
	}
	testutil.Git(t, dst, "config", "user.name", "harnessd test")
	testutil.Git(t, dst, "config", "user.email", "test@harnessd.invalid")
	return dst
}

// fleetNode is one harnessd process.
type fleetNode struct {
	name    string
	dataDir string
	listen  string // 127.0.0.1:port
	args    []string
	d       *daemonProc
	api     *client.Client // the unix socket, as an agent's tools reach it
	human   *client.Client // with the human token: status
	repo    string         // its clone of the fixture, where the checks run
	repoID  string
	// scratchID is a second clone the tests write to (a write makes a
	// checkout dirty, and a dirty checkout's checks are its own).
	scratchID string
}

// nodeFlags are the flags of a node joining through addrs.
func nodeFlags(name, listen string, addrs []string) []string {
	return []string{"--listen", listen, "--node-name", name, "--cluster-store", store(addrs),
		"--cluster-ttl", fleetTTL.String()}
}

// cached adds the sink as the remote cache to a node's flags.
func (f *fleetEnv) cached(flags []string) []string {
	return append(flags, "--remote-cache", f.sink.url())
}

// launch starts `harnessd serve` for n without waiting for it.
func (f *fleetEnv) launch(t *testing.T, n *fleetNode) {
	t.Helper()
	if f.key != nil {
		if err := os.WriteFile(harness.FleetKeyPath(n.dataDir), f.key, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{"serve", "--data-dir", n.dataDir, "--log-format", "json"}, withArea(n.args)...)
	d := &daemonProc{cmd: exec.Command(harnessdBin, args...), dataDir: n.dataDir, stderr: &syncBuffer{}, done: make(chan struct{})}
	d.cmd.Env = append(os.Environ(), f.env...)
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGCONT)
		_ = d.cmd.Process.Kill()
		<-d.done
		if t.Failed() {
			t.Logf("node %s log (last 4 KiB):\n%s", n.name, tail(d.stderr.String(), 4096))
		}
	})
	n.d = d
}

// ready waits until n answers health, then connects its clients and
// registers its clone.
func (f *fleetEnv) ready(t *testing.T, n *fleetNode) {
	t.Helper()
	c := client.Unix(daemon.PathsOf(n.dataDir).Socket)
	t.Cleanup(c.Close)
	waitFor(t, 30*time.Second, "node "+n.name+" to be healthy", func() bool {
		select {
		case <-n.d.done:
			t.Fatalf("node %s exited early: %v\n%s", n.name, n.d.err, tail(n.d.stderr.String(), 4096))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Healthy(ctx) == nil
	}, func() string { return tail(n.d.stderr.String(), 2048) })
	n.api = c
	n.human = humanClient(t, n.dataDir)
	t.Cleanup(n.human.Close)
	if n.repo == "" {
		n.repo = f.clone(t)
	}
	n.repoID = n.register(t, n.repo)
	n.scratchID = n.register(t, f.clone(t))
}

// register registers the checkout at path on n and returns its repo id.
func (n *fleetNode) register(t *testing.T, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := n.api.Call(ctx, "repository_register", map[string]any{"path": path})
	if err != nil {
		t.Fatalf("node %s: register %s: %v", n.name, path, err)
	}
	var r repoResult
	if err := json.Unmarshal(raw, &r); err != nil || r.RepoID == "" {
		t.Fatalf("node %s: register answered %s (%v)", n.name, raw, err)
	}
	return r.RepoID
}

// node starts a node joined to the test's etcd directly.
func (f *fleetEnv) node(t *testing.T, name string) *fleetNode {
	t.Helper()
	listen := freeAddr(t)
	n := &fleetNode{name: name, dataDir: t.TempDir(), listen: listen, args: f.direct(0, name, listen)}
	f.launch(t, n)
	f.ready(t, n)
	return n
}

// nodes starts count nodes named prefix1..prefixN, launched together.
func (f *fleetEnv) nodes(t *testing.T, prefix string, count int, mk func(i int, name, listen string) []string) []*fleetNode {
	t.Helper()
	ns := make([]*fleetNode, count)
	for i := range ns {
		name := fmt.Sprintf("%s%d", prefix, i+1)
		listen := freeAddr(t)
		ns[i] = &fleetNode{name: name, dataDir: t.TempDir(), listen: listen, args: mk(i, name, listen)}
		f.launch(t, ns[i])
	}
	for _, n := range ns {
		f.ready(t, n)
	}
	return ns
}

// direct is the flags of a node joined to the test's etcd directly, its
// evidence in the sink.
func (f *fleetEnv) direct(_ int, name, listen string) []string {
	return f.cached(nodeFlags(name, listen, f.etcd.clientAddrs))
}

// etcdCached is the flags of a node joined to the test's etcd directly,
// its evidence in etcd (no remote cache).
func (f *fleetEnv) etcdCached(_ int, name, listen string) []string {
	return nodeFlags(name, listen, f.etcd.clientAddrs)
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// fleetRun is the fleet section of a run_check answer.
type fleetRun struct {
	RunID   string   `json:"run_id"`
	Node    string   `json:"node"`
	Token   int64    `json:"token"`
	Source  string   `json:"source"`
	Refused []string `json:"refused"`
}

// checkAnswer is a run_check answer.
type checkAnswer struct {
	Identity    string    `json:"identity"`
	Path        string    `json:"path"`
	Reused      bool      `json:"reused"`
	Joined      bool      `json:"joined"`
	Shared      bool      `json:"shared"`
	NotShared   []string  `json:"not_shared"`
	ExitCode    int       `json:"exit_code"`
	Passed      bool      `json:"passed"`
	Stdout      string    `json:"stdout"`
	Stderr      string    `json:"stderr"`
	MissReasons []string  `json:"miss_reasons"`
	Fleet       *fleetRun `json:"fleet"`
	Latency     struct {
		TotalMs float64 `json:"total_ms"`
	} `json:"latency"`
}

func (a checkAnswer) String() string {
	fl := "no fleet section"
	if a.Fleet != nil {
		fl = fmt.Sprintf("fleet{run %s node %s token %d source %s refused %q}", a.Fleet.RunID, a.Fleet.Node, a.Fleet.Token, a.Fleet.Source, a.Fleet.Refused)
	}
	return fmt.Sprintf("passed %v exit %d reused %v joined %v shared %v %s stdout %q stderr %.200q miss %q not_shared %q",
		a.Passed, a.ExitCode, a.Reused, a.Joined, a.Shared, fl, a.Stdout, a.Stderr, a.MissReasons, a.NotShared)
}

// checkArgs are run_check's arguments for the check named who.
func checkArgs(repoID, who string) map[string]any {
	return map[string]any{"repo_id": repoID, "argv": []string{"go", "test", "./pkg", "-run", who}}
}

// runCheck calls run_check for who on n through call (n.api when nil).
func (n *fleetNode) runCheck(ctx context.Context, call caller, who string) (checkAnswer, error) {
	if call == nil {
		call = apiCaller(n.api)
	}
	raw, err := call(ctx, "run_check", checkArgs(n.repoID, who))
	if err != nil {
		return checkAnswer{}, err
	}
	var a checkAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return checkAnswer{}, fmt.Errorf("decode run_check answer %.300s: %v", raw, err)
	}
	return a, nil
}

// mustCheck is runCheck that fails t unless the check passed with a fleet
// section.
func (n *fleetNode) mustCheck(t *testing.T, who string) checkAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := n.runCheck(ctx, nil, who)
	if err != nil {
		t.Fatalf("node %s: run_check %s: %v", n.name, who, err)
	}
	if !a.Passed || a.Fleet == nil {
		t.Fatalf("node %s: run_check %s: %s; want a pass with a fleet section", n.name, who, a)
	}
	return a
}

// write is one mutation on n: apply_patch writing a fresh file in its
// scratch checkout.
func (n *fleetNode) write(ctx context.Context, requestID string) error {
	_, err := n.api.Call(ctx, "apply_patch", map[string]any{"repo_id": n.scratchID, "request_id": requestID,
		"operations": []map[string]any{{"op": "write", "path": "notes/" + requestID + ".txt", "content": requestID + "\n"}}})
	return err
}

// status reads n's GET /v1/status.
func (n *fleetNode) status(t *testing.T) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := n.human.Get(ctx, "/v1/status")
	if err != nil {
		t.Fatalf("node %s: status: %v", n.name, err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("node %s: decode status: %v", n.name, err)
	}
	return st
}

// checkCalls is how many run_check calls reached n's check actors: runs
// started, calls that joined a run and calls answered from evidence.
func (n *fleetNode) checkCalls(t *testing.T) int {
	t.Helper()
	extra, _ := n.status(t)["extra"].(map[string]any)
	ch, _ := extra["checks"].(map[string]any)
	num := func(k string) int { v, _ := ch[k].(float64); return int(v) }
	return num("runs_started") + num("joined") + num("reused")
}

// fleetStatus is the fleet section of n's status.
type fleetStatus struct {
	Node    string    `json:"node"`
	State   string    `json:"state"`
	Epoch   int64     `json:"epoch"`
	LostAt  time.Time `json:"lost_at"`
	Members []struct {
		Name string `json:"name"`
		Live bool   `json:"live"`
	} `json:"members"`
	Claims []struct {
		Identity string `json:"identity"`
		Node     string `json:"node"`
		Token    int64  `json:"token"`
	} `json:"claims"`
}

// fleetOf reads the fleet section of n's status.
func (n *fleetNode) fleetOf(t *testing.T) fleetStatus {
	t.Helper()
	var fs fleetStatus
	b, _ := json.Marshal(n.status(t)["fleet"])
	if err := json.Unmarshal(b, &fs); err != nil || fs.Node == "" {
		t.Fatalf("node %s: status has no fleet section: %s (%v)", n.name, b, err)
	}
	return fs
}

// stop stops n gracefully (`harnessd stop`) and waits for it to exit.
func (n *fleetNode) stop() error {
	out, err := exec.Command(harnessdBin, "stop", "--data-dir", n.dataDir, "--wait", "30s").CombinedOutput()
	if err != nil {
		return fmt.Errorf("harnessd stop %s: %v: %s", n.name, err, out)
	}
	select {
	case <-n.d.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("node %s still running 10s after harnessd stop returned", n.name)
	}
}

// codeIs reports whether err carries one of codes.
func codeIs(err error, codes ...errs.Code) bool {
	for _, c := range codes {
		if errs.CodeOf(err) == c {
			return true
		}
	}
	return false
}

// durMedian is the median of ds (0 when empty).
func durMedian(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// logContains reports whether n's log holds all of words on one line.
func (n *fleetNode) logContains(words ...string) bool {
	for _, line := range strings.Split(n.d.stderr.String(), "\n") {
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			return true
		}
	}
	return false
}

// errorOf is err's text, or "nil".
func errorOf(err error) string {
	if err == nil {
		return "nil"
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return string(e.Code) + ": " + e.Message
	}
	return err.Error()
}
