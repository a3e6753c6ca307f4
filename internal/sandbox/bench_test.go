package sandbox

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testutil"
)

// BenchmarkStart is the cost of confining a Fast Path command (/bin/true)
// with the read profile, against starting it bare: confine-ms is the part
// spent on the forking thread (Landlock layers, seccomp, no_new_privs).
func BenchmarkStart(b *testing.B) {
	f := newFixture(b, true)
	pol := f.policy(Read)
	// The cached ruleset is used once the tree has settled (a second).
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(f.root, old, old); err != nil {
		b.Fatal(err)
	}
	b.Run("bare", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read-profile", func(b *testing.B) {
		testutil.NeedSandbox(b, testutil.Landlock, Probe().LandlockABI > 0, "the kernel has no Landlock")
		var cost time.Duration
		for i := 0; i < b.N; i++ {
			c, err := f.sb.Prepare(pol)
			if err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command("/bin/true")
			cmd.Env = c.Env(os.Environ())
			exited := make(chan struct{})
			if err := c.Start(cmd, exited); err != nil {
				b.Fatal(err)
			}
			_ = cmd.Wait()
			close(exited)
			cost += c.Cost()
			c.Done()
		}
		b.ReportMetric(float64(cost.Microseconds())/1000/float64(b.N), "confine-ms")
	})
}
