package fleet

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// served joins a node that advertises an httptest server answering
// BlobHandler(node).
func served(t *testing.T, cfg Config) *Node {
	t.Helper()
	var h atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := h.Load(); p != nil {
			(*p).ServeHTTP(w, r)
			return
		}
		http.Error(w, "not yet", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	cfg.Advertise = srv.URL
	n := join(t, cfg)
	bh := BlobHandler(n)
	h.Store(&bh)
	return n
}

func TestCorruptBlobInEtcdIsRefusedAndRunsAgain(t *testing.T) {
	nodes := joinN(t, ClientURLs(shared), testPrefix(t), 2, 0)
	a, b := nodes[0], nodes[1]
	id := identity(t.Name())
	var calls atomic.Int64
	if _, err := a.SingleFlight(context.Background(), id, passing(&calls, 0, "the real output")); err != nil {
		t.Fatal(err)
	}
	d := DigestOf([]byte("the real output"))
	if _, err := a.cli.Put(context.Background(), a.keys.cas(d.Hash), "forged output!!"); err != nil {
		t.Fatal(err)
	}
	r, err := b.SingleFlight(context.Background(), id, passing(&calls, 0, "the real output"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != SourceRan || calls.Load() != 2 {
		t.Fatalf("source %s, runs %d; want the check ran again", r.Source, calls.Load())
	}
	if len(r.Refused) != 1 || !strings.Contains(r.Refused[0], "blob sha256:"+d.Hash+" of check "+id+" failed its digest check (from the cache); ran again") {
		t.Fatalf("refused = %q", r.Refused)
	}
	if r.Outcome.Stdout != "the real output" {
		t.Fatalf("stdout = %q", r.Outcome.Stdout)
	}
	// The new run put the real blob back: reused from now on.
	if r, err := a.SingleFlight(context.Background(), id, passing(&calls, 0, "x")); err != nil || r.Source != SourceReused || len(r.Refused) != 0 {
		t.Fatalf("after the rerun: %+v, %v; want reused", r, err)
	}
}

func TestLargeBlobGoesNodeToNodeAndACorruptOneIsRefused(t *testing.T) {
	prefix := testPrefix(t)
	cfg := func(name string) Config {
		return Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: name, BlobDir: t.TempDir(), InlineBlobMax: 1024}
	}
	a := served(t, cfg("a"))
	b := served(t, cfg("b"))
	c := served(t, cfg("c"))
	id := identity(t.Name())
	big := strings.Repeat("ok  pkg/x 0.01s\n", 200) // 3.2 KB, above InlineBlobMax
	var calls atomic.Int64
	ra, err := a.SingleFlight(context.Background(), id, passing(&calls, 0, big))
	if err != nil {
		t.Fatal(err)
	}
	d := DigestOf([]byte(big))
	if resp, err := a.cli.Get(context.Background(), a.keys.cas(d.Hash)); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("the large blob is in etcd (%v); want it kept by node a only", err)
	}
	rb, err := b.SingleFlight(context.Background(), id, passing(&calls, 0, "x"))
	if err != nil || rb.Source != SourceReused || rb.Outcome.Stdout != big || rb.RunID != ra.RunID {
		t.Fatalf("b = %s %v (stdout %d bytes); want reused with the blob fetched from a", rb.Source, err, len(rb.Outcome.Stdout))
	}
	// Node a's copy goes bad (a disk error, or a forger): c refuses it.
	if err := os.WriteFile(a.blobs.path(d.Hash), []byte(strings.ToUpper(big)), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := c.SingleFlight(context.Background(), id, passing(&calls, 0, big))
	if err != nil {
		t.Fatal(err)
	}
	if rc.Source != SourceRan || calls.Load() != 2 || len(rc.Refused) != 1 ||
		!strings.Contains(rc.Refused[0], "failed its digest check (from node a)") {
		t.Fatalf("c = %s, runs %d, refused %q; want the corrupt blob refused and the check run again", rc.Source, calls.Load(), rc.Refused)
	}
}

func TestBlobHandler(t *testing.T) {
	n := join(t, Config{Endpoints: ClientURLs(shared), Prefix: testPrefix(t), Node: "h", BlobDir: t.TempDir()})
	blob := []byte("evidence")
	if err := n.blobs.put(blob); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(n.blobs.path(DigestOf(blob).Hash)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("blob file: %v, %v; want mode 0600", fi, err)
	}
	h := BlobHandler(n)
	good := BlobPath + DigestOf(blob).Hash
	tests := []struct {
		name, method, path, auth string
		want                     int
	}{
		{"no auth", "GET", good, "", 401},
		{"wrong secret", "GET", good, "Bearer " + strings.Repeat("0", 64), 401},
		{"basic auth", "GET", good, "Basic " + n.Secret(), 401},
		{"good", "GET", good, "Bearer " + n.Secret(), 200},
		{"head", "HEAD", good, "Bearer " + n.Secret(), 200},
		{"post", "POST", good, "Bearer " + n.Secret(), 405},
		{"unknown", "GET", BlobPath + strings.Repeat("a", 64), "Bearer " + n.Secret(), 404},
		{"traversal", "GET", BlobPath + "../../../etc/passwd", "Bearer " + n.Secret(), 400},
		{"encoded traversal", "GET", BlobPath + "..%2f..%2fsecret", "Bearer " + n.Secret(), 400},
		{"upper hex", "GET", strings.ToUpper(good), "Bearer " + n.Secret(), 400},
		{"short hex", "GET", good[:len(good)-1], "Bearer " + n.Secret(), 400},
		{"trailing path", "GET", good + "/x", "Bearer " + n.Secret(), 400},
		{"other prefix", "GET", "/v1/fleet/blobs/md5/" + DigestOf(blob).Hash, "Bearer " + n.Secret(), 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://node"+tt.path, nil)
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tt.want {
				t.Fatalf("%s %s = %d, want %d", tt.method, tt.path, w.Code, tt.want)
			}
			if strings.Contains(w.Body.String(), n.Secret()) {
				t.Fatal("the answer contains the fleet secret")
			}
			if tt.want == 200 && tt.method == "GET" && w.Body.String() != string(blob) {
				t.Fatalf("body = %q", w.Body.String())
			}
		})
	}
}

// bazelRemote is a test server speaking the HTTP cache protocol of
// bazel-remote: GET/PUT /ac/<hex> and /cas/<hex>; a CAS PUT whose body
// does not hash to its key is refused, as bazel-remote does.
type bazelRemote struct {
	mu   sync.Mutex // protects ac, cas
	ac   map[string][]byte
	cas  map[string][]byte
	puts atomic.Int64
}

func (s *bazelRemote) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, hex, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if !ok || (kind != "ac" && kind != "cas") || !isHex64(hex) {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	store := s.ac
	if kind == "cas" {
		store = s.cas
	}
	switch r.Method {
	case http.MethodGet:
		b, ok := store[hex]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	case http.MethodPut:
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if kind == "cas" && DigestOf(b).Hash != hex {
			http.Error(w, "hash mismatch", http.StatusBadRequest)
			return
		}
		store[hex] = b
		s.puts.Add(1)
	default:
		http.Error(w, "method", http.StatusMethodNotAllowed)
	}
}

func TestHTTPCacheSpeaksBazelRemote(t *testing.T) {
	remote := &bazelRemote{ac: map[string][]byte{}, cas: map[string][]byte{}}
	srv := httptest.NewServer(remote)
	t.Cleanup(srv.Close)
	prefix := testPrefix(t)
	cfg := func(name string) Config {
		hc, err := NewHTTPCache(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		return Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: name, Cache: hc}
	}
	a, b := join(t, cfg("a")), join(t, cfg("b"))
	id := identity(t.Name())
	var calls atomic.Int64
	ra, err := a.SingleFlight(context.Background(), id, passing(&calls, 0, "remote evidence"))
	if err != nil {
		t.Fatal(err)
	}
	ad, _ := ActionDigest(id)
	remote.mu.Lock()
	acBytes := remote.ac[ad.Hash]
	remote.mu.Unlock()
	rec, err := UnmarshalActionRecord(acBytes)
	if err != nil || rec.Node != "a" || rec.RunID != ra.RunID || rec.Stdout != DigestOf([]byte("remote evidence")) {
		t.Fatalf("the remote AC entry = %+v, %v", rec, err)
	}
	if resp, err := a.cli.Get(context.Background(), a.keys.ac(ad.Hash)); err != nil || len(resp.Kvs) != 0 {
		t.Fatal("the record went to etcd's action cache too; want the remote cache only")
	}
	rb, err := b.SingleFlight(context.Background(), id, passing(&calls, 0, "x"))
	if err != nil || rb.Source != SourceReused || rb.Outcome.Stdout != "remote evidence" {
		t.Fatalf("b = %+v, %v; want reused from the remote cache", rb, err)
	}
	// The remote CAS answers other bytes: refused, ran again.
	remote.mu.Lock()
	remote.cas[DigestOf([]byte("remote evidence")).Hash] = []byte("tampered")
	remote.mu.Unlock()
	rc, err := b.SingleFlight(context.Background(), id, passing(&calls, 0, "remote evidence"))
	if err != nil || rc.Source != SourceRan || len(rc.Refused) != 1 || calls.Load() != 2 {
		t.Fatalf("after tampering: %+v, %v, runs %d; want refused and ran again", rc, err, calls.Load())
	}

	hc, _ := NewHTTPCache(srv.URL)
	if _, err := hc.GetActionResult(context.Background(), Digest{Hash: strings.Repeat("b", 64)}); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("absent AC entry = %v, want NOT_FOUND", err)
	}
	if err := hc.PutBlob(context.Background(), DigestOf([]byte("x")), []byte("y")); errs.CodeOf(err) != errs.Unavailable {
		t.Fatalf("a CAS PUT the server refuses = %v, want UNAVAILABLE", err)
	}
	for _, bad := range []string{"", "ftp://cache", "cache:8080", "http://", "http://c/x?y=1"} {
		if _, err := NewHTTPCache(bad); errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("NewHTTPCache(%q) = %v, want INVALID_ARGUMENT", bad, err)
		}
	}
}

// TestHTTPCacheUnreachableIsAMiss: a cache that does not answer costs
// a run, not an error.
func TestHTTPCacheUnreachableIsAMiss(t *testing.T) {
	hc, err := NewHTTPCache("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	n := join(t, Config{Endpoints: ClientURLs(shared), Prefix: testPrefix(t), Node: "a", Cache: hc})
	var calls atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := n.SingleFlight(ctx, identity(t.Name()), passing(&calls, 0, "out"))
	if err != nil || r.Source != SourceRan {
		t.Fatalf("= %+v, %v; want ran", r, err)
	}
}
