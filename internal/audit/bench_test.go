package audit

import (
	"strings"
	"testing"
)

func BenchmarkSeal(b *testing.B) {
	prev := chain(1)[0]
	e := sample(1)
	b.ReportAllocs()
	for b.Loop() {
		prev = Seal(prev, e)
	}
}

func BenchmarkPrepare(b *testing.B) {
	e := sample(1)
	e.Reason = strings.Repeat("ordinary words about a patch ", 8) + "token " + secret
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Prepare(e, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify reports the cost per entry of verifying a chain.
func BenchmarkVerify(b *testing.B) {
	es := chain(1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, brk, err := Verify(source(es)); brk != nil || err != nil {
			b.Fatal(brk, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(es)), "ns/entry")
}

func BenchmarkSealWith(b *testing.B) {
	k := testKey(b, 1)
	prev := keyedChain(nil, 1, k)[0]
	e := sample(1)
	b.ReportAllocs()
	for b.Loop() {
		prev = SealWith(prev, e, k)
	}
}

// BenchmarkVerifyKeyed reports the cost per entry of verifying a keyed chain.
func BenchmarkVerifyKeyed(b *testing.B) {
	k := testKey(b, 1)
	es := keyedChain(nil, 1000, k)
	keys := ring(b, k, 1)
	b.ReportAllocs()
	for b.Loop() {
		if r, err := VerifyWith(source(es), Options{Keys: keys}); r.Break != nil || err != nil {
			b.Fatal(r.Break, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(es)), "ns/entry")
}
