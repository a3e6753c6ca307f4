package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/fleet"
)

// fleetFlags are serve's flags that join the daemon to a fleet on etcd
// (docs/fleet.md).
type fleetFlags struct {
	store, node, advertise, remoteCache string
	embed                               bool
	clientURL, peerURL, peers           string
	ttl                                 time.Duration
}

func (f *fleetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.store, "cluster-store", "", "join a fleet whose state is in etcd at these `endpoints`, e.g. etcd://10.0.0.1:2379,10.0.0.2:2379 (docs/fleet.md; default: no fleet)")
	fs.BoolVar(&f.embed, "embed-etcd", false, "run an etcd member inside this daemon (data in <data-dir>/etcd) and join the fleet through it: a small fleet, dev and CI; needs --etcd-client-url, --etcd-peer-url and --cluster-peers")
	fs.StringVar(&f.clientURL, "etcd-client-url", "", "with --embed-etcd: the `url` the embedded member serves clients on, e.g. http://127.0.0.1:2379")
	fs.StringVar(&f.peerURL, "etcd-peer-url", "", "with --embed-etcd: the `url` the embedded member talks to its peers on, e.g. http://127.0.0.1:2380")
	fs.StringVar(&f.peers, "cluster-peers", "", "with --embed-etcd: every member's peer url, `name=url,...` (this node's name included), e.g. n1=http://10.0.0.1:2380,n2=http://10.0.0.2:2380")
	fs.StringVar(&f.node, "node-name", "", "this node's name in the fleet (default: the host name and a digest of the data dir)")
	fs.DurationVar(&f.ttl, "cluster-ttl", 10*time.Second, "the fleet session's lease TTL: a node silent for longer loses its claims and refuses writes until it rejoins")
	fs.StringVar(&f.advertise, "cluster-advertise", "", "the `url` other nodes fetch this node's evidence blobs from (default http://<--listen>)")
	fs.StringVar(&f.remoteCache, "remote-cache", "", "keep check evidence in this bazel-remote style HTTP cache `url` (/ac/, /cas/) instead of etcd")
}

// config validates the flags and returns the fleet configuration (the
// zero value: no fleet).
func (f *fleetFlags) config(dataDir, listen string) (harness.FleetConfig, error) {
	if f.store == "" && !f.embed {
		for name, v := range map[string]string{"--etcd-client-url": f.clientURL, "--etcd-peer-url": f.peerURL, "--cluster-peers": f.peers,
			"--node-name": f.node, "--cluster-advertise": f.advertise, "--remote-cache": f.remoteCache} {
			if v != "" {
				return harness.FleetConfig{}, fmt.Errorf("%s needs --cluster-store or --embed-etcd", name)
			}
		}
		return harness.FleetConfig{}, nil
	}
	cfg := harness.FleetConfig{Node: f.node, Advertise: f.advertise, TTL: f.ttl, RemoteCache: f.remoteCache}
	if f.store != "" {
		eps, err := fleet.ParseStore(f.store)
		if err != nil {
			return cfg, fmt.Errorf("--cluster-store: %v", err)
		}
		cfg.Endpoints = eps
	}
	if cfg.Node == "" {
		cfg.Node = defaultNodeName(dataDir)
	}
	if f.embed {
		if f.clientURL == "" || f.peerURL == "" || f.peers == "" {
			return cfg, fmt.Errorf("--embed-etcd needs --etcd-client-url, --etcd-peer-url and --cluster-peers")
		}
		for _, u := range []string{f.clientURL, f.peerURL} {
			if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				return cfg, fmt.Errorf("%q is not an http(s) url with a host and port", u)
			}
		}
		if !strings.Contains(","+f.peers, ","+cfg.Node+"=") {
			return cfg, fmt.Errorf("--cluster-peers %q does not name this node (%s=<its peer url>)", f.peers, cfg.Node)
		}
		cfg.Embed = &fleet.EmbedConfig{Name: cfg.Node, Dir: filepath.Join(dataDir, "etcd"), ClientURL: f.clientURL, PeerURL: f.peerURL, InitialCluster: f.peers}
		if len(cfg.Endpoints) == 0 {
			cfg.Endpoints = []string{f.clientURL}
		}
	}
	if cfg.Advertise == "" && listen != "" {
		cfg.Advertise = "http://" + listen
	}
	return cfg, nil
}

// defaultNodeName is the host name and 8 hex digits of the data dir's
// path: stable across restarts, distinct for two daemons on one host.
func defaultNodeName(dataDir string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	sum := sha256.Sum256([]byte(abs))
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, host)
	if len(name) > 40 {
		name = name[:40]
	}
	return name + "-" + hex.EncodeToString(sum[:4])
}
