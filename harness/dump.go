package harness

import (
	"context"
	"fmt"
	"io"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/persistence"
)

// DumpStore writes every key under prefix ("" = all) and its value,
// redacted, one per line: "<key>\t<envelope JSON>". For people debugging a
// data dir (harness store dump); values pass through the redactor so no
// secret is printed.
func (h *Harness) DumpStore(ctx context.Context, prefix string, w io.Writer) (int, error) {
	leave, err := h.enter()
	if err != nil {
		return 0, err
	}
	defer leave()
	n := 0
	err = h.store.ScanRaw([]byte(prefix), func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		red, _ := h.env.Redactor.Bytes(v)
		if _, err := fmt.Fprintf(w, "%s\t%s\n", persistence.Readable(k), red); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// VerifyStore checks the store while it serves: every table's checksums,
// its directory, and that it holds what its marks file recorded.
func (h *Harness) VerifyStore(ctx context.Context) (persistence.Report, error) {
	leave, err := h.enter()
	if err != nil {
		return persistence.Report{}, err
	}
	defer leave()
	r, err := h.store.Verify()
	if err != nil {
		return r, errs.Wrap(errs.Internal, err, "%v", err)
	}
	return r, nil
}

// BackupStore writes a full backup of the store to w (Badger's backup
// format; `harness store restore` reads it) and returns its version.
func (h *Harness) BackupStore(ctx context.Context, w io.Writer) (uint64, error) {
	leave, err := h.enter()
	if err != nil {
		return 0, err
	}
	defer leave()
	return h.store.Backup(w)
}
