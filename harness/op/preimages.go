package op

import (
	"errors"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/preimage"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// A small write's pre-images are not fsynced before its file changes
// (preimage.Store.PutPending): each pending one's content rides the
// write's closing synced commit as a durable copy (preImageRecords), so the
// receipt that names a pre-image is never durable without it. Settling
// fsyncs the files in the background, many at once, and deletes their
// copies; a copy a crash left restores its file at the next start.

// preImageRecords returns the durable copies, for r's commit, of the
// pre-images r names whose files are still pending.
func preImageRecords(pre *preimage.Store, r *Receipt) ([]messages.StoreRecord, error) {
	if pre == nil {
		return nil, nil
	}
	var out []messages.StoreRecord
	seen := map[string]bool{}
	for _, refs := range [][]preimage.Ref{r.PreImages, r.GitFiles} {
		for _, ref := range refs {
			if ref.SHA256 == "" || ref.Absent || ref.NotKept != "" || seen[ref.SHA256] {
				continue
			}
			seen[ref.SHA256] = true
			data, ok := pre.Pending(ref.SHA256)
			if !ok {
				continue // synced: its file is its own durable copy
			}
			b, err := persistence.Encode(copyOf(data))
			if err != nil {
				return nil, err
			}
			out = append(out, messages.StoreRecord{Key: persistence.PreImageKey(ref.SHA256), Value: b})
		}
	}
	return out, nil
}

// preImageCopy is the stored form of a pre-image's durable copy: its text
// when it is valid UTF-8, so the store's dump redacts it as it redacts
// every other record (base64 would hide a secret value from the
// redactor), else its bytes.
type preImageCopy struct {
	Text string `json:"text,omitempty"`
	Data []byte `json:"data,omitempty"`
}

func copyOf(data []byte) preImageCopy {
	if utf8.Valid(data) {
		return preImageCopy{Text: string(data)}
	}
	return preImageCopy{Data: data}
}

func (c preImageCopy) bytes() []byte {
	if c.Data != nil {
		return c.Data
	}
	return []byte(c.Text)
}

// settlePreImages settles the pending pre-images in a task when enough
// are pending (preimage.Store.Due).
func (c *Call) settlePreImages() {
	env := c.Env
	if env.PreImages == nil || !env.PreImages.Due() {
		return
	}
	leave, err := c.pipe.Enter()
	if err != nil {
		return // closing: the copies stay, and the next start restores from them
	}
	env.RT.Tasks().Go(func() {
		defer leave()
		if err := SettlePreImages(env.Store, env.PreImages); err != nil {
			env.Logger.Warn("pre-images: settle", zap.Error(err))
		}
	})
}

// SettlePreImages fsyncs the files of the pending pre-images
// (preimage.Store.Settle) and deletes the durable copies of those now
// synced, in one unsynced transaction (a deletion a crash loses leaves a
// copy that RestorePreImages drops at the next start).
func SettlePreImages(store *persistence.Store, pre *preimage.Store) error {
	synced, err := pre.Settle()
	if len(synced) > 0 {
		derr := store.Update(false, func(tx *persistence.Txn) error {
			for _, d := range synced {
				if err := tx.Delete(persistence.PreImageKey(d)); err != nil {
					return err
				}
			}
			return nil
		})
		err = errors.Join(err, derr)
	}
	return err
}

// RestorePreImages runs once at start, before any write: every durable
// copy of a pre-image the store holds (a write's commit stored it and
// the process ended before its file was settled) makes its file whole
// and synced again (preimage.Store.Restore: rewritten when a power loss
// lost or garbled it), then the copies are deleted. A copy that is not
// its digest's content is deleted too, and named in the error: its
// receipts' reverts answer that the pre-image is no longer kept.
func RestorePreImages(store *persistence.Store, pre *preimage.Store) (int, error) {
	if pre == nil {
		return 0, nil
	}
	var keys [][]byte
	var bad []error
	err := store.Scan([]byte(persistence.PrefixPreImage), func(key []byte, decode func(any) error) error {
		keys = append(keys, key)
		d := string(key[len(persistence.PrefixPreImage):])
		var cp preImageCopy
		if err := decode(&cp); err != nil {
			bad = append(bad, errs.Wrap(errs.StoreDamaged, err, "the durable copy of pre-image %s does not decode: %v", d, err))
			return nil
		}
		if err := pre.Restore(d, cp.bytes()); err != nil {
			if errs.CodeOf(err) != errs.StoreDamaged {
				return err // the pre-image store's disk: keep the copy for the next start
			}
			bad = append(bad, err)
		}
		return nil
	})
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	err = store.Update(false, func(tx *persistence.Txn) error {
		for _, k := range keys {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	return len(keys), errors.Join(append(bad, err)...)
}
