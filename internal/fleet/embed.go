package fleet

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
)

// EmbedConfig configures one member of an etcd cluster run inside this
// process (--embed-etcd).
type EmbedConfig struct {
	Name           string      // member name (required)
	Dir            string      // data dir (required); the member keeps <Dir>/<Name>.etcd
	ClientURL      string      // e.g. http://127.0.0.1:2379 ("" = a free loopback port)
	PeerURL        string      // e.g. http://127.0.0.1:2380 ("" = a free loopback port; single member only)
	InitialCluster string      // "n1=http://127.0.0.1:2380,n2=…" ("" = this member alone)
	ClusterState   string      // "new" (default) or "existing"
	Token          string      // initial cluster token ("" = "harnessd-fleet")
	Logger         *zap.Logger // nil = silent; etcd's own logs are raised to Error
	// UnsafeNoFsync turns fsync off (tests only: a crash loses data).
	UnsafeNoFsync bool
	// TickMs and ElectionMs are raft's heartbeat interval and election
	// timeout (0 = etcd's 100 ms and 1000 ms). The shortest lease etcd
	// grants is 1.5 election timeouts.
	TickMs, ElectionMs uint
}

// Embedded is an etcd member running in this process.
type Embedded struct {
	e         *embed.Etcd
	name      string
	clientURL string
	peerURL   string
	once      sync.Once
}

// StartEmbedded starts one etcd member and waits (until ctx ends) for it
// to be ready, which for a member of a multi-member cluster means its
// cluster has a quorum: start the members of a new cluster concurrently
// (or use StartCluster).
func StartEmbedded(ctx context.Context, cfg EmbedConfig) (*Embedded, error) {
	m, err := startMember(cfg)
	if err != nil {
		return nil, err
	}
	if err := m.ready(ctx); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// startMember starts a member without waiting for it to be ready.
func startMember(cfg EmbedConfig) (*Embedded, error) {
	if cfg.Name == "" || cfg.Dir == "" {
		return nil, errs.New(errs.InvalidArgument, "embedded etcd: a member needs a name and a data dir")
	}
	var err error
	if cfg.ClientURL == "" {
		if cfg.ClientURL, err = FreeLoopbackURL(); err != nil {
			return nil, err
		}
	}
	if cfg.PeerURL == "" {
		if cfg.InitialCluster != "" {
			return nil, errs.New(errs.InvalidArgument, "embedded etcd: member %s of cluster %q needs its peer URL", cfg.Name, cfg.InitialCluster)
		}
		if cfg.PeerURL, err = FreeLoopbackURL(); err != nil {
			return nil, err
		}
	}
	cu, err := url.Parse(cfg.ClientURL)
	if err != nil || cu.Host == "" {
		return nil, errs.New(errs.InvalidArgument, "embedded etcd: client URL %q is not http://host:port", cfg.ClientURL)
	}
	pu, err := url.Parse(cfg.PeerURL)
	if err != nil || pu.Host == "" {
		return nil, errs.New(errs.InvalidArgument, "embedded etcd: peer URL %q is not http://host:port", cfg.PeerURL)
	}
	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = filepath.Join(cfg.Dir, cfg.Name+".etcd")
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	ec.InitialCluster = cfg.InitialCluster
	if ec.InitialCluster == "" {
		ec.InitialCluster = cfg.Name + "=" + cfg.PeerURL
	}
	ec.ClusterState = embed.ClusterStateFlagNew
	if cfg.ClusterState != "" {
		ec.ClusterState = cfg.ClusterState
	}
	ec.InitialClusterToken = "harnessd-fleet"
	if cfg.Token != "" {
		ec.InitialClusterToken = cfg.Token
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg.Named("etcd").WithOptions(zap.IncreaseLevel(zap.ErrorLevel)))
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	// Keep an hour of history (waiters watch from a revision; one that
	// falls behind a compaction reads the keys again).
	ec.AutoCompactionMode, ec.AutoCompactionRetention = "periodic", "1h"
	if cfg.TickMs > 0 {
		ec.TickMs = cfg.TickMs
	}
	if cfg.ElectionMs > 0 {
		ec.ElectionMs = cfg.ElectionMs
	}
	ec.Metrics = "basic"
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "embedded etcd: start member %s: %v", cfg.Name, err)
	}
	return &Embedded{e: e, name: cfg.Name, clientURL: cfg.ClientURL, peerURL: cfg.PeerURL}, nil
}

// ready waits until the member serves (its cluster has a leader and it
// published itself), it fails, or ctx ends.
func (m *Embedded) ready(ctx context.Context) error {
	select {
	case <-m.e.Server.ReadyNotify():
		return nil
	case err := <-m.e.Err():
		return errs.Wrap(errs.Unavailable, err, "embedded etcd: member %s failed: %v", m.name, err)
	case <-ctx.Done():
		return errs.Wrap(errs.CodeOf(ctx.Err()), ctx.Err(), "embedded etcd: member %s not ready (is a quorum of its cluster started?)", m.name)
	}
}

// ClientURL answers the member's client URL.
func (m *Embedded) ClientURL() string { return m.clientURL }

// PeerURL answers the member's peer URL.
func (m *Embedded) PeerURL() string { return m.peerURL }

// Close stops the member; idempotent.
func (m *Embedded) Close() {
	m.once.Do(func() {
		m.e.Close()
		<-m.e.Server.StopNotify()
	})
}

// StartCluster starts a new cluster of size members in this process on
// free loopback ports, concurrently, and answers them when all are
// ready. Each member is configured as tmpl (Dir, Logger, UnsafeNoFsync,
// TickMs, ElectionMs, Token) with its own name (etcd1, etcd2, …) and URLs.
func StartCluster(ctx context.Context, size int, tmpl EmbedConfig) ([]*Embedded, error) {
	if size < 1 {
		return nil, errs.New(errs.InvalidArgument, "embedded etcd: a cluster needs at least one member")
	}
	if tmpl.Dir == "" {
		return nil, errs.New(errs.InvalidArgument, "embedded etcd: a cluster needs a data dir")
	}
	cfgs := make([]EmbedConfig, size)
	var peers []string
	urls, err := freeLoopbackURLs(2 * size)
	if err != nil {
		return nil, err
	}
	for i := range cfgs {
		cu, pu := urls[2*i], urls[2*i+1]
		cfgs[i] = tmpl
		cfgs[i].Name, cfgs[i].ClientURL, cfgs[i].PeerURL, cfgs[i].ClusterState = fmt.Sprintf("etcd%d", i+1), cu, pu, ""
		peers = append(peers, cfgs[i].Name+"="+pu)
	}
	// Start the members one after the other, then wait for all: a new
	// member first asks its peers whether it was bootstrapped already,
	// and a peer that listens but does not serve yet costs that question
	// a 1 s timeout, where one not listening yet refuses at once.
	out := make([]*Embedded, 0, size)
	closeAll := func() {
		for _, m := range out {
			m.Close()
		}
	}
	for i := range cfgs {
		cfgs[i].InitialCluster = strings.Join(peers, ",")
		m, err := startMember(cfgs[i])
		if err != nil {
			closeAll()
			return nil, err
		}
		out = append(out, m)
	}
	for _, m := range out {
		if err := m.ready(ctx); err != nil {
			closeAll()
			return nil, err
		}
	}
	return out, nil
}

// ClientURLs answers the members' client URLs.
func ClientURLs(ms []*Embedded) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ClientURL()
	}
	return out
}

// FreeLoopbackURL answers http://127.0.0.1:<a port free just now>.
func FreeLoopbackURL() (string, error) {
	u, err := freeLoopbackURLs(1)
	if err != nil {
		return "", err
	}
	return u[0], nil
}

// freeLoopbackURLs answers n distinct loopback URLs on ports free just
// now (all held open until all are chosen, so none repeats).
func freeLoopbackURLs(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	out := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "embedded etcd: find a free loopback port: %v", err)
		}
		ls = append(ls, l)
		out = append(out, "http://"+l.Addr().String())
	}
	return out, nil
}
