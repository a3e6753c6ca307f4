package job

import (
	"context"
	"time"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/wall"
	"github.com/harnessd/harnessd/messages"
)

// Durable is the Durable Path as the other operations use it (op.Durable,
// wired at Open): an unfocused check starts and follows its job through
// it, and every confined process's failure is diagnosed by Walls.
type Durable struct{}

var _ op.Durable = Durable{}

// Start starts a job (Start) and returns its record.
func (Durable) Start(ctx context.Context, c *op.Call, s op.JobSpec) (messages.Job, error) {
	j, _, err := startJob(ctx, c, s)
	return j, err
}

// Wait polls a job (Wait).
func (Durable) Wait(ctx context.Context, c *op.Call, id string, wait time.Duration) (messages.Job, error) {
	return Wait(ctx, c, id, wait)
}

// Streams returns the head and tail of a job's logs (Streams).
func (Durable) Streams(j messages.Job, maxBytes int) (stdout, stderr *proc.Output) {
	return Streams(j, maxBytes)
}

// Walls diagnoses a failed confined process (Walls).
func (Durable) Walls(ctx context.Context, env *op.Env, tool string, profile sandbox.Profile, e runtime.RepoEntry, tweak func(*sandbox.Policy),
	dir string, exitCode int, output string) []wall.Diagnosis {
	return Walls(ctx, env, tool, profile, e, tweak, dir, exitCode, output)
}
