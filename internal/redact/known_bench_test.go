package redact

import (
	"encoding/base64"
	"io"
	"strings"
	"testing"
)

// benchKnown returns 200 values of 12 to 43 bytes and 64 KiB of text that
// holds a few of them, exactly and in base64.
func benchKnown() (*Known, string) {
	values := make([]string, 200)
	for i := range values {
		values[i] = fake(uint64(1000+i), 12+i%32, lowerUpperDigits+"-_")
	}
	lines := strings.Split(cleanText(benchSize), "\n")
	for i := 100; i < len(lines); i += 400 {
		lines[i] = "SECRET=" + values[i%200] + " " + base64.StdEncoding.EncodeToString([]byte(values[(i+7)%200]))
	}
	return NewKnown(values), strings.Join(lines, "\n")[:benchSize]
}

func BenchmarkKnown64KiB(b *testing.B) {
	k, in := benchKnown()
	r := New(nil).WithKnown(k)
	if _, n := r.String(in); n < 5 {
		b.Fatalf("%d redactions, want the planted values", n)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r.String(in)
	}
}

// BenchmarkKnownClean64KiB is the scan alone: no value occurs.
func BenchmarkKnownClean64KiB(b *testing.B) {
	k, _ := benchKnown()
	in := cleanText(benchSize)
	r := New(nil).WithKnown(k)
	if _, n := r.String(in); n != 0 {
		b.Fatalf("%d redactions in clean text", n)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r.String(in)
	}
}

// BenchmarkDefaultKnown64KiB is the rules and the known values together.
func BenchmarkDefaultKnown64KiB(b *testing.B) {
	k, in := benchKnown()
	r := Default().WithKnown(k)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r.String(in)
	}
}

func BenchmarkKnownWriter64KiB(b *testing.B) {
	k, in := benchKnown()
	r := Default().WithKnown(k)
	p := []byte(in)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		w := r.Writer(io.Discard)
		for c := p; len(c) > 0; {
			n := min(len(c), 4096)
			w.Write(c[:n])
			c = c[n:]
		}
		w.Close()
	}
}

func BenchmarkNewKnown200(b *testing.B) {
	values := make([]string, 200)
	for i := range values {
		values[i] = fake(uint64(1000+i), 12+i%32, lowerUpperDigits)
	}
	b.ReportAllocs()
	for b.Loop() {
		NewKnown(values)
	}
}
