package ctxasm

import (
	"strings"
	"testing"
)

// FuzzParseMDC: the front-matter parser never panics, keeps its bounds and
// only returns a body that is a suffix of the input (or the input).
func FuzzParseMDC(f *testing.F) {
	for _, s := range []string{
		"---\ndescription: Go\nglobs: *.go, **/*_test.go\nalwaysApply: false\n---\nbody\n",
		"---\nglobs: [\"a/*.ts\", 'b/*.ts']\n---\n",
		"---\r\nglobs:\r\n  - x/**\r\n---\r\nb",
		"---\n---\n", "---", "", "---\nglobs:\n-\n- ''\n---", "\xff---\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fm, body := ParseMDC(s)
		if len(fm.Globs) > maxGlobs {
			t.Fatalf("%d globs", len(fm.Globs))
		}
		for _, g := range fm.Globs {
			if g == "" || len(g) > maxGlobLen {
				t.Fatalf("glob %q", g)
			}
		}
		valid := strings.ToValidUTF8(s, "\uFFFD")
		if !strings.HasSuffix(valid, body) {
			t.Fatalf("body %q is not a suffix of the input", body)
		}
	})
}

// FuzzParseIndex: the git index parser never panics on any bytes.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"))
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x02" + strings.Repeat("\x00", 62) + "\x00a\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		paths, err := ParseIndex(b)
		if err == nil {
			for _, p := range paths {
				if p == "" {
					t.Fatal("empty path")
				}
			}
		}
	})
}
