//go:build !unix

package patch

// fileDevice reports no device where st_dev is not read: temp files then
// stay beside their target, where the rename is known to be atomic.
func fileDevice(string) (uint64, bool) { return 0, false }
