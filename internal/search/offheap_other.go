//go:build !unix

package search

// mapAnon returns n bytes (of the Go heap: no anonymous mappings here).
func mapAnon(n int) []byte { return make([]byte, n) }

func unmapAnon([]byte) {}
