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

// A private key never survives, whatever shares its marker lines: text
// glued after the BEGIN marker once ended the block there and let the body
// through. Every chunking of the Writer agrees.
func TestPEMBodyNeverSurvivesItsMarkerLines(t *testing.T) {
	r := Default()
	body := strings.Repeat("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", 3)
	ins := []string{
		"x password=Hunter2Hunter2Zq -----BEGIN RSA PRIVATE KEY-----\n" + body + "\n-----END RSA PRIVATE KEY-----\n",
		"-----BEGIN RSA PRIVATE KEY----- password=Hunter2Hunter2Zq\n" + body + "\n-----END RSA PRIVATE KEY-----\n",
		"-----BEGIN RSA PRIVATE KEY-----\n" + body + "\n-----END RSA PRIVATE KEY----- password=Hunter2Hunter2Zq\n",
		"-----BEGIN RSA PRIVATE KEY-----\n" + body + "\npassword=Hunter2Hunter2Zq\n",
		"password=Hunter2Hunter2Zq\n-----BEGIN RSA PRIVATE KEY-----\n" + body + "\n",
		"-----BEGIN RSA PRIVATE KEY-----\n" + body + "\n-----END RSA PRIVATE KEY-----password=Hunter2Hunter2Zq\n",
		"-----BEGIN RSA PRIVATE KEY-----\r\n" + body + "\r\n-----END RSA PRIVATE KEY-----\r\n",
		"-----BEGIN RSA PRIVATE KEY----- \n" + body + "\n-----END RSA PRIVATE KEY-----\n",
		"-----BEGIN RSA PRIVATE KEY----- " + body + " -----END RSA PRIVATE KEY-----\n",
		"  -----BEGIN RSA PRIVATE KEY-----\n  " + body + "\n  -----END RSA PRIVATE KEY-----\n",
		"key: \"-----BEGIN RSA PRIVATE KEY-----\\n" + body + "\\n-----END RSA PRIVATE KEY-----\\n\"\n",
		"-----BEGIN OPENSSH PRIVATE KEY-----\n" + body + "\n-----END OPENSSH PRIVATE KEY-----\n",
		"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,ABCDEF\n\n" + body + "\n-----END RSA PRIVATE KEY-----\n",
	}
	for i, in := range ins {
		want, _ := r.String(in)
		if strings.Contains(want, "Hunter2Hunter2Zq") || strings.Contains(want, body[:20]) {
			t.Errorf("%d: String leaks: %q", i, want)
			continue
		}
		for c1 := 0; c1 <= len(in); c1 += 3 {
			for _, c2 := range []int{c1, c1 + 1, c1 + 7, len(in)} {
				if c2 > len(in) {
					continue
				}
				got, _ := writeChunks(t, r, in, []int{c1, c2})
				if strings.Contains(got, "Hunter2Hunter2Zq") || strings.Contains(got, body[:20]) {
					t.Fatalf("%d: Writer(cuts %d,%d) leaks: %q", i, c1, c2, got)
				}
			}
		}
	}
}
