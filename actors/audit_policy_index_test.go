package actors

import (
	"slices"
	"testing"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// A query for the loads of one policy digest reads them through the
// index, also over a log written before the policy term existed (whose
// other terms were indexed from its start): the loads before the term's
// start are scanned, the later ones read through the index, and together
// they are what a scan of every load answers.
func TestAuditIndexFindsPolicyLoadsByDigest(t *testing.T) {
	s, st := newTestSystem(t), newStore(t)
	load := func(digest, outcome string) messages.AuditEntry {
		return messages.AuditEntry{Kind: audit.KindPolicyLoad, Outcome: outcome, Actor: "person", PolicyDigest: digest}
	}
	pid := spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
	for i := range 12 {
		e := auditEntry(i)
		e.PolicyDigest = "sha256:aa" // every entry is stamped; only loads are indexed by it
		switch i {
		case 3:
			e = load("sha256:aa", "loaded")
		case 7:
			e = load("sha256:bb", "loaded")
		case 9:
			e = load("sha256:bb", "failed")
		}
		appendSync(t, s, pid, e)
	}
	stopAudit(t, s, pid)
	// The log predates the policy term: no policy records, no start.
	var drop [][]byte
	for _, e := range storedAudit(t, st) {
		other := e
		other.Kind = audit.KindMutation
		for _, term := range audit.IndexTerms(audit.Entry(e)) {
			if !slices.Contains(audit.IndexTerms(audit.Entry(other)), term) {
				drop = append(drop, persistence.AuditIndexKey(term, e.Seq))
			}
		}
	}
	if len(drop) != 3 {
		t.Fatalf("%d policy index records, want the 3 loads'", len(drop))
	}
	drop = append(drop, AuditPolicyIndexFromKey)
	if err := st.Update(true, func(tx *persistence.Txn) error {
		for _, k := range drop {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	pid = spawnAudit(t, s, NewAudit(st, zap.NewNop(), quietAudit))
	appendSync(t, s, pid, load("sha256:cc", "loaded"))
	appendSync(t, s, pid, load("sha256:aa", "loaded"))
	appendSync(t, s, pid, auditEntry(20))
	all := queryAudit(t, s, pid, messages.AuditQuery{Kind: audit.KindPolicyLoad}).Entries
	for _, digest := range []string{"sha256:aa", "sha256:bb", "sha256:cc", "sha256:dd"} {
		var want []uint64
		for _, e := range all {
			if e.PolicyDigest == digest {
				want = append(want, e.Seq)
			}
		}
		var got []uint64
		q := messages.AuditQuery{Kind: audit.KindPolicyLoad, PolicyDigest: digest, Limit: 1}
		for { // page by page
			page := queryAudit(t, s, pid, q)
			got = append(got, seqsOf(page.Entries)...)
			if !page.More {
				break
			}
			q.AfterSeq = page.Entries[len(page.Entries)-1].Seq
		}
		if !slices.Equal(got, want) {
			t.Errorf("loads of %s: %v, want %v (the scan's)", digest, got, want)
		}
	}
	if n := len(all); n != 5 {
		t.Fatalf("%d loads in the log, want 5", n)
	}
	// The start of the policy term is stored: a restart keeps reading
	// the later loads through the index.
	stopAudit(t, s, pid)
	var from uint64
	if err := st.Get(AuditPolicyIndexFromKey, &from); err != nil || from != 13 {
		t.Fatalf("policy index start = %d, %v; want 13 (the entry after the head at the restart)", from, err)
	}
}
