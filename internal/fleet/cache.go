package fleet

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/harnessd/harnessd/contract/errs"
)

// Cache is an action cache and a content-addressed store, in the shape
// of REAPI's ActionCache and ContentAddressableStorage. The fleet checks
// every blob it gets against its digest, whatever the Cache answers.
type Cache interface {
	// GetActionResult answers errs.NotFound when absent.
	GetActionResult(ctx context.Context, d Digest) (*ActionRecord, error)
	UpdateActionResult(ctx context.Context, d Digest, r *ActionRecord) error
	// GetBlob answers errs.NotFound when absent.
	GetBlob(ctx context.Context, d Digest) ([]byte, error)
	PutBlob(ctx context.Context, d Digest, b []byte) error
}

// EtcdCache is the fleet's own cache: action records at <prefix>ac/<hex>
// (serialized ActionResults) and blobs of at most InlineBlobMax bytes at
// <prefix>cas/<hex>; larger blobs stay with the node that produced them.
// A completion writes its records and blobs in the Txn that checks its
// claim (ops), so a refused completion leaves nothing behind.
type EtcdCache struct {
	cli       *clientv3.Client
	keys      keys
	inlineMax int
	ret       *retention // every record and blob is put with its lease
}

// GetActionResult reads <prefix>ac/<hex>.
func (c *EtcdCache) GetActionResult(ctx context.Context, d Digest) (*ActionRecord, error) {
	resp, err := c.cli.Get(ctx, c.keys.ac(d.Hash))
	if err != nil {
		return nil, etcdError(err, "read the action cache")
	}
	if len(resp.Kvs) == 0 {
		return nil, errs.New(errs.NotFound, "fleet: no action-cache record for %s", d.Hash)
	}
	return UnmarshalActionRecord(resp.Kvs[0].Value)
}

// UpdateActionResult writes <prefix>ac/<hex>.
func (c *EtcdCache) UpdateActionResult(ctx context.Context, d Digest, r *ActionRecord) error {
	b, err := r.Marshal()
	if err != nil {
		return err
	}
	rl, err := c.ret.lease(ctx)
	if err != nil {
		return err
	}
	if _, err := c.cli.Put(ctx, c.keys.ac(d.Hash), string(b), clientv3.WithLease(rl)); err != nil {
		return etcdError(err, "write the action cache")
	}
	return nil
}

// GetBlob reads <prefix>cas/<hex>.
func (c *EtcdCache) GetBlob(ctx context.Context, d Digest) ([]byte, error) {
	resp, err := c.cli.Get(ctx, c.keys.cas(d.Hash))
	if err != nil {
		return nil, etcdError(err, "read a blob")
	}
	if len(resp.Kvs) == 0 {
		return nil, errs.New(errs.NotFound, "fleet: blob %s is not in etcd", d)
	}
	return resp.Kvs[0].Value, nil
}

// PutBlob writes <prefix>cas/<hex> if the blob is small enough; a larger
// one is left to node-to-node fetch.
func (c *EtcdCache) PutBlob(ctx context.Context, d Digest, b []byte) error {
	if len(b) > c.inlineMax {
		return nil
	}
	rl, err := c.ret.lease(ctx)
	if err != nil {
		return err
	}
	if _, err := c.cli.Put(ctx, c.keys.cas(d.Hash), string(b), clientv3.WithLease(rl)); err != nil {
		return etcdError(err, "write a blob")
	}
	return nil
}

// ops answers the Txn operations that record a completion: the blobs
// small enough for etcd, and the action record if there is one, put
// with the retention lease rl.
func (c *EtcdCache) ops(ad Digest, rec *ActionRecord, recBytes []byte, blobs [][]byte, rl clientv3.LeaseID) []clientv3.Op {
	var ops []clientv3.Op
	for _, b := range blobs {
		if len(b) > 0 && len(b) <= c.inlineMax {
			ops = append(ops, clientv3.OpPut(c.keys.cas(DigestOf(b).Hash), string(b), clientv3.WithLease(rl)))
		}
	}
	if rec != nil {
		ops = append(ops, clientv3.OpPut(c.keys.ac(ad.Hash), string(recBytes), clientv3.WithLease(rl)))
	}
	return ops
}

// HTTPCache is a remote cache speaking the HTTP protocol of bazel-remote
// and Bazel's --remote_cache=http://…: GET/PUT <base>/ac/<hex> with a
// serialized ActionResult, GET/PUT <base>/cas/<hex> with the raw bytes.
type HTTPCache struct {
	base string
	hc   *http.Client
}

// NewHTTPCache answers the cache at base, an http(s) URL (a path prefix
// such as http://cache:8080/team is kept).
func NewHTTPCache(base string) (*HTTPCache, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, errs.New(errs.InvalidArgument, "remote cache %q is not an http(s)://host[:port][/path] URL", base)
	}
	return &HTTPCache{base: strings.TrimRight(base, "/"), hc: &http.Client{Timeout: 60 * time.Second}}, nil
}

// GetActionResult GETs <base>/ac/<hex>.
func (c *HTTPCache) GetActionResult(ctx context.Context, d Digest) (*ActionRecord, error) {
	b, err := c.get(ctx, "ac", d, 4<<20)
	if err != nil {
		return nil, err
	}
	return UnmarshalActionRecord(b)
}

// UpdateActionResult PUTs <base>/ac/<hex>.
func (c *HTTPCache) UpdateActionResult(ctx context.Context, d Digest, r *ActionRecord) error {
	b, err := r.Marshal()
	if err != nil {
		return err
	}
	return c.put(ctx, "ac", d, b, r.Token)
}

// GetBlob GETs <base>/cas/<hex>, reading at most the digest's size plus
// one byte (so a longer answer fails its check instead of filling memory).
func (c *HTTPCache) GetBlob(ctx context.Context, d Digest) ([]byte, error) {
	return c.get(ctx, "cas", d, d.Size+1)
}

// PutBlob PUTs <base>/cas/<hex>.
func (c *HTTPCache) PutBlob(ctx context.Context, d Digest, b []byte) error {
	return c.put(ctx, "cas", d, b, 0)
}

func (c *HTTPCache) get(ctx context.Context, kind string, d Digest, limit int64) ([]byte, error) {
	if err := d.valid(); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/"+kind+"/"+d.Hash, nil)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "remote cache: build request")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "remote cache %s unreachable: %v", c.base, err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, errs.New(errs.NotFound, "remote cache has no %s entry %s", kind, d.Hash)
	default:
		return nil, errs.New(errs.Unavailable, "remote cache %s answered %s for %s/%s", c.base, resp.Status, kind, d.Hash)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "remote cache %s: read %s/%s: %v", c.base, kind, d.Hash, err)
	}
	return b, nil
}

// FencingTokenHeader carries an action record's token (its claim's etcd
// revision) on the PUT of the record: a cache that fences refuses a
// token below the highest it has seen for the action (409), so a run
// whose claim was retaken cannot overwrite the newer run's record.
const FencingTokenHeader = "X-Harnessd-Fencing-Token"

func (c *HTTPCache) put(ctx context.Context, kind string, d Digest, b []byte, token int64) error {
	if err := d.valid(); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.base+"/"+kind+"/"+d.Hash, bytes.NewReader(b))
	if err != nil {
		return errs.Wrap(errs.Internal, err, "remote cache: build request")
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if token > 0 {
		req.Header.Set(FencingTokenHeader, strconv.FormatInt(token, 10))
	}
	req.ContentLength = int64(len(b))
	resp, err := c.hc.Do(req)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "remote cache %s unreachable: %v", c.base, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusConflict && token > 0 {
		return errs.New(errs.LeaseLost, "remote cache %s refused %s/%s: a newer run's token is recorded there (this one's is %d)", c.base, kind, d.Hash, token)
	}
	if resp.StatusCode/100 != 2 {
		return errs.New(errs.Unavailable, "remote cache %s refused PUT %s/%s: %s", c.base, kind, d.Hash, resp.Status)
	}
	return nil
}

// etcdError maps an etcd client error: a context's end keeps its code
// (TIMEOUT, CANCELLED); anything else is UNAVAILABLE.
func etcdError(err error, doing string) error {
	if c := errs.CodeOf(err); c == errs.Timeout || c == errs.Cancelled {
		return errs.Wrap(c, err, "fleet: %s: %v", doing, err)
	}
	return errs.Wrap(errs.Unavailable, err, "fleet: %s: etcd answered %v; retry when etcd has a quorum", doing, err)
}
