//go:build !linux

package procstat

// Tree is not supported on this platform: it returns nothing.
func Tree(root int) []int { return nil }

// Sample is not supported on this platform: it returns nothing.
func Sample(root int) []Proc { return nil }
