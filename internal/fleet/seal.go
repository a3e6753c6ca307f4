package fleet

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// sealDomain separates record seals from every other use of the key.
const sealDomain = "harnessd-fleet-record-v1"

// sealRecord answers the seal of r for identity under key: the hex
// HMAC-SHA256 over an unambiguous (length-prefixed) encoding of every
// field of the record but the seal itself. A record sealed by a node
// that holds the fleet key cannot be forged or altered by anyone who can
// only write etcd (or the remote cache).
func sealRecord(key []byte, identity string, r *ActionRecord) string {
	m := hmac.New(sha256.New, key)
	w := sealWriter{h: m}
	w.str(sealDomain)
	w.str(identity)
	w.u64(uint64(int64(r.ExitCode)))
	w.str(r.Stdout.Hash)
	w.u64(uint64(r.Stdout.Size))
	w.str(r.Stderr.Hash)
	w.u64(uint64(r.Stderr.Size))
	w.str(r.Node)
	w.u64(uint64(r.StartedAt.UnixNano()))
	w.u64(uint64(r.FinishedAt.UnixNano()))
	w.flag(r.Passed)
	w.flag(r.TimedOut)
	w.flag(r.Cancelled)
	w.u64(uint64(len(r.Summary)))
	for _, s := range r.Summary {
		w.str(s)
	}
	w.str(r.Path)
	w.str(r.RepoID)
	w.str(r.JobID)
	w.str(r.RunID)
	w.u64(uint64(r.Token))
	return hex.EncodeToString(m.Sum(nil))
}

// sealValid reports whether r carries the seal of identity under key
// (compared in constant time).
func sealValid(key []byte, identity string, r *ActionRecord) bool {
	want := sealRecord(key, identity, r)
	return hmac.Equal([]byte(r.Seal), []byte(want))
}

type sealWriter struct {
	h   hash.Hash
	buf [8]byte
}

func (w *sealWriter) u64(v uint64) {
	binary.BigEndian.PutUint64(w.buf[:], v)
	w.h.Write(w.buf[:])
}

func (w *sealWriter) str(s string) {
	w.u64(uint64(len(s)))
	w.h.Write([]byte(s))
}

func (w *sealWriter) flag(b bool) {
	if b {
		w.u64(1)
		return
	}
	w.u64(0)
}
