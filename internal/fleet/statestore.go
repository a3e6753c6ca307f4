package fleet

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
)

// Where a job's state blob is kept, so that a node taking the job over
// finds it when the job's own node is gone (its blob dir with it):
//
//	<prefix>jobstate/<job_id>/<nnnn>   the blob in chunks of stateChunk bytes (up to StateEtcdMax),
//	                                   put with the evidence retention lease and deleted by the
//	                                   job's end (FinishJob)
//
// A larger blob goes to the remote cache (--remote-cache) by its digest,
// up to StateMax; without one it is not shipped.
//
// With the fleet key (Config.SealKey) the blob is stored encrypted
// (AES-256-GCM under a key derived from it, sealState): etcd's readers
// and the remote cache see ciphertext, and only a fleet member can read
// the checkout's uncommitted code. The digest is the stored bytes'.

// StateEtcdMax is the largest state blob (compressed) the fleet keeps in
// etcd; a larger one needs a remote cache.
const StateEtcdMax = 8 << 20

// stateChunk is the size of one etcd value of a state blob (etcd takes
// requests of up to 1.5 MiB).
const stateChunk = 1 << 20

// jobStates is <prefix>jobstate/.
func (k keys) jobStates() string { return k.prefix + "jobstate/" }

// jobState is <prefix>jobstate/<job_id>/: the prefix of a job's state chunks.
func (k keys) jobState(id string) string { return k.jobStates() + id + "/" }

// PutJobState stores blob, the uncommitted state of job jobID (before
// StartJob records the job with its digest), where another node can
// fetch it after this one is gone: in etcd when it is at most
// StateEtcdMax bytes, else in the remote cache (up to StateMax). A blob
// neither can keep is refused (BUDGET_EXCEEDED, saying why).
func (n *Node) PutJobState(ctx context.Context, jobID string, blob []byte) (Digest, error) {
	if key := n.cfg.SealKey; key != nil {
		var err error
		if blob, err = sealState(key, jobID, blob); err != nil {
			return Digest{}, err
		}
	}
	d := DigestOf(blob)
	switch {
	case len(blob) <= StateEtcdMax:
	case n.etcdc != nil:
		return Digest{}, errs.New(errs.BudgetExceeded, "the uncommitted state is %d KiB compressed, over the %d MiB the fleet keeps in etcd (a --remote-cache keeps up to %d MiB)",
			len(blob)>>10, StateEtcdMax>>20, StateMax>>20)
	case len(blob) > StateMax:
		return Digest{}, errs.New(errs.BudgetExceeded, "the uncommitted state is %d MiB compressed, over %d MiB", len(blob)>>20, StateMax>>20)
	default:
		if err := n.cache.PutBlob(ctx, d, blob); err != nil {
			return Digest{}, err
		}
		return d, nil
	}
	rl, err := n.ret.lease(ctx)
	if err != nil {
		return Digest{}, err
	}
	for i := 0; i*stateChunk < len(blob) || i == 0; i++ {
		chunk := blob[i*stateChunk : min((i+1)*stateChunk, len(blob))]
		if _, err := n.cli.Put(ctx, stateChunkKey(n.keys, jobID, i), string(chunk), clientv3.WithLease(rl)); err != nil {
			n.DropJobState(context.WithoutCancel(ctx), jobID)
			return Digest{}, etcdError(err, "store the uncommitted state of fleet job "+jobID)
		}
	}
	return d, nil
}

func stateChunkKey(k keys, jobID string, i int) string {
	return k.jobState(jobID) + fmt.Sprintf("%04d", i)
}

// DropJobState deletes what PutJobState put in etcd for jobID (after a
// StartJob that did not record it); a failure is logged, and the
// retention lease removes the chunks later.
func (n *Node) DropJobState(ctx context.Context, jobID string) {
	if _, err := n.cli.Delete(ctx, n.keys.jobState(jobID), clientv3.WithPrefix()); err != nil {
		n.lg.Warn("fleet: deleting a job's unused state failed (the retention lease removes it)", zap.String("job_id", jobID), zap.Error(err))
	}
}

// JobState answers the uncommitted state blob of rec (rec.StateBlob), from
// etcd or the remote cache, checked against its digest: a blob that does
// not match is refused (INVALID_ARGUMENT, naming where it came from), one
// found nowhere is NOT_FOUND.
func (n *Node) JobState(ctx context.Context, rec JobRecord) ([]byte, error) {
	d := rec.StateBlob
	if err := d.valid(); err != nil {
		return nil, err
	}
	resp, err := n.cli.Get(ctx, n.keys.jobState(rec.JobID), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, etcdError(err, "read the uncommitted state of fleet job "+rec.JobID)
	}
	from := "etcd"
	var blob []byte
	if len(resp.Kvs) > 0 {
		for i, kv := range resp.Kvs {
			if string(kv.Key) != stateChunkKey(n.keys, rec.JobID, i) || int64(len(blob)+len(kv.Value)) > d.Size {
				return nil, refusedState(rec, from)
			}
			blob = append(blob, kv.Value...)
		}
	} else if n.etcdc == nil {
		from = "the remote cache"
		if blob, err = n.cache.GetBlob(ctx, d); err != nil {
			if errs.CodeOf(err) == errs.NotFound {
				return nil, errs.New(errs.NotFound, "fleet job %s: its uncommitted state (%s) is neither in etcd nor in the remote cache (expired?)", rec.JobID, d)
			}
			return nil, err
		}
	} else {
		return nil, errs.New(errs.NotFound, "fleet job %s: its uncommitted state (%s) is not in etcd (expired, or removed)", rec.JobID, d)
	}
	if !d.verify(blob) {
		return nil, refusedState(rec, from)
	}
	if key := n.cfg.SealKey; key != nil {
		plain, err := openState(key, rec.JobID, blob)
		if err != nil {
			return nil, refusedState(rec, from)
		}
		return plain, nil
	}
	return blob, nil
}

// stateKeyDomain derives the state blobs' encryption key from the fleet key.
const stateKeyDomain = "harnessd-fleet-job-state-v1"

func stateAEAD(key []byte) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(stateKeyDomain))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "fleet: state cipher: %v", err)
	}
	return cipher.NewGCM(block)
}

// sealState encrypts blob for job jobID: a random nonce, then the
// AES-256-GCM ciphertext with the job id as additional data (a blob
// moved to another job does not open).
func sealState(key []byte, jobID string, blob []byte) ([]byte, error) {
	aead, err := stateAEAD(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(blob)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, errs.Wrap(errs.Internal, err, "fleet: state nonce: %v", err)
	}
	return aead.Seal(nonce, nonce, blob, []byte(jobID)), nil
}

// openState decrypts what sealState made for jobID.
func openState(key []byte, jobID string, sealed []byte) ([]byte, error) {
	aead, err := stateAEAD(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize() {
		return nil, errs.New(errs.InvalidArgument, "fleet: a sealed state is too short")
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(jobID))
	if err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "fleet: a sealed state does not open under the fleet key")
	}
	return plain, nil
}

func refusedState(rec JobRecord, from string) error {
	return errs.New(errs.InvalidArgument, "fleet job %s: the uncommitted state from %s does not match its digest %s (or, sealed, does not open under the fleet key): refused (corrupted or substituted)", rec.JobID, from, rec.StateBlob).
		With("job_id", rec.JobID)
}
