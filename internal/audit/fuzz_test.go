package audit

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/harnessd/harnessd/messages"
)

// FuzzVerify replaces the stored form of one entry of an intact chain with
// arbitrary bytes. Verify must not panic, must not fail with an error, and
// may accept the chain only if the replacement decodes to the same content
// (same canonical form) as the original.
func FuzzVerify(f *testing.F) {
	es := chain(6)
	for i, e := range es {
		b, _ := json.Marshal(messages.AuditEntry(e))
		f.Add(b, uint8(i))
		f.Add(bytes.Replace(b, []byte(`"patched"`), []byte(`"patches"`), 1), uint8(i))
		f.Add(bytes.Replace(b, []byte(`"seq":`), []byte(`"seq":1`), 1), uint8(i))
	}
	f.Add([]byte(`{}`), uint8(0))
	f.Add([]byte(`{"seq":3,"kind":"job","time":"2026-03-04T05:06:10.00000089+01:00"}`), uint8(2))
	f.Add([]byte(`not json`), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, idx uint8) {
		i := int(idx) % len(es)
		var m messages.AuditEntry
		records := append([]Entry(nil), es...)
		undecodable := json.Unmarshal(data, &m) != nil
		if !undecodable {
			records[i] = Entry(m)
		}
		n := 0
		checked, brk, err := Verify(func() (Entry, bool, error) {
			if n == len(records) {
				return Entry{}, false, nil
			}
			n++
			if n-1 == i && undecodable {
				return Entry{}, false, Undecodable(uint64(n))
			}
			return records[n-1], true, nil
		})
		if err != nil {
			t.Fatalf("Verify err = %v, want nil", err)
		}
		if checked < 1 || checked > len(es) {
			t.Fatalf("checked = %d, want 1..%d", checked, len(es))
		}
		if brk == nil {
			if undecodable {
				t.Fatal("undecodable record accepted")
			}
			got, _ := json.Marshal(messages.AuditEntry(records[i]))
			want, _ := json.Marshal(messages.AuditEntry(es[i]))
			if !bytes.Equal(got, want) {
				t.Fatalf("changed entry accepted:\n got %s\nwant %s", got, want)
			}
			return
		}
		if brk.Seq != uint64(i+1) {
			t.Fatalf("break at %d (%s), want %d", brk.Seq, brk.Reason, i+1)
		}
	})
}
