package main

import (
	"strings"
	"testing"
	"time"
)

// TestFleetFlags: serve's fleet flags, as a person types them.
func TestFleetFlags(t *testing.T) {
	cases := []struct {
		name string
		f    fleetFlags
		err  string // "" = valid
	}{
		{"no fleet", fleetFlags{ttl: 10 * time.Second}, ""},
		{"node name without a store", fleetFlags{node: "n1"}, "--node-name needs --cluster-store or --embed-etcd"},
		{"remote cache without a store", fleetFlags{remoteCache: "http://c"}, "--remote-cache needs"},
		{"store", fleetFlags{store: "etcd://127.0.0.1:2379", node: "n1"}, ""},
		{"bad store", fleetFlags{store: "127.0.0.1:2379"}, "--cluster-store"},
		{"embed without urls", fleetFlags{embed: true, node: "n1"}, "--embed-etcd needs --etcd-client-url, --etcd-peer-url and --cluster-peers"},
		{"embed with a bad url", fleetFlags{embed: true, node: "n1", clientURL: "127.0.0.1:2379", peerURL: "http://127.0.0.1:2380", peers: "n1=http://127.0.0.1:2380"}, "is not an http(s) url"},
		{"peers without this node", fleetFlags{embed: true, node: "n1", clientURL: "http://127.0.0.1:2379", peerURL: "http://127.0.0.1:2380", peers: "n2=http://127.0.0.1:2380"}, "does not name this node (n1=<its peer url>)"},
		{"embed", fleetFlags{embed: true, node: "n1", clientURL: "http://127.0.0.1:2379", peerURL: "http://127.0.0.1:2380", peers: "n1=http://127.0.0.1:2380,n2=http://127.0.0.1:2480"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := c.f.config("/tmp/hd-data", "127.0.0.1:7411")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.f.store == "" && !c.f.embed {
				if len(cfg.Endpoints) != 0 || cfg.Embed != nil {
					t.Fatalf("no fleet flags gave %+v", cfg)
				}
				return
			}
			if cfg.Advertise != "http://127.0.0.1:7411" || cfg.Node != "n1" || len(cfg.Endpoints) == 0 {
				t.Fatalf("cfg = %+v: want node n1 advertising the --listen address", cfg)
			}
			if c.f.embed && (cfg.Embed == nil || cfg.Embed.Dir != "/tmp/hd-data/etcd" || cfg.Endpoints[0] != c.f.clientURL) {
				t.Fatalf("embed cfg = %+v (%+v): want the member in <data-dir>/etcd and its client url as the store", cfg, cfg.Embed)
			}
		})
	}
	// The default node name: stable for a data dir, distinct for another.
	a, b := defaultNodeName("/tmp/a"), defaultNodeName("/tmp/b")
	if a != defaultNodeName("/tmp/a") || a == b || strings.ContainsAny(a, " /:") {
		t.Fatalf("default node names %q, %q", a, b)
	}
}
