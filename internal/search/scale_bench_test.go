package search

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the user and system time the process has taken.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// scaleRequests are the cases of BenchmarkSearchScale: what an agent asks
// of a large tree.
var scaleRequests = []struct {
	name string
	req  Request
}{
	{"rare-literal", Request{Query: "ResolveWidgetIndex"}},
	{"common-literal", Request{Query: "resolver"}},
	{"regex-common-trigrams", Request{Query: `Resolve\w+Index`, Regex: true}},
	{"case-insensitive-literal", Request{Query: "resolvewidgetindex", CaseInsensitive: true}},
	{"regex-alternation", Request{Query: `ResolveWidget(Index|Cache)\(`, Regex: true}},
	{"case-insensitive-regex", Request{Query: `(?i)func\s+\w+Handler`, Regex: true}},
}

// BenchmarkSearchScale searches a large work tree given by
// HARNESSD_SEARCH_BENCH_ROOT (for example the 100,000-file repository
// `go run ./bench --files 100000 --keep` leaves behind) through a warm
// cache of the default bound, as the live index does.
func BenchmarkSearchScale(b *testing.B) {
	root := os.Getenv("HARNESSD_SEARCH_BENCH_ROOT")
	if root == "" {
		b.Skip("HARNESSD_SEARCH_BENCH_ROOT is not set")
	}
	out, err := gitOutput(context.Background(), root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		b.Fatal(err)
	}
	files, err := orderList(splitList(out))
	if err != nil {
		b.Fatal(err)
	}
	s := New(isSecret, Limits{MaxFileSize: DefaultMaxFileSize, Timeout: 5 * time.Minute})
	cache := NewCache(0)
	start := time.Now()
	if _, err := s.SearchListed(context.Background(), root, files, Request{Query: "zzzqqq"}, cache); err != nil {
		b.Fatal(err)
	}
	st := cache.Stats()
	b.Logf("%d files, cache filled in %v: %d entries, %d bytes, over bound %d", len(files), time.Since(start), st.Entries, st.Bytes, st.OverBound)
	for _, c := range scaleRequests {
		b.Run(c.name, func(b *testing.B) {
			st0 := cache.Stats()
			res, err := s.SearchListed(context.Background(), root, files, c.req, cache)
			if err != nil {
				b.Fatal(err)
			}
			st1 := cache.Stats()
			b.Logf("%d matches, truncated %v; files looked at: %d (%d read from disk)", len(res.Matches), res.Truncated,
				st1.Hits+st1.Misses-st0.Hits-st0.Misses, st1.Misses-st0.Misses)
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				if _, err := s.SearchListed(context.Background(), root, files, c.req, cache); err != nil {
					b.Fatal(err)
				}
			}
			// The machine may be shared: the CPU time a search takes is
			// steadier than its wall time.
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
