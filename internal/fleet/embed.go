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
}

// Embedded is an etcd member running in this process.
type Embedded struct {
	e         *embed.Etcd
	clientURL string
	peerURL   string
	once      sync.Once
}

// StartEmbedded starts one etcd member and waits (until ctx ends) for it
// to be ready, which for a member of a multi-member cluster means its
// cluster has a quorum: start the members of a new cluster concurrently
// (StartCluster does).
func StartEmbedded(ctx context.Context, cfg EmbedConfig) (*Embedded, error) {
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
	ec.Metrics = "basic"
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "embedded etcd: start member %s: %v", cfg.Name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, errs.Wrap(errs.Unavailable, err, "embedded etcd: member %s failed: %v", cfg.Name, err)
	case <-ctx.Done():
		e.Close()
		return nil, errs.Wrap(errs.CodeOf(ctx.Err()), ctx.Err(), "embedded etcd: member %s not ready (is a quorum of its cluster started?)", cfg.Name)
	}
	return &Embedded{e: e, clientURL: cfg.ClientURL, peerURL: cfg.PeerURL}, nil
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
// free loopback ports, data under dir, concurrently, and answers them
// when all are ready.
func StartCluster(ctx context.Context, dir string, size int, lg *zap.Logger, unsafeNoFsync bool) ([]*Embedded, error) {
	if size < 1 {
		return nil, errs.New(errs.InvalidArgument, "embedded etcd: a cluster needs at least one member")
	}
	cfgs := make([]EmbedConfig, size)
	var peers []string
	for i := range cfgs {
		cu, err := FreeLoopbackURL()
		if err != nil {
			return nil, err
		}
		pu, err := FreeLoopbackURL()
		if err != nil {
			return nil, err
		}
		cfgs[i] = EmbedConfig{Name: fmt.Sprintf("etcd%d", i+1), Dir: dir, ClientURL: cu, PeerURL: pu, Logger: lg, UnsafeNoFsync: unsafeNoFsync}
		peers = append(peers, cfgs[i].Name+"="+pu)
	}
	out := make([]*Embedded, size)
	errc := make([]error, size)
	var wg sync.WaitGroup
	for i := range cfgs {
		cfgs[i].InitialCluster = strings.Join(peers, ",")
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errc[i] = StartEmbedded(ctx, cfgs[i])
		}()
	}
	wg.Wait()
	for _, err := range errc {
		if err != nil {
			for _, m := range out {
				if m != nil {
					m.Close()
				}
			}
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "embedded etcd: find a free loopback port: %v", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr, nil
}
