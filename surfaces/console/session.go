package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"
)

// SessionTTL is how long a console login lasts.
const SessionTTL = 8 * time.Hour

// maxSessions bounds the sessions kept in memory; a login beyond it
// evicts the session that expires first.
const maxSessions = 64

// session is one logged-in browser.
type session struct {
	id      string
	csrf    string
	expires time.Time
}

// sessions holds the console's logins in memory: a daemon restart logs
// everyone out.
type sessions struct {
	now func() time.Time
	ttl time.Duration

	mu sync.Mutex // protects m
	m  map[string]session
}

func newSessions(now func() time.Time, ttl time.Duration) *sessions {
	if now == nil {
		now = time.Now
	}
	if ttl <= 0 {
		ttl = SessionTTL
	}
	return &sessions{now: now, ttl: ttl, m: map[string]session{}}
}

// randomToken returns 32 random bytes in hex.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// open starts a session.
func (s *sessions) open() session {
	now := s.now()
	ss := session{id: randomToken(), csrf: randomToken(), expires: now.Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	for len(s.m) >= maxSessions {
		var oldest string
		for id, x := range s.m {
			if oldest == "" || x.expires.Before(s.m[oldest].expires) {
				oldest = id
			}
		}
		delete(s.m, oldest)
	}
	s.m[ss.id] = ss
	return ss
}

// get returns the live session id names.
func (s *sessions) get(id string) (session, bool) {
	if id == "" {
		return session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[id]
	if !ok {
		return session{}, false
	}
	if !s.now().Before(ss.expires) {
		delete(s.m, id)
		return session{}, false
	}
	return ss, true
}

// close ends a session.
func (s *sessions) close(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// len reports the sessions held (expired ones included until swept).
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

func (s *sessions) sweepLocked(now time.Time) {
	for id, x := range s.m {
		if !now.Before(x.expires) {
			delete(s.m, id)
		}
	}
}

// validCSRF reports whether got is ss's CSRF token (constant time).
func (ss session) validCSRF(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf)) == 1
}

// tokenOK reports whether got is the human token (constant time). An
// empty token lets nobody in.
func tokenOK(want, got string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
