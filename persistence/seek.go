package persistence

import badger "github.com/dgraph-io/badger/v4"

// ScanFrom is Scan starting at the first key at or after from (which
// should begin with prefix): an index lookup or a log's tail reads only
// what it needs, not the keys before it.
func (s *Store) ScanFrom(prefix, from []byte, fn func(key []byte, decode func(v any) error) error) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.leave()
	s.reads.Add(1)
	return mapErr(s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		opts.PrefetchSize = 16
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(from); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			key := item.KeyCopy(nil)
			err := fn(key, func(v any) error {
				return item.Value(func(b []byte) error { return Decode(b, v) })
			})
			if err != nil {
				return err
			}
		}
		return nil
	}))
}
