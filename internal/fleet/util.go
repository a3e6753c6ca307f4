package fleet

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// atoi answers the decimal s, or 0.
func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// randomHex answers n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
