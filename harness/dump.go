package harness

import (
	"context"
	"fmt"
	"io"

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
