package op

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// ResultCache keeps large step results of batches in memory, by
// reference, with a TTL and a total byte cap; the oldest entries go first.
type ResultCache struct {
	TTL      time.Duration // 0 = 10 min
	Cap      int           // total bytes kept; 0 = 64 MiB
	EntryMax int           // a bigger single result is not kept; 0 = 16 MiB

	mu      sync.Mutex // protects entries, order and bytes
	entries map[string]cacheEntry
	order   []string // insertion order
	bytes   int
}

type cacheEntry struct {
	data    []byte
	expires time.Time
}

func (c *ResultCache) ttl() time.Duration {
	if c.TTL > 0 {
		return c.TTL
	}
	return 10 * time.Minute
}

func (c *ResultCache) cap() int {
	if c.Cap > 0 {
		return c.Cap
	}
	return 64 << 20
}

func (c *ResultCache) entryMax() int {
	if c.EntryMax > 0 {
		return c.EntryMax
	}
	return 16 << 20
}

// Put keeps b and returns its reference, or false when b is too large.
func (c *ResultCache) Put(b []byte, now time.Time) (string, bool) {
	if len(b) > c.entryMax() {
		return "", false
	}
	var r [12]byte
	_, _ = rand.Read(r[:])
	ref := "bres_" + hex.EncodeToString(r[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]cacheEntry{}
	}
	c.evictLocked(now, len(b))
	c.entries[ref] = cacheEntry{data: b, expires: now.Add(c.ttl())}
	c.order = append(c.order, ref)
	c.bytes += len(b)
	return ref, true
}

// evictLocked drops expired entries and, oldest first, enough others for
// need more bytes to fit under the cap.
func (c *ResultCache) evictLocked(now time.Time, need int) {
	n := 0
	for _, ref := range c.order {
		e, ok := c.entries[ref]
		if ok && now.Before(e.expires) && c.bytes+need <= c.cap() {
			break
		}
		if ok {
			c.bytes -= len(e.data)
			delete(c.entries, ref)
		}
		n++
	}
	c.order = c.order[n:]
}

// Get returns a kept result that has not expired.
func (c *ResultCache) Get(ref string, now time.Time) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[ref]
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	return e.data, true
}
