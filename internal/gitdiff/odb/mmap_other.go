//go:build !unix

package odb

import "os"

// mapFile reads path whole (no mmap here).
func mapFile(path string) ([]byte, func(), error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return b, func() {}, nil
}
