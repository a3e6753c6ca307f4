package compat

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The normalisations: only what differs between two runs of the same work
// by nature (timings, the copy's directory, an order the tool does not
// define), never what harnessd could change.
var (
	// go test: "ok  \tpkg\t0.123s", "FAIL\tpkg\t0.1s", "ok  \tpkg\t(cached)".
	goPkgTime = regexp.MustCompile(`(?m)^(ok|FAIL)\s+(\S+)\s+(?:\d+(?:\.\d+)?s|\(cached\))`)
	// go test: "?   \tpkg\t[no test files]" (its spacing).
	goNoTests = regexp.MustCompile(`(?m)^\?\s+(\S+)\s+\[no test files\]`)
	// go test -v and failures: "--- PASS: TestX (0.02s)".
	goTestTime = regexp.MustCompile(`\((\d+(?:\.\d+)?)s\)`)
	// node --test (TAP): "duration_ms: 2.96875", "# duration_ms 881.14".
	nodeDuration = regexp.MustCompile(`duration_ms:? \d+(?:\.\d+)?`)
	// ls -l's time column: "Dec  6 03:25 " or "Dec  6  2025 ".
	lsTime = regexp.MustCompile(`(?m)^([-dlcbps][rwxsStT-]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+\d+) [A-Z][a-z]{2}\s+\d+\s+(?:\d\d:\d\d|\d{4}) `)
	// ls -l's first line counts allocated blocks, which a file system
	// reports differently for equal files (delayed allocation).
	lsTotal = regexp.MustCompile(`(?m)\Atotal \d+$`)
	// Go's log package: "2026/12/06 04:16:38 Listening..." (and
	// microseconds with Lmicroseconds).
	goLogTime = regexp.MustCompile(`(?m)^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)? `)
	// node's warnings name the process: "(node:19761) [DEP0005]".
	nodePID = regexp.MustCompile(`\(node:\d+\)`)
	// npm's debug log name: "/root/.npm/_logs/2026-12-06T03_28_50_639Z-debug-0.log".
	npmLog = regexp.MustCompile(`_logs/\S+-debug-\d+\.log`)
)

// normalize brings one output to the form both sides are compared in:
// the copy's root becomes $ROOT, timings become <t>, and with sortLines
// the lines are sorted (grep -r and go vet print in an order they do not
// define).
func normalize(s, root string, sortLines bool) string {
	if root != "" {
		s = strings.ReplaceAll(s, root, "$ROOT")
	}
	s = goPkgTime.ReplaceAllString(s, "$1 $2 <t>")
	s = goNoTests.ReplaceAllString(s, "? $1 [no test files]")
	s = goTestTime.ReplaceAllString(s, "(<t>)")
	s = nodeDuration.ReplaceAllString(s, "duration_ms <t>")
	s = lsTime.ReplaceAllString(s, "$1 <mtime> ")
	if lsTime.MatchString(s) || strings.Contains(s, " <mtime> ") {
		s = lsTotal.ReplaceAllString(s, "total <blocks>")
	}
	s = npmLog.ReplaceAllString(s, "_logs/<log>")
	s = nodePID.ReplaceAllString(s, "(node:<pid>)")
	s = goLogTime.ReplaceAllString(s, "<date> <time> ")
	if sortLines {
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		sort.Strings(lines)
		s = strings.Join(lines, "\n")
		if s != "" {
			s += "\n"
		}
	}
	return s
}

// firstDiff says where two normalised outputs first differ, by line.
func firstDiff(direct, through string) string {
	dl := strings.Split(direct, "\n")
	tl := strings.Split(through, "\n")
	for i := 0; i < len(dl) || i < len(tl); i++ {
		var d, h string
		if i < len(dl) {
			d = dl[i]
		} else {
			d = "<end>"
		}
		if i < len(tl) {
			h = tl[i]
		} else {
			h = "<end>"
		}
		if d != h {
			// Show both from a little before the first differing byte.
			c := 0
			for c < len(d) && c < len(h) && d[c] == h[c] {
				c++
			}
			from, cut := 0, ""
			if c > 60 {
				from, cut = c-40, "…"
			}
			if from > len(d) || from > len(h) {
				from, cut = 0, ""
			}
			return fmt.Sprintf("line %d: directly %s, through harnessd %s", i+1, clip(cut+d[from:]), clip(cut+h[from:]))
		}
	}
	return "equal"
}

func clip(s string) string {
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// countMarkers counts harnessd's redaction markers.
func countMarkers(s string) int { return strings.Count(s, "[REDACTED") }

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, root string
		sort           bool
		want           string
	}{
		{"go ok line", "ok  \tgithub.com/google/uuid\t0.019s\n", "", false, "ok github.com/google/uuid <t>\n"},
		{"go cached", "ok  \tgo.uber.org/zap\t(cached)\n", "", false, "ok go.uber.org/zap <t>\n"},
		{"go fail line", "FAIL\tgithub.com/stretchr/testify/assert\t0.710s\n", "", false, "FAIL github.com/stretchr/testify/assert <t>\n"},
		{"go build failed kept", "FAIL\tgithub.com/spf13/pflag [build failed]\n", "", false, "FAIL\tgithub.com/spf13/pflag [build failed]\n"},
		{"no test files", "?   \tgo.uber.org/zap/internal\t[no test files]\n", "", false, "? go.uber.org/zap/internal [no test files]\n"},
		{"test time", "--- PASS: TestBufferWriter (0.02s)\n", "", false, "--- PASS: TestBufferWriter (<t>)\n"},
		{"redaction marker survives", "--- PASS: [REDACTED:secret-assignment] (0.02s)\n", "", false, "--- PASS: [REDACTED:secret-assignment] (<t>)\n"},
		{"root", "Error Trace:\t/tmp/x/direct/zap/config_test.go:78\n", "/tmp/x/direct/zap", false, "Error Trace:\t$ROOT/config_test.go:78\n"},
		{"node duration", "  duration_ms: 2.96875\n# duration_ms 881.141668\n", "", false, "  duration_ms <t>\n# duration_ms <t>\n"},
		{"ls time", "drwxr-xr-x 8 root root  4096 Dec  6 03:25 .git\n-rw-r--r-- 1 root root 1648 Jan 12  2025 CHANGELOG.md\n", "", false,
			"drwxr-xr-x 8 root root  4096 <mtime> .git\n-rw-r--r-- 1 root root 1648 <mtime> CHANGELOG.md\n"},
		{"ls total", "total 128\ndrwxr-xr-x   6 root root  4096 Dec  6 03:25 .\n", "", false, "total <blocks>\ndrwxr-xr-x   6 root root  4096 <mtime> .\n"},
		{"not ls total", "total 128\n", "", false, "total 128\n"},
		{"sorted", "b.go:1:x\na.go:2:y\n", "", true, "a.go:2:y\nb.go:1:x\n"},
		{"sorted empty", "", "", true, ""},
		{"go log time", "2026/12/06 04:16:38 Listening...\n", "", false, "<date> <time> Listening...\n"},
		{"node pid", "(node:19761) [DEP0005] DeprecationWarning\n", "", false, "(node:<pid>) [DEP0005] DeprecationWarning\n"},
		{"npm log", "npm error A complete log of this run can be found in: /root/.npm/_logs/2026-12-06T03_28_50_639Z-debug-0.log\n", "", false,
			"npm error A complete log of this run can be found in: /root/.npm/_logs/<log>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := normalize(tt.in, tt.root, tt.sort); got != tt.want {
				t.Fatalf("normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFirstDiff(t *testing.T) {
	if got := firstDiff("a\nb\n", "a\nc\n"); got != `line 2: directly "b", through harnessd "c"` {
		t.Fatalf("firstDiff = %s", got)
	}
	if got := firstDiff("a\n", "a\nb\n"); !strings.Contains(got, "line 2") {
		t.Fatalf("firstDiff of a longer answer = %s", got)
	}
	long := strings.Repeat("x", 200)
	if got := firstDiff(long+"a", long+"b"); got != `line 1: directly "…`+strings.Repeat("x", 40)+`a", through harnessd "…`+strings.Repeat("x", 40)+`b"` {
		t.Fatalf("firstDiff of long lines = %s", got)
	}
}
