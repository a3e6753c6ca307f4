package fleet

import (
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
)

// Defaults of Config's zero fields.
const (
	DefaultPrefix      = "/harnessd/"
	DefaultTTL         = 10 * time.Second
	DefaultDialTimeout = 5 * time.Second
	// MinTTL is the shortest session lease TTL: etcd itself refuses
	// leases shorter than 1.5 election timeouts (1.5 s by default).
	MinTTL = 2 * time.Second
	// DefaultInlineBlobMax is the largest blob the etcd cache keeps in
	// etcd; larger blobs stay in the producing node's BlobDir.
	DefaultInlineBlobMax = 256 << 10
	// DefaultRetention is how long evidence stays in etcd.
	DefaultRetention = 7 * 24 * time.Hour
	// maxInlineBlobMax bounds InlineBlobMax: a completion puts up to two
	// blobs and two records in one Txn, under etcd's 1.5 MiB request limit.
	maxInlineBlobMax = 512 << 10
)

// Config of one node's membership.
type Config struct {
	Endpoints   []string      // etcd client URLs, e.g. http://127.0.0.1:2379
	Prefix      string        // key prefix; "" = "/harnessd/"
	Node        string        // this node's name (required, [A-Za-z0-9._-]{1,64})
	Advertise   string        // this node's HTTP base URL other nodes fetch blobs from ("" = serves none)
	TTL         time.Duration // session lease TTL; 0 = 10s; < 2s is INVALID_ARGUMENT
	DialTimeout time.Duration // 0 = 5s
	Logger      *zap.Logger   // nil = zap.NewNop()
	Cache       Cache         // nil = the etcd-backed cache (EtcdCache); else e.g. NewHTTPCache(url)
	BlobDir     string        // where this node keeps the blobs it produced, served to others (data dir/fleet-blobs)
	// Retention is how long evidence (result and action-cache records,
	// blobs) stays in etcd and in BlobDir after it was recorded (0 = 7
	// days; at least 4s): between Retention and 1.25 × Retention.
	Retention time.Duration
	// InlineBlobMax is the largest blob the etcd cache stores in etcd
	// (0 = 256 KiB, at most 512 KiB); every blob this node produced is
	// also kept in BlobDir.
	InlineBlobMax int
	// SealKey is the fleet key a person gave every node (the data dir's
	// fleet.secret; nil = none). With it, every result and action-cache
	// record is sealed (an HMAC under the key) and a record without a
	// valid seal is refused, and the key (not the secret in etcd) is the
	// bearer token of the node-to-node blob fetch: whoever can write etcd
	// or the remote cache, but does not hold the key, cannot forge
	// evidence. At least 16 bytes.
	SealKey []byte
}

var nodeNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// validate checks cfg and fills in its defaults.
func (cfg *Config) validate() error {
	if cfg.SealKey != nil && len(cfg.SealKey) < 16 {
		return errs.New(errs.InvalidArgument, "fleet: the fleet key has %d bytes; give at least 16 (e.g. head -c 32 /dev/urandom | xxd -p -c 64 > fleet.secret)", len(cfg.SealKey))
	}
	if len(cfg.Endpoints) == 0 {
		return errs.New(errs.InvalidArgument, "fleet: no etcd endpoints; pass --cluster-store etcd://host:2379,... or --embed-etcd")
	}
	for _, e := range cfg.Endpoints {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errs.New(errs.InvalidArgument, "fleet: etcd endpoint %q is not an http(s)://host:port URL", e)
		}
	}
	if err := ValidNodeName(cfg.Node); err != nil {
		return err
	}
	p, err := normPrefix(cfg.Prefix)
	if err != nil {
		return err
	}
	cfg.Prefix = p
	if cfg.Advertise != "" {
		u, err := url.Parse(cfg.Advertise)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errs.New(errs.InvalidArgument, "fleet: advertise URL %q is not an http(s)://host:port base URL", cfg.Advertise)
		}
		cfg.Advertise = strings.TrimRight(cfg.Advertise, "/")
	}
	switch {
	case cfg.TTL == 0:
		cfg.TTL = DefaultTTL
	case cfg.TTL < MinTTL:
		return errs.New(errs.InvalidArgument, "fleet: session TTL %s is below the minimum %s; pass a TTL of at least 2s", cfg.TTL, MinTTL)
	case cfg.TTL%time.Second != 0:
		return errs.New(errs.InvalidArgument, "fleet: session TTL %s is not a whole number of seconds (etcd leases count seconds)", cfg.TTL)
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	switch {
	case cfg.Retention == 0:
		cfg.Retention = DefaultRetention
	case cfg.Retention < 4*time.Second:
		return errs.New(errs.InvalidArgument, "fleet: evidence retention %s is below 4s", cfg.Retention)
	}
	switch {
	case cfg.InlineBlobMax == 0:
		cfg.InlineBlobMax = DefaultInlineBlobMax
	case cfg.InlineBlobMax < 0 || cfg.InlineBlobMax > maxInlineBlobMax:
		return errs.New(errs.InvalidArgument, "fleet: inline blob max %d is outside 1..%d bytes (a completion must fit etcd's 1.5 MiB request)", cfg.InlineBlobMax, maxInlineBlobMax)
	}
	return nil
}

// ValidNodeName answers INVALID_ARGUMENT unless name is 1 to 64 of
// [A-Za-z0-9._-].
func ValidNodeName(name string) error {
	if !nodeNameRE.MatchString(name) {
		return errs.New(errs.InvalidArgument, "fleet: node name %q must be 1 to 64 of [A-Za-z0-9._-]; pick --node-name", name)
	}
	return nil
}

// normPrefix answers the key prefix: "" is DefaultPrefix; others must
// start with "/" and get a trailing "/".
func normPrefix(p string) (string, error) {
	if p == "" {
		return DefaultPrefix, nil
	}
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " \t\n\x00") {
		return "", errs.New(errs.InvalidArgument, "fleet: key prefix %q must start with / and hold no spaces, e.g. /harnessd/", p)
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p, nil
}

// ParseStore parses a --cluster-store value, "etcd://h1:2379,h2:2379"
// (or "etcds://…" for TLS), into etcd client URLs
// ["http://h1:2379","http://h2:2379"]. A host without a port gets 2379.
func ParseStore(s string) ([]string, error) {
	scheme := ""
	rest := ""
	switch {
	case strings.HasPrefix(s, "etcd://"):
		scheme, rest = "http", strings.TrimPrefix(s, "etcd://")
	case strings.HasPrefix(s, "etcds://"):
		scheme, rest = "https", strings.TrimPrefix(s, "etcds://")
	default:
		return nil, errs.New(errs.InvalidArgument, "cluster store %q: want etcd://host:port[,host:port...] (or etcds:// for TLS)", s)
	}
	if rest == "" {
		return nil, errs.New(errs.InvalidArgument, "cluster store %q names no etcd host; want etcd://host:port[,host:port...]", s)
	}
	var out []string
	seen := map[string]bool{}
	for _, hp := range strings.Split(rest, ",") {
		if hp == "" {
			return nil, errs.New(errs.InvalidArgument, "cluster store %q has an empty host between commas", s)
		}
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			// No port: the host alone (an IPv6 literal needs brackets).
			if strings.Contains(hp, "/") || strings.Count(hp, ":") > 0 && !strings.HasPrefix(hp, "[") {
				return nil, errs.New(errs.InvalidArgument, "cluster store %q: %q is not host:port", s, hp)
			}
			host, port = strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]"), "2379"
		}
		if host == "" || strings.ContainsAny(host, "/?#@ \t") {
			return nil, errs.New(errs.InvalidArgument, "cluster store %q: %q has no valid host", s, hp)
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return nil, errs.New(errs.InvalidArgument, "cluster store %q: port %q of %q is not a number in 1..65535", s, port, hp)
		}
		u := scheme + "://" + net.JoinHostPort(host, port)
		if pu, err := url.Parse(u); err != nil || pu.Host != net.JoinHostPort(host, port) {
			return nil, errs.New(errs.InvalidArgument, "cluster store %q: %q is not a valid host:port", s, hp)
		}
		if seen[u] {
			return nil, errs.New(errs.InvalidArgument, "cluster store %q names %s twice", s, hp)
		}
		seen[u] = true
		out = append(out, u)
	}
	return out, nil
}

// ValidIdentity answers INVALID_ARGUMENT unless id is a check identity,
// "sha256:" and 64 lowercase hex digits; it returns the hex.
func ValidIdentity(id string) (string, error) {
	h, ok := strings.CutPrefix(id, "sha256:")
	if !ok || !isHex64(h) {
		return "", errs.New(errs.InvalidArgument, "fleet: check identity %q is not sha256:<64 lowercase hex>", id)
	}
	return h, nil
}

// isHex64 reports whether h is 64 lowercase hex digits (a sha256).
func isHex64(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
