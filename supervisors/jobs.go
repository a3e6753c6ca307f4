package supervisors

import (
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/internal/cgroup"
)

// JobsName is the name of the jobs actor under the root supervisor.
const JobsName = "jobs"

// Environment variables that configure durable jobs.
const (
	// EnvJobsConcurrency sets how many jobs run at once (default: the CPUs).
	EnvJobsConcurrency = "HARNESSD_JOBS_CONCURRENCY"
	// EnvJobsCgroup = "off" disables cgroup v2 containment.
	EnvJobsCgroup = "HARNESSD_JOBS_CGROUP"
	// EnvJobsPidsMax sets a job cgroup's pids.max (default 4096, 0 = none).
	EnvJobsPidsMax = "HARNESSD_JOBS_PIDS_MAX"
	// EnvJobsMemoryMax sets a job cgroup's memory.max in bytes (default none).
	EnvJobsMemoryMax = "HARNESSD_JOBS_MEMORY_MAX"
)

// detectCgroups runs cgroup.Detect once per process: it may move the daemon
// into a leaf cgroup, which must not happen twice.
var detectCgroups = sync.OnceValues(func() (*cgroup.Manager, error) {
	if os.Getenv(EnvJobsCgroup) == "off" {
		return nil, nil
	}
	return cgroup.Detect()
})

func envInt(name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return def
	}
	return n
}

// JobsConfig returns the jobs actor's configuration for d, from the
// environment variables above.
func JobsConfig(d Deps) actors.JobsConfig {
	m, err := detectCgroups()
	containment := m.Status()
	switch {
	case err != nil:
		containment = "cgroup v2: jobs not contained: " + err.Error()
	case m == nil && os.Getenv(EnvJobsCgroup) == "off":
		containment = "cgroup v2: jobs not contained: disabled by " + EnvJobsCgroup + "=off"
	}
	return actors.JobsConfig{
		Store: d.Store, Index: d.Index, Logger: d.Logger, Now: d.Now, DataDir: d.DataDir,
		Concurrency: int(envInt(EnvJobsConcurrency, 0)),
		Cgroups:     m, Containment: containment,
		Limits: cgroup.Limits{PidsMax: envInt(EnvJobsPidsMax, actors.DefaultJobPidsMax), MemoryMax: envInt(EnvJobsMemoryMax, 0)},
	}
}

func init() {
	register(func(d Deps) Child {
		lg := d.Logger
		if lg == nil {
			lg = zap.NewNop()
		}
		props := actor.PropsFromProducer(actors.NewJobs(JobsConfig(d)),
			actor.WithReceiverMiddleware(actors.Recover(lg)),
			actor.WithSupervisor(actor.NewOneForOneStrategy(10, 30*time.Second, actor.DefaultDecider)))
		return Child{Name: JobsName, Props: props, Restart: Permanent}
	})
}
