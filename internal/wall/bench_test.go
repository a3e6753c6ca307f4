package wall

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDiagnoseBigFailure is the worst common case: a failed run with
// 128 KiB of ordinary test output and one wall's line.
func BenchmarkDiagnoseBigFailure(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 128<<10; i++ {
		fmt.Fprintf(&sb, "=== RUN   TestCase%05d\n--- PASS: TestCase%05d (0.00s)\n", i, i)
	}
	sb.WriteString("    server_test.go:18: listen tcp 127.0.0.1:0: socket: operation not permitted\n")
	out := sb.String()
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		if len(Diagnose(1, out, nsCheck)) != 1 {
			b.Fatal("want one diagnosis")
		}
	}
}
