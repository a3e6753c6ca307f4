package fleet

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
)

// shared is one 3-member cluster for the tests that do not stop members;
// each test works under its own key prefix.
var shared []*Embedded

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fleet-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	shared, err = StartCluster(ctx, 3, EmbedConfig{Dir: dir, UnsafeNoFsync: true})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start etcd:", err)
		os.Exit(1)
	}
	code := m.Run()
	for _, e := range shared {
		e.Close()
	}
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := findLeaks(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// findLeaks runs goleak until no goroutine is left, for up to 15s:
// etcd's peer connections (rafthttp wraps them in a timeoutConn that
// re-arms a 5s read deadline on every Read) let their last net/http
// reads end only at that deadline after the members close. Nothing is
// ignored.
func findLeaks() error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := goleak.Find()
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}

var prefixSeq atomic.Int64

// testPrefix answers a key prefix of its own for a test.
func testPrefix(t *testing.T) string {
	return fmt.Sprintf("/t%d-%d/", time.Now().UnixNano()%1e6, prefixSeq.Add(1))
}

// joinN joins n nodes to the cluster at endpoints, node i using
// endpoint i mod len (so they are clients of different members).
func joinN(t *testing.T, endpoints []string, prefix string, count int, ttl time.Duration) []*Node {
	t.Helper()
	nodes := make([]*Node, count)
	for i := range nodes {
		nodes[i] = join(t, Config{Endpoints: []string{endpoints[i%len(endpoints)]}, Prefix: prefix,
			Node: fmt.Sprintf("n%d", i+1), TTL: ttl, BlobDir: t.TempDir()})
	}
	return nodes
}

// join joins one node and closes it at the end of the test.
func join(t *testing.T, cfg Config) *Node {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := Join(ctx, cfg)
	if err != nil {
		t.Fatalf("join %s: %v", cfg.Node, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Errorf("close %s: %v", cfg.Node, err)
		}
	})
	return n
}

// identity answers a check identity made of s.
func identity(s string) string { return "sha256:" + DigestOf([]byte(s)).Hash }
