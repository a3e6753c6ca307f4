package op

import (
	"bytes"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/persistence"
)

// A pre-image's durable copy comes back byte for byte, and text is stored
// as text (the store dump's redactor reads it), only other bytes as base64.
func TestPreImageCopyRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name     string
		data     []byte
		readable string // a part of the data the stored record shows as is
	}{
		{"text", []byte("package app\n\nvar token = \"tok_live_123\"\n"), "tok_live_123"},
		{"empty", []byte{}, ""},
		{"html and line separators", []byte("<a href=\"x\">&amp;</a>\u2028\t\r\n"), "href"},
		{"not UTF-8", []byte{0xff, 0xfe, 0x00, 'a', 0x80}, ""},
		{"a NUL in text", []byte("a\x00b"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := persistence.Encode(copyOf(c.data))
			if err != nil {
				t.Fatal(err)
			}
			if c.readable != "" && !strings.Contains(string(b), c.readable) {
				t.Errorf("stored %s: %q is not readable in it", b, c.readable)
			}
			var back preImageCopy
			if err := persistence.Decode(b, &back); err != nil {
				t.Fatal(err)
			}
			if got := back.bytes(); !bytes.Equal(got, c.data) {
				t.Fatalf("round trip %q, want %q", got, c.data)
			}
		})
	}
}
