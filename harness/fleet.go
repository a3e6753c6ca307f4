package harness

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/fleet"
)

// FleetConfig joins a Harness to a fleet of harnessd nodes whose shared
// state is in etcd (docs/fleet.md). The zero value is no fleet.
type FleetConfig struct {
	// Endpoints are etcd client URLs (harnessd serve --cluster-store).
	Endpoints []string
	// Embed runs an etcd member in this process first (--embed-etcd);
	// Endpoints default to its client URL.
	Embed *fleet.EmbedConfig
	// Node is this node's name in the fleet (required in a fleet).
	Node string
	// Advertise is the URL other nodes fetch this node's evidence blobs
	// from (its HTTP API); "" = it serves none.
	Advertise string
	// TTL is the session lease's (0 = fleet's default, 10 s).
	TTL time.Duration
	// RemoteCache is a bazel-remote style HTTP cache for the evidence
	// (action results and blobs); "" = etcd.
	RemoteCache string
}

func (c FleetConfig) enabled() bool { return len(c.Endpoints) > 0 || c.Embed != nil }

// joinFleet starts the embedded etcd member (if any) and joins the fleet.
func (h *Harness) joinFleet(ctx context.Context, dataDir string) error {
	fc := h.cfg.Fleet
	if !fc.enabled() {
		return nil
	}
	if h.cfg.InMemory || dataDir == "" {
		return errs.New(errs.InvalidArgument, "a fleet node needs a data dir on disk (not InMemory): its evidence blobs and etcd member live there")
	}
	if fc.Embed != nil {
		e, err := fleet.StartEmbedded(ctx, *fc.Embed)
		if err != nil {
			return err
		}
		h.etcd = e
		if len(fc.Endpoints) == 0 {
			fc.Endpoints = []string{e.ClientURL()}
		}
	}
	var cache fleet.Cache
	if fc.RemoteCache != "" {
		c, err := fleet.NewHTTPCache(fc.RemoteCache)
		if err != nil {
			return err
		}
		cache = c
	}
	key, err := fleetKey(dataDir)
	if err != nil {
		return err
	}
	n, err := fleet.Join(ctx, fleet.Config{Endpoints: fc.Endpoints, Node: fc.Node, Advertise: fc.Advertise, TTL: fc.TTL,
		Logger: h.lg.With(zap.String("component", "fleet")), Cache: cache, BlobDir: filepath.Join(dataDir, "fleet-blobs"), SealKey: key})
	if err != nil {
		return err
	}
	h.fleet = n
	h.lg.Info("joined the fleet", zap.String("node", n.Name()), zap.Int64("epoch", n.Epoch()), zap.Strings("etcd", fc.Endpoints), zap.Bool("sealed", key != nil))
	if key == nil {
		h.lg.Warn("the fleet's evidence is not sealed: whoever can write etcd can forge it; put the fleet key in " + FleetKeyPath(dataDir) + " on every node (docs/fleet.md)")
	}
	return nil
}

// FleetKeyPath is where a node's fleet key lives: in the data dir, hidden
// from every confined process.
func FleetKeyPath(dataDir string) string { return filepath.Join(dataDir, "fleet.secret") }

// fleetKey reads the fleet key a person put in the data dir (nil when
// there is none). A key others may read is refused: it is the proof
// that a node of the fleet recorded a piece of evidence.
func fleetKey(dataDir string) ([]byte, error) {
	p := FleetKeyPath(dataDir)
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "fleet key %s: %v", p, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, errs.New(errs.InvalidArgument, "fleet key %s is readable by others (mode %v): chmod 600 it", p, fi.Mode().Perm())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "fleet key %s: %v", p, err)
	}
	key := bytes.TrimSpace(b)
	if len(key) < 16 {
		return nil, errs.New(errs.InvalidArgument, "fleet key %s has %d bytes; give at least 16 (head -c 32 /dev/urandom | xxd -p -c 64 > %s), the same on every node", p, len(key), p)
	}
	return key, nil
}

// leaveFleet leaves the fleet gracefully: no new claims; the runs in
// flight publish first; then the session ends (its claims vanish).
func (h *Harness) leaveFleet(ctx context.Context) {
	if h.fleet == nil {
		return
	}
	h.stopFleetJobs() // its attempts go with the lease, for other nodes to take over
	if err := h.fleet.Close(ctx); err != nil {
		h.lg.Warn("leave the fleet", zap.Error(err))
	}
}

// closeFleet ends the session (if leaveFleet did not) and stops the
// embedded etcd member.
func (h *Harness) closeFleet() {
	if h.fleet != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = h.fleet.Close(ctx) // idempotent
		cancel()
	}
	if h.etcd != nil {
		h.etcd.Close()
	}
}

// Fleet returns this node's membership of its fleet, or nil outside one
// (the HTTP surface serves its evidence blobs to the other nodes).
func (h *Harness) Fleet() *fleet.Node { return h.fleet }
