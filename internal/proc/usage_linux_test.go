//go:build linux

package proc

import (
	"context"
	"testing"
	"time"
)

// TestResultCarriesTheKernelsUsage: the rusage of the reaped leader counts
// the CPU of the children it reaped and the largest one's RSS. The awk
// child spins until the second tick after it starts (srand counts whole
// seconds), so at least one second.
func TestResultCarriesTheKernelsUsage(t *testing.T) {
	script := `awk 'BEGIN{s="x"; for(i=0;i<24;i++) s=s s; srand(); t0=srand(); while (srand()-t0 < 2) n++; print length(s)}'`
	r, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", script}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if r.ExitCode != 0 || r.Stdout.Text != "16777216\n" {
		t.Fatalf("exit %d, stdout %q; want 0 and the 16 MiB string's length", r.ExitCode, r.Stdout.Text)
	}
	if r.CPU < 100*time.Millisecond {
		t.Errorf("CPU = %v, want the awk child's spinning (at least 100ms)", r.CPU)
	}
	if r.MaxRSSBytes < 16<<20 {
		t.Errorf("MaxRSSBytes = %d, want at least the child's 16 MiB", r.MaxRSSBytes)
	}
}
