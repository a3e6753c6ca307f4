package op

import (
	"strings"
	"testing"
)

func TestClip(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut", "abcdef", 5, "abcde… (6 bytes)"},
		{"cut before a split character", "abcdé", 5, "abcd… (6 bytes)"},
		{"KiB", strings.Repeat("a", 2048), 1, "a… (2.0 KiB)"},
		{"MiB", strings.Repeat("a", 3<<20), 2, "aa… (3.0 MiB)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clip(tt.s, tt.n); got != tt.want {
				t.Errorf("clip = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClipMessage(t *testing.T) {
	short := "validating /properties/x: minimum: 3 is less than 5"
	if got := clipMessage(short); got != short {
		t.Errorf("clipMessage(short) = %q, want it unchanged", got)
	}
	long := "validating /properties/x: pattern: " + strings.Repeat("y", 1<<20) + ` does not match "^[a-z]+$"`
	got := clipMessage(long)
	if len(got) > maxValidatorMessage+64 || !strings.HasPrefix(got, "validating /properties/x: pattern: yyy") ||
		!strings.HasSuffix(got, `does not match "^[a-z]+$"`) || !strings.Contains(got, " elided) … ") {
		t.Errorf("clipMessage(1 MiB) = %d bytes %q, want the head, the rule and the size elided", len(got), got)
	}
}

func TestJSONType(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, "null"}, {true, "boolean"}, {float64(3), "integer"}, {3.5, "number"},
		{"s", "string"}, {[]any{}, "array"}, {map[string]any{}, "object"},
	}
	for _, tt := range tests {
		if got := jsonType(tt.v); got != tt.want {
			t.Errorf("jsonType(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
