package fleet

import (
	"crypto/subtle"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// BlobPath is the URL path prefix of node-to-node blob fetch:
// GET <advertise>/v1/fleet/blobs/sha256/<hex>.
const BlobPath = "/v1/fleet/blobs/sha256/"

// blobDir keeps the blobs this node produced, at <dir>/sha256/<hex>
// (0600, written atomically). The zero value (no dir) keeps none.
type blobDir struct{ dir string }

func (b blobDir) path(hex string) string { return filepath.Join(b.dir, "sha256", hex) }

// put writes blob under its digest (temp file + rename), unless it is
// already there.
func (b blobDir) put(blob []byte) error {
	if b.dir == "" {
		return nil
	}
	d := DigestOf(blob)
	p := b.path(d.Hash)
	if fi, err := os.Stat(p); err == nil && fi.Size() == d.Size {
		now := time.Now()
		_ = os.Chtimes(p, now, now) // named by new evidence: kept as long as it
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return errs.Wrap(errs.Internal, err, "fleet: create blob dir %s", filepath.Dir(p))
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-"+d.Hash[:16]+"-*")
	if err != nil {
		return errs.Wrap(errs.Internal, err, "fleet: write blob %s", d.Hash)
	}
	tmp := f.Name()
	_, werr := f.Write(blob)
	serr := f.Sync()
	cerr := f.Close()
	if err := firstErr(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp)
		return errs.Wrap(errs.Internal, err, "fleet: write blob %s", d.Hash)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return errs.Wrap(errs.Internal, err, "fleet: write blob %s", d.Hash)
	}
	return nil
}

// get reads the blob of hex; errs.NotFound if absent. Unverified.
func (b blobDir) get(hex string, limit int64) ([]byte, error) {
	if b.dir == "" || !isHex64(hex) {
		return nil, errs.New(errs.NotFound, "fleet: blob %s is not kept here", hex)
	}
	f, err := os.Open(b.path(hex))
	if err != nil {
		return nil, errs.New(errs.NotFound, "fleet: blob %s is not kept here", hex)
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "fleet: read blob %s", hex)
	}
	return data, nil
}

func firstErr(es ...error) error {
	for _, e := range es {
		if e != nil {
			return e
		}
	}
	return nil
}

// BlobHandler serves GET (and HEAD) BlobPath+<hex> from the node's
// BlobDir to the other nodes of the fleet: it requires "Authorization:
// Bearer <fleet secret>" (401 otherwise), answers 400 for anything but 64
// lowercase hex digits after the prefix (so no path reaches the disk but
// <BlobDir>/sha256/<hex>), and 404 for a blob it does not keep. Mount it
// at BlobPath (or a prefix of it).
func BlobHandler(n *Node) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r.Header.Get("Authorization"), n.secret) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="harnessd-fleet"`)
			http.Error(w, "fleet blob fetch needs the fleet secret as a bearer token", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		hex, ok := strings.CutPrefix(r.URL.Path, BlobPath)
		if !ok || !isHex64(hex) {
			http.Error(w, "want "+BlobPath+"<64 lowercase hex>", http.StatusBadRequest)
			return
		}
		f, err := os.Open(n.blobs.path(hex))
		if err != nil || n.blobs.dir == "" {
			if f != nil {
				_ = f.Close()
			}
			http.Error(w, "no such blob", http.StatusNotFound)
			return
		}
		defer func() { _ = f.Close() }()
		w.Header().Set("Content-Type", "application/octet-stream")
		if fi, err := f.Stat(); err == nil {
			w.Header().Set("Content-Length", itoa(fi.Size()))
		}
		if r.Method == http.MethodHead {
			return
		}
		_, _ = io.Copy(w, f)
	})
}

// authorized reports whether header is "Bearer <secret>" (constant time).
func authorized(header, secret string) bool {
	tok, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || secret == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(tok), []byte(secret)) == 1
}
