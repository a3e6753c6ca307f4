package search

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/harnessd/harnessd/contract/errs"
)

// Fill reads every file of files (as SearchListed takes them) that c does
// not know yet into c: its trigrams into the index, its negative facts,
// and its content within the cache's share. A search after it opens only
// the files its query's trigrams pick. It is SearchListed with a query no
// file holds (a random literal), repeated while a round ends at the
// Searcher's timeout (each round keeps what it read), at most fillRounds
// times, until ctx ends.
// The live index runs it in the background, so the first search of a big
// checkout is answered by rg rather than by building the index inline.
func (c *Cache) Fill(ctx context.Context, s *Searcher, root string, files []string) error {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	req := Request{Query: "harnessd-fill-" + hex.EncodeToString(b[:]), MaxResults: 1}
	var err error
	for range fillRounds {
		_, err = s.SearchListed(ctx, root, files, req, c)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil || errs.CodeOf(err) != errs.Timeout {
			return err
		}
	}
	return err
}

// fillRounds bounds Fill's rounds: a tree whose files do not fit the
// cache is read from disk on every round, and would never finish.
const fillRounds = 8
