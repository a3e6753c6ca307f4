package harness

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/fleet"
	"github.com/harnessd/harnessd/internal/sandbox"
)

// Version is the harnessd version; set with -ldflags "-X
// github.com/harnessd/harnessd/harness.Version=v1.2.3", else taken from the
// build info.
var Version = ""

// VersionString returns Version or the module/VCS version of the build.
func VersionString() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev := ""
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
		v := bi.Main.Version
		if v == "" || v == "(devel)" {
			v = "devel"
		}
		if rev != "" {
			v += "+" + rev
		}
		return v
	}
	return "devel"
}

// StatusResult describes a running Harness.
type StatusResult struct {
	Pid          int            `json:"pid"`
	Version      string         `json:"version"`
	GoVersion    string         `json:"go_version"`
	StartedAt    time.Time      `json:"started_at"`
	UptimeS      float64        `json:"uptime_s"`
	DataDir      string         `json:"data_dir,omitempty"`
	InMemory     bool           `json:"in_memory,omitempty"`
	Repositories int            `json:"repositories"`
	RunsActive   int            `json:"runs_active"`
	StoreBytes   int64          `json:"store_bytes"`
	Actors       map[string]int `json:"actors"`
	Goroutines   int            `json:"goroutines"`
	// SandboxThreads are the confined threads the Fast Path keeps for its
	// next commands (each a goroutine of Goroutines; they end when idle).
	SandboxThreads int `json:"sandbox_threads"`
	// Sandbox says, per profile, which confinement layers are active and
	// what a missing one weakens.
	Sandbox []sandbox.Layers `json:"sandbox"`
	Notes   []string         `json:"notes,omitempty"`
	// Fleet is this node's view of its fleet (members, its session,
	// the checks claimed now); absent outside a fleet.
	Fleet *fleet.Status `json:"fleet,omitempty"`
	// Extra holds component sections (jobs, durable leases, checks, ...).
	Extra map[string]any `json:"extra,omitempty"`
}

// DurableLease is a durable lease for `harness status`.
type DurableLease = runtime.DurableLease

// Status reports the harness's vital signs.
func (h *Harness) Status(ctx context.Context) (*StatusResult, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	rs := h.rt.Status(ctx)
	lsm, vlog := h.store.Size()
	if d := h.dataDirIfPersistent(); d != "" {
		// Badger refreshes Size only now and then; the files are the truth.
		if n, err := dirSize(filepath.Join(d, "store")); err == nil && n > lsm+vlog {
			lsm, vlog = n, 0
		}
	}
	now := h.cfg.Now()
	st := &StatusResult{
		Pid: os.Getpid(), Version: VersionString(), GoVersion: goruntime.Version(),
		StartedAt: h.started.UTC(), UptimeS: now.Sub(h.started).Seconds(),
		DataDir: h.dataDirIfPersistent(), InMemory: h.cfg.InMemory,
		Repositories: h.rt.Index().Len(), RunsActive: h.rt.Runs.Active(), StoreBytes: lsm + vlog, Actors: rs.Actors,
		Goroutines: goruntime.NumGoroutine(), SandboxThreads: h.sb.Pooled(), Sandbox: h.sb.Status(),
		Extra: map[string]any{"lanes": rs.Lanes, "durable_leases": rs.DurableLeases},
	}
	if rs.Checks != nil {
		st.Extra["checks"] = *rs.Checks
	}
	if h.fleet != nil {
		fs, err := h.fleet.Status(ctx)
		if err != nil {
			// etcd unreachable: the node's own view, and why.
			st.Notes = append(st.Notes, "fleet: "+err.Error())
		}
		st.Fleet = &fs
	}
	if rs.Jobs != nil {
		st.Extra["jobs"] = *rs.Jobs
		st.Notes = append(st.Notes, "jobs: "+rs.Jobs.Containment)
	}
	return st, nil
}

func (h *Harness) dataDirIfPersistent() string {
	if h.cfg.InMemory {
		return ""
	}
	return h.cfg.DataDir
}

// dirSize sums the disk usage of the regular files in dir (not recursive:
// Badger keeps its files flat). Blocks, not lengths: Badger preallocates
// its memtable and value-log files sparsely.
func dirSize(dir string) (int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			} else {
				n += fi.Size()
			}
		}
	}
	return n, nil
}
