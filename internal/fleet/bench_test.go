package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkSingleFlight measures what the fleet adds to a check against
// the 3-member embedded cluster: "ran" is one claim plus the publish Txn
// (plus the lookups before them) around a RunFunc that returns at once;
// "reused" is one action-cache lookup whose blobs verify.
func BenchmarkSingleFlight(b *testing.B) {
	n, err := Join(context.Background(), Config{Endpoints: ClientURLs(shared), Prefix: fmt.Sprintf("/bench%d/", time.Now().UnixNano()), Node: "bench", BlobDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = n.Close(context.Background()) }()
	ctx := context.Background()
	out := Outcome{Passed: true, Stdout: "ok  \tgithub.com/x/y\t0.012s\n", Path: "fast"}
	run := func(context.Context, Claim) (Outcome, error) { return out, nil }
	i := 0
	b.Run("ran", func(b *testing.B) {
		for b.Loop() {
			i++ // a new check each time
			if r, err := n.SingleFlight(ctx, identity(fmt.Sprintf("ran-%d", i)), run); err != nil || r.Source != SourceRan {
				b.Fatalf("%+v, %v", r, err)
			}
		}
	})
	id := identity("reused")
	if _, err := n.SingleFlight(ctx, id, run); err != nil {
		b.Fatal(err)
	}
	b.Run("reused", func(b *testing.B) {
		for b.Loop() {
			if r, err := n.SingleFlight(ctx, id, run); err != nil || r.Source != SourceReused {
				b.Fatalf("%+v, %v", r, err)
			}
		}
	})
}
