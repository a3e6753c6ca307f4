package console

import (
	"net/url"

	"github.com/harnessd/harnessd/messages"
)

// auditQuery reads the audit log oldest first: the entries after
// afterSeq, at most limit, and whether more follow.
type auditQuery func(afterSeq uint64, limit int) ([]messages.AuditEntry, bool, error)

// auditBatch is the entries read per query while filtering.
const auditBatch = 1000

// oldestFirst returns up to limit entries after afterSeq that keep
// accepts, oldest first; more reports that the log goes on after next,
// the cursor (after_seq) of the following page.
func oldestFirst(query auditQuery, keep func(messages.AuditEntry) bool, afterSeq uint64, limit int) (out []messages.AuditEntry, more bool, next uint64, err error) {
	next = afterSeq
	for {
		es, m, err := query(next, auditBatch)
		if err != nil {
			return nil, false, 0, err
		}
		for _, e := range es {
			if len(out) == limit {
				return out, true, next, nil
			}
			next = e.Seq
			if keep(e) {
				out = append(out, e)
			}
		}
		if !m || len(es) == 0 {
			return out, false, next, nil
		}
	}
}

// newestFirst returns up to limit entries with Seq below before that keep
// accepts, newest first, reading the log backwards in windows of
// sequence numbers that double (the log is read oldest first); more
// reports that older entries remain.
func newestFirst(query auditQuery, keep func(messages.AuditEntry) bool, before uint64, limit int) (out []messages.AuditEntry, more bool, err error) {
	window := uint64(2 * limit)
	hi := before // exclusive
	for hi > 1 && len(out) < limit {
		lo := uint64(0) // exclusive
		if hi-1 > window {
			lo = hi - 1 - window
		}
		var chunk []messages.AuditEntry
		after := lo
	read:
		for {
			es, m, err := query(after, auditBatch)
			if err != nil {
				return nil, false, err
			}
			for _, e := range es {
				if e.Seq >= hi {
					break read
				}
				after = e.Seq
				if keep(e) {
					chunk = append(chunk, e)
				}
			}
			if !m || len(es) == 0 {
				break
			}
		}
		i := len(chunk) - 1
		for ; i >= 0 && len(out) < limit; i-- {
			out = append(out, chunk[i])
		}
		if len(out) == limit {
			return out, i >= 0 || lo > 0, nil
		}
		hi = lo + 1
		window *= 2
	}
	return out, false, nil
}

// filterQuery is the query string of a list page's filter and kind,
// without its cursors, for the links to other pages and orders.
func filterQuery(q url.Values) string {
	out := url.Values{}
	for _, k := range []string{"kind", "repo", "state", "client", "since", "until"} {
		if v := q.Get(k); v != "" {
			out.Set(k, v)
		}
	}
	return out.Encode()
}
