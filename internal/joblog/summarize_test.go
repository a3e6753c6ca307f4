package joblog

import (
	"reflect"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		text string
		max  int
		want []string
	}{
		{
			name: "go test failure with context",
			text: "=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n    add_test.go:12: got 3, want 4\n    add_test.go:13: extra\n    add_test.go:14: dropped\nFAIL\nFAIL\tgithub.com/x/calc\t0.003s\n",
			want: []string{
				"--- FAIL: TestAdd (0.00s)\n    add_test.go:12: got 3, want 4\n    add_test.go:13: extra",
				"FAIL",
				"FAIL\tgithub.com/x/calc\t0.003s",
			},
		},
		{
			name: "go test all passing",
			text: "=== RUN   TestAdd\n--- PASS: TestAdd (0.00s)\nPASS\nok  \tgithub.com/x/calc\t0.003s\n",
			want: nil,
		},
		{
			name: "go subtests",
			text: "--- FAIL: TestTable (0.00s)\n    --- FAIL: TestTable/empty (0.00s)\n        t_test.go:20: got \"\", want \"x\"\n    --- PASS: TestTable/one (0.00s)\n",
			want: []string{
				"--- FAIL: TestTable (0.00s)",
				"    --- FAIL: TestTable/empty (0.00s)\n        t_test.go:20: got \"\", want \"x\"\n    --- PASS: TestTable/one (0.00s)",
			},
		},
		{
			name: "go panic",
			text: "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 7 [running]:\nmain.f()\n",
			want: []string{"panic: runtime error: index out of range [3] with length 3"},
		},
		{
			name: "go build failure",
			text: "# github.com/x/calc\n./calc.go:5:2: undefined: foo\nFAIL\tgithub.com/x/calc [build failed]\n",
			want: []string{"FAIL\tgithub.com/x/calc [build failed]"},
		},
		{
			name: "go fatal error",
			text: "fatal error: concurrent map writes\n\ngoroutine 1 [running]:\n",
			want: []string{"fatal error: concurrent map writes"},
		},
		{
			name: "pytest assertion",
			text: "tests/test_calc.py F.                                   [100%]\n\n=================================== FAILURES ===================================\n___________________________________ test_add ___________________________________\n\n    def test_add():\n>       assert add(1, 2) == 4\nE       assert 3 == 4\nE        +  where 3 = add(1, 2)\n\ntests/test_calc.py:4: AssertionError\n=========================== short test summary info ============================\nFAILED tests/test_calc.py::test_add - assert 3 == 4\n========================= 1 failed, 1 passed in 0.02s ==========================\n",
			want: []string{
				"E       assert 3 == 4",
				"E        +  where 3 = add(1, 2)",
				"tests/test_calc.py:4: AssertionError\n=========================== short test summary info ============================",
				"FAILED tests/test_calc.py::test_add - assert 3 == 4",
				"========================= 1 failed, 1 passed in 0.02s ==========================",
			},
		},
		{
			name: "pytest collection error",
			text: "ImportError while importing test module '/src/tests/test_x.py'.\nE   ModuleNotFoundError: No module named 'requests'\n=========================== 1 error in 0.05s ===========================\n",
			want: []string{
				"E   ModuleNotFoundError: No module named 'requests'",
				"=========================== 1 error in 0.05s ===========================",
			},
		},
		{
			name: "pytest error line",
			text: "ERROR tests/test_db.py::test_conn - ConnectionRefusedError\n",
			want: []string{"ERROR tests/test_db.py::test_conn - ConnectionRefusedError"},
		},
		{
			name: "pytest all passing",
			text: "tests/test_calc.py ..                                   [100%]\n\n============================== 2 passed in 0.01s ===============================\n",
			want: nil,
		},
		{
			name: "jest failure",
			text: " FAIL  src/sum.test.js\n  ● sum › adds 1 + 2\n\n    expect(received).toBe(expected) // Object.is equality\n\n  ✕ adds 1 + 2 (5 ms)\n  ✓ adds 0 + 0 (1 ms)\n\nTests:       1 failed, 1 passed, 2 total\n",
			want: []string{
				" FAIL  src/sum.test.js\n  ● sum › adds 1 + 2",
				"  ✕ adds 1 + 2 (5 ms)\n  ✓ adds 0 + 0 (1 ms)",
				"Tests:       1 failed, 1 passed, 2 total",
			},
		},
		{
			name: "jest with colours",
			text: "\x1b[0m\x1b[7m\x1b[1m\x1b[31m FAIL \x1b[39m\x1b[22m\x1b[27m\x1b[0m src/a.test.ts\n",
			want: []string{" FAIL  src/a.test.ts"},
		},
		{
			name: "jest thrown error",
			text: "    TypeError: Cannot read properties of undefined (reading 'x')\n      at Object.<anonymous> (src/a.test.js:3:5)\n",
			want: []string{"    TypeError: Cannot read properties of undefined (reading 'x')\n      at Object.<anonymous> (src/a.test.js:3:5)"},
		},
		{
			name: "vitest cross",
			text: " × src/a.test.ts > adds 20ms\n   → expected 3 to be 4\n",
			want: []string{" × src/a.test.ts > adds 20ms\n   → expected 3 to be 4"},
		},
		{
			name: "cargo test failure",
			text: "running 2 tests\ntest tests::it_works ... ok\ntest tests::it_fails ... FAILED\n\nfailures:\n\n---- tests::it_fails stdout ----\nthread 'tests::it_fails' panicked at src/lib.rs:10:9:\nassertion `left == right` failed\n  left: 1\n right: 2\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored\n\nerror: test failed, to rerun pass `--lib`\n",
			want: []string{
				"test tests::it_fails ... FAILED",
				"thread 'tests::it_fails' panicked at src/lib.rs:10:9:\nassertion `left == right` failed\n  left: 1",
				"test result: FAILED. 1 passed; 1 failed; 0 ignored",
				"error: test failed, to rerun pass `--lib`",
			},
		},
		{
			name: "cargo compile error",
			text: "   Compiling calc v0.1.0 (/src/calc)\nerror[E0308]: mismatched types\n --> src/lib.rs:2:5\n  |\n2 |     \"x\"\n",
			want: []string{"error[E0308]: mismatched types\n --> src/lib.rs:2:5\n  |"},
		},
		{
			name: "generic errors deduplicated",
			text: "error: could not connect\nretrying\n\nerror: could not connect\nretrying\n",
			want: []string{"error: could not connect\nretrying"},
		},
		{
			name: "not failures",
			text: "Failures: 0\nterror: none\nFAILURES are fine in prose? no\nmyerror:x\nok\n",
			want: nil,
		},
		{
			name: "max limits entries",
			text: "FAIL a\nFAIL b\nFAIL c\n",
			max:  2,
			want: []string{"FAIL a", "FAIL b"},
		},
		{
			name: "crlf",
			text: "--- FAIL: TestX (0.01s)\r\n    x_test.go:1: boom\r\n",
			want: []string{"--- FAIL: TestX (0.01s)\n    x_test.go:1: boom"},
		},
		{
			name: "empty",
			text: "",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.text, tt.max)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSummarizeBounds(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 100; i++ {
		b.WriteString("FAIL pkg")
		b.WriteString(strings.Repeat("x", i))
		b.WriteString("\n")
	}
	if got := Summarize(b.String(), 0); len(got) != DefaultSummaryLines {
		t.Errorf("default max: got %d entries, want %d", len(got), DefaultSummaryLines)
	}
	long := "error: " + strings.Repeat("é", 1000)
	got := Summarize(long, 0)
	if len(got) != 1 || len(got[0]) > maxSummaryLine+len("…") || !strings.HasSuffix(got[0], "…") {
		t.Errorf("long line: got %d bytes, want it cut to %d", len(got[0]), maxSummaryLine)
	}
}

func FuzzSummarize(f *testing.F) {
	f.Add("--- FAIL: TestX\n  x_test.go:1: bad\nFAIL\n", 3)
	f.Add("\x1b[31mFAIL\x1b[0m \x1b[", 0)
	f.Add("E   assert 1\n=== 1 failed ===\n", 1)
	f.Fuzz(func(t *testing.T, text string, max int) {
		got := Summarize(text, max)
		limit := max
		if limit <= 0 {
			limit = DefaultSummaryLines
		}
		if len(got) > limit {
			t.Fatalf("got %d entries, want <= %d", len(got), limit)
		}
		for _, e := range got {
			if n := strings.Count(e, "\n"); n > summaryContext {
				t.Fatalf("entry %q has %d context lines, want <= %d", e, n, summaryContext)
			}
		}
	})
}

func BenchmarkSummarize(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 2000; i++ {
		sb.WriteString("=== RUN   TestSomething\n--- PASS: TestSomething (0.00s)\n")
	}
	sb.WriteString("--- FAIL: TestX (0.00s)\n    x_test.go:3: got 1, want 2\nFAIL\n")
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Summarize(text, 0)
	}
}
