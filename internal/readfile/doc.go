// Package readfile implements the read_file operation: a bounded, line-windowed
// read of one text file inside a repository root, with the whole file's size
// and SHA-256.
package readfile
