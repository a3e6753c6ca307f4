package actors

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// BenchmarkLeaseGrantRelease measures one uncontended Acquire + Release
// round trip through the checkout actor (persisting the fencing mark).
func BenchmarkLeaseGrantRelease(b *testing.B) {
	for _, tc := range []struct {
		name     string
		inMemory bool
	}{{"memory", true}, {"disk-sync", false}} {
		b.Run(tc.name, func(b *testing.B) {
			s := actor.NewActorSystemWithConfig(actor.Configure(actor.WithDeadLetterThrottleInterval(time.Millisecond), quietLogs))
			defer s.Shutdown()
			opts := persistence.Options{InMemory: tc.inMemory}
			if !tc.inMemory {
				opts.Dir = b.TempDir()
			}
			st, err := persistence.Open(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			co, _ := s.Root.SpawnNamed(actor.PropsFromProducer(NewCheckout(testRepo, st, zap.NewNop(), nil)), "co")
			keys := []string{pathKey("src/a.go")}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := s.Root.RequestFuture(co, messages.Acquire{Owner: "b", Operation: "apply_patch", Keys: keys}, time.Second).Result()
				if err != nil {
					b.Fatal(err)
				}
				a := res.(messages.Acquired)
				if _, err := s.Root.RequestFuture(co, messages.Release{LeaseID: a.Lease.ID}, time.Second).Result(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLeaseRenewFence measures what a holder does while it writes: one
// Renew and one Fence, each a request to the checkout (which hands it to
// the lease's actor).
func BenchmarkLeaseRenewFence(b *testing.B) {
	s := actor.NewActorSystemWithConfig(actor.Configure(actor.WithDeadLetterThrottleInterval(time.Millisecond), quietLogs))
	defer s.Shutdown()
	st, err := persistence.Open(persistence.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	co, _ := s.Root.SpawnNamed(actor.PropsFromProducer(NewCheckout(testRepo, st, zap.NewNop(), nil)), "co")
	defer func() { _ = s.Root.PoisonFuture(co).Wait() }()
	res, err := s.Root.RequestFuture(co, messages.Acquire{Owner: "b", Operation: "apply_patch", Keys: []string{pathKey("src/a.go")}}, time.Second).Result()
	if err != nil {
		b.Fatal(err)
	}
	id := res.(messages.Acquired).Lease.ID
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r, err := s.Root.RequestFuture(co, messages.Renew{LeaseID: id}, time.Second).Result(); err != nil {
			b.Fatal(err)
		} else if _, ok := r.(messages.Renewed); !ok {
			b.Fatalf("renew: %#v", r)
		}
		if r, err := s.Root.RequestFuture(co, messages.Fence{LeaseID: id}, time.Second).Result(); err != nil {
			b.Fatal(err)
		} else if _, ok := r.(messages.Fenced); !ok {
			b.Fatalf("fence: %#v", r)
		}
	}
}
