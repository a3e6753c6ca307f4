// Package persistence is harnessd's Badger-backed store: typed get/put/delete
// and prefix scans of values wrapped in a versioned JSON envelope.
//
// keys.go is the only place that builds keys; codec.go owns the envelope.
// Callers see ErrNotFound, never Badger's own errors. The Store is safe for
// concurrent use; actors write their snapshots straight through it.
package persistence
