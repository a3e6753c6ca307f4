package redact

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

const benchSize = 64 << 10

// dirtyText is cleanText with a secret of some kind every ~40 lines.
func dirtyText(size int) string {
	clean := strings.Split(cleanText(size), "\n")
	var fx []string
	for _, f := range ruleFixtures() {
		fx = append(fx, f.in)
	}
	var b strings.Builder
	for i, l := range clean {
		if i%40 == 20 {
			b.WriteString(fx[(i/40)%len(fx)])
			b.WriteByte('\n')
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()[:size]
}

func BenchmarkClean64KiB(b *testing.B) {
	in := cleanText(benchSize)
	r := Default()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, n := r.String(in); n != 0 {
			b.Fatalf("clean text: %d redactions, want 0", n)
		}
	}
}

// BenchmarkCleanNoKeywords64KiB is the floor: text with no keyword at all.
func BenchmarkCleanNoKeywords64KiB(b *testing.B) {
	in := []byte(strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit 0123456789\n", benchSize/67+1)[:benchSize])
	r := Default()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, n := r.Bytes(in); n != 0 {
			b.Fatalf("%d redactions, want 0", n)
		}
	}
}

func BenchmarkDirty64KiB(b *testing.B) {
	in := dirtyText(benchSize)
	r := Default()
	if _, n := r.String(in); n < 20 {
		b.Fatalf("dirty text: %d redactions, want many", n)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r.String(in)
	}
}

func BenchmarkWriter64KiB(b *testing.B) {
	in := []byte(dirtyText(benchSize))
	r := Default()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		w := r.Writer(io.Discard)
		for c := in; len(c) > 0; {
			k := min(len(c), 4096)
			w.Write(c[:k])
			c = c[k:]
		}
		w.Close()
	}
}

func BenchmarkIsSecretEnvName(b *testing.B) {
	names := []string{"PATH", "HOME", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "GOFLAGS", "LC_ALL", "MY_SERVICE_PASSWORD"}
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range names {
			IsSecretEnvName(n)
		}
	}
}

func TestBenchInputs(t *testing.T) {
	clean := cleanText(benchSize)
	if out, n := Default().String(clean); n != 0 {
		i := 0
		for i < len(out) && out[i] == clean[i] {
			i++
		}
		t.Fatalf("clean bench text has %d redactions, first near %q", n, out[max(0, i-40):min(len(out), i+40)])
	}
	if !bytes.Contains([]byte(dirtyText(benchSize)), []byte("-----BEGIN")) {
		t.Log("dirty text holds no PEM block")
	}
}
