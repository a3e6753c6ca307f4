package provenance

import (
	"sort"
	"strings"

	"github.com/harnessd/harnessd/internal/trailer"
	"github.com/harnessd/harnessd/internal/verify"
)

// Stamp is what git_commit records of a write: the ids the trailers carry.
type Stamp struct {
	ReceiptID string
	RunID     string
	// Policy is the digest of the policy in force ("sha256:<hex>").
	Policy    string
	Approvals []string
	Verified  []verify.Stamp
	RepoID    string
}

// Trailers returns the trailer block git_commit appends to a message, in
// a fixed order; empty ones (no run, no approvals, nothing verified) are
// left out.
func Trailers(s Stamp) []trailer.Trailer {
	ts := []trailer.Trailer{{Key: trailer.Receipt, Value: s.ReceiptID}}
	if s.RunID != "" {
		ts = append(ts, trailer.Trailer{Key: trailer.Run, Value: s.RunID})
	}
	ts = append(ts, trailer.Trailer{Key: trailer.Policy, Value: s.Policy})
	if len(s.Approvals) > 0 {
		ts = append(ts, trailer.Trailer{Key: trailer.Approvals, Value: strings.Join(s.Approvals, ",")})
	}
	if v := VerifiedValue(s.Verified); v != "" {
		ts = append(ts, trailer.Trailer{Key: trailer.Verified, Value: v})
	}
	return append(ts, trailer.Trailer{Key: trailer.Repo, Value: s.RepoID})
}

// VerifiedValue is the Harnessd-Verified value of stamps: "stage=identity"
// for every check that verified a stage ("stage=-" for a stage verified
// by receipts or files only), sorted, comma-separated.
func VerifiedValue(stamps []verify.Stamp) string {
	var items []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			items = append(items, s)
		}
	}
	for _, st := range stamps {
		n := 0
		for _, e := range st.Evidence {
			if e.Identity != "" {
				add(st.Stage + "=" + e.Identity)
				n++
			}
		}
		if n == 0 {
			add(st.Stage + "=-")
		}
	}
	sort.Strings(items)
	return strings.Join(items, ",")
}
