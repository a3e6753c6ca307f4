// Package trailer reads and writes the git trailers harnessd puts in the
// commits it makes (Harnessd-Receipt, Harnessd-Run, ...), and splits a raw
// commit object (git cat-file commit) into its parents and message.
//
// A trailer block is the last paragraph of a message (after the last
// blank line) when every line of it is a "Key: value" line (Key a token
// of letters, digits and '-') or a continuation line (starting with a
// space or tab). This is git's rule without its 25% allowance for
// non-trailer lines: harnessd writes its own block and reads only that.
package trailer
