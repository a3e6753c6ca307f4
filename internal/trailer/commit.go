package trailer

import (
	"errors"
	"strings"
)

// ErrMalformedCommit is returned by SplitCommit for bytes that are not a
// commit object.
var ErrMalformedCommit = errors.New("trailer: malformed commit object")

// Commit is what SplitCommit reads from a raw commit object.
type Commit struct {
	Tree    string
	Parents []string
	Message string
}

// SplitCommit parses the output of `git cat-file commit REV`: header lines
// (continuation lines, such as a signature's, start with a space) up to
// the first blank line, then the message exactly as stored.
func SplitCommit(raw []byte) (Commit, error) {
	s := string(raw)
	var c Commit
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return Commit{}, ErrMalformedCommit
		}
		line := s[:i]
		s = s[i+1:]
		if line == "" {
			break
		}
		if line[0] == ' ' {
			continue // continuation of the previous header
		}
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "tree":
			c.Tree = v
		case "parent":
			c.Parents = append(c.Parents, v)
		}
	}
	if c.Tree == "" {
		return Commit{}, ErrMalformedCommit
	}
	c.Message = s
	return c, nil
}
