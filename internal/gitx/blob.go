package gitx

import (
	"hash"
	"strconv"
)

// WriteBlobHeader writes git's object header of a blob of size bytes to h:
// the blob's object id is the hash of this header and its content.
func WriteBlobHeader(h hash.Hash, size int64) {
	h.Write([]byte("blob "))
	h.Write(strconv.AppendInt(nil, size, 10))
	h.Write([]byte{0})
}
