package harness_test

import (
	"context"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

// BenchmarkRunCommandProcess is a Fast Path run_command that starts a
// process every time (cat is no git query the live index can replay):
// routing, the gate, the confined fork from a pooled thread, the output,
// redaction. The cost of the sandbox's walls shows here.
func BenchmarkRunCommandProcess(b *testing.B) {
	h, id := benchHarness(b, true)
	ctx := context.Background()
	args := harness.RunCommandArgs{RepoID: id, Argv: []string{"cat", "README.md"}}
	if _, err := h.RunCommand(ctx, args); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.RunCommand(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}
