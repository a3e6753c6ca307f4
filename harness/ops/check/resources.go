package check

import (
	"context"

	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/procstat"
	"github.com/harnessd/harnessd/messages"
)

// runSampled is proc.Run with the figures of the process tree: sampled
// while it runs, completed with the leader's rusage once it ended.
func runSampled(ctx context.Context, spec proc.Spec) (proc.Result, *messages.Resources, error) {
	p, err := proc.Start(ctx, spec)
	if err != nil {
		return proc.Result{}, nil, err
	}
	usage := procstat.Start(p.Pid(), 0)
	r, err := p.Wait()
	rec := procstat.Final(usage.Stop(), procstat.Kernel{CPU: r.CPU, MaxRSSBytes: r.MaxRSSBytes}).Record()
	return r, &rec, err
}
