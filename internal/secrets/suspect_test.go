package secrets

import (
	"testing"

	"github.com/harnessd/harnessd/internal/redact"
)

func TestSuspect(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       bool
	}{
		{"code", "package main\n\nfunc main() { fmt.Println(\"hello, world\") }\n", false},
		{"short mixed token", "const V7 = 2000 // sha256\n", false},
		{"words only", "correcthorsebatterystaple\n", false},
		{"digits only", "const N = 12345678901234567890\n", false},
		{"mixed token", "var x = []string{\"" + fake(70, 20) + "\"}\n", true},
		{"assigned to a secret name", "password: hunter\n", true},
		{"a known shape", "key := \"ghp_" + fake(71, 36) + "\"\n", true},
		{"token at the end", "x " + fake(72, 12) + "9", true},
	} {
		if got := Suspect(redact.Default(), "main.go", tc.text); got != tc.want {
			t.Errorf("%s: Suspect(%q) = %v, want %v", tc.name, tc.text, got, tc.want)
		}
	}
	if Suspect(nil, "a.txt", "password: hunter\n") {
		t.Error("Suspect without rules took a word for a credential")
	}
}

func TestHasMixedToken(t *testing.T) {
	for _, tc := range []struct {
		s    string
		min  int
		want bool
	}{
		{"", 12, false},
		{"abc123", 6, true},
		{"abc123", 7, false},
		{"abc 123 abc 123", 6, false},
		{"a_b-c+d/e=f1", 12, true},
		{"abcdefghijkl", 12, false},
	} {
		if got := hasMixedToken(tc.s, tc.min); got != tc.want {
			t.Errorf("hasMixedToken(%q, %d) = %v, want %v", tc.s, tc.min, got, tc.want)
		}
	}
}
