package redact

import (
	"strings"
	"testing"
)

// FuzzRedact checks that redaction never panics, that a secret planted
// between blanks never survives whatever surrounds it, that redaction is
// idempotent, and that the Writer agrees with String.
func FuzzRedact(f *testing.F) {
	for _, tt := range ruleFixtures() {
		f.Add(tt.in, "", uint8(0), uint16(7))
	}
	for _, tt := range falsePositives {
		f.Add("", tt.in, uint8(3), uint16(1))
	}
	f.Add("password: \"", "\"", uint8(1), uint16(3))
	f.Add("-----BEGIN RSA PRIVATE KEY-----\n", "\n-----END RSA PRIVATE KEY-----", uint8(2), uint16(40))
	f.Add("https://user:", "@host/", uint8(4), uint16(9))
	f.Add("Authorization: Bearer", "", uint8(5), uint16(2))
	f.Add("[REDACTED:", "]", uint8(6), uint16(11))
	f.Add("\xff\xfe\x00", "\r\n", uint8(7), uint16(0))

	secrets := allSecrets()
	r := Default()
	f.Fuzz(func(t *testing.T, prefix, suffix string, which uint8, cut uint16) {
		secret := secrets[int(which)%len(secrets)]
		in := prefix + " " + secret + "\n" + suffix
		out, n := r.String(in)
		if !strings.Contains(prefix, secret) && !strings.Contains(suffix, secret) && strings.Contains(out, secret) {
			t.Fatalf("planted secret %q survived in %q", secret, out)
		}
		if n == 0 {
			t.Fatalf("String(%q) made no redaction, want at least one", in)
		}
		again, n2 := r.String(out)
		if again != out || n2 != 0 {
			t.Fatalf("not idempotent: String(%q) = %q, %d", out, again, n2)
		}
		if b, nb := r.Bytes([]byte(in)); string(b) != out || nb != n {
			t.Fatalf("Bytes = %q, %d, want String's %q, %d", b, nb, out, n)
		}
		if !hasLongLine(in) {
			c := int(cut) % (len(in) + 1)
			got, gotN := writeChunks(t, r, in, []int{c / 2, c})
			if got != out || gotN != n {
				t.Fatalf("Writer(%q, cuts %d,%d) = %q, %d, want %q, %d", in, c/2, c, got, gotN, out, n)
			}
		}
	})
}

func hasLongLine(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if len(l) >= MaxLine-4096 {
			return true
		}
	}
	return false
}
