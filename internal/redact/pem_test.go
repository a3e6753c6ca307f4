package redact

import (
	"strings"
	"testing"
)

func TestPEMShapes(t *testing.T) {
	begin := "-----BEGIN RSA PRIVATE" + " KEY-----"
	body := pemLines(70, 3)
	bodyLines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	goConcat := "var key = \"" + begin + "\\n\" +\n"
	for _, l := range bodyLines {
		goConcat += "\t\"" + l + "\\n\" +\n"
	}
	goConcat += "\t\"-----END RSA PRIVATE KEY-----\\n\"\nfunc main() {}"
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"go string concatenation", goConcat, "var key = \"" + mark("pem-private-key") + "\\n\"\nfunc main() {}"},
		{"unterminated then prose", begin + "\n" + body + "that was a key\n", mark("pem-private-key") + "\nthat was a key\n"},
		{"unterminated at end", "x " + begin + "\n" + body, "x " + mark("pem-private-key") + "\n"},
		{"header only at end", begin + "\n", begin + "\n"},
		{"header then blank then prose", begin + "\n\nhello world\n", begin + "\n\nhello world\n"},
		{"removed in diff", "-" + begin + "\n-" + strings.Join(bodyLines, "\n-") + "\n------END RSA PRIVATE KEY-----\n context",
			"-" + mark("pem-private-key") + "\n context"},
		{"pgp private block", "-----BEGIN PGP PRIVATE KEY" + " BLOCK-----\nVersion: GnuPG v2\n\n" + body + "-----END PGP PRIVATE KEY BLOCK-----",
			mark("pem-private-key")},
		{"two blocks", pemEC + "\nmiddle\n" + pemDSA, mark("pem-private-key") + "\nmiddle\n" + mark("pem-private-key")},
		{"lowercase begin", strings.ToLower(pemEC), strings.ToLower(pemEC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := Default().String(tt.in); got != tt.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}
