package classify

import (
	"strings"
	"testing"
)

func TestFocus(t *testing.T) {
	tests := []struct {
		argv []string
		want bool
	}{
		{[]string{"go", "test", "./pkg/x"}, true},
		{[]string{"go", "test", "./pkg/x", "./pkg/y"}, true},
		{[]string{"go", "test", "-run", "TestY", "./..."}, true},
		{[]string{"go", "test", "-run=TestY", "./..."}, true},
		{[]string{"go", "test", "-race", "-count=1", "./harness/classify"}, true},
		{[]string{"go", "test"}, true},
		{[]string{"go", "test", "./..."}, false},
		{[]string{"go", "test", "-v", "./harness/..."}, false},
		{[]string{"go", "test", "-run", ".", "./..."}, false},
		{[]string{"go", "test", "-fuzz", "FuzzX", "./pkg/x"}, false},
		{[]string{"go", "test", "-bench", ".", "./pkg/x"}, false},
		{[]string{"go", "vet", "./pkg/x"}, true},
		{[]string{"go", "vet", "./..."}, false},
		{[]string{"go", "build", "./cmd/x"}, true},
		{[]string{"pytest", "tests/test_a.py"}, true},
		{[]string{"pytest", "-k", "name"}, true},
		{[]string{"pytest", "tests/test_a.py::test_b"}, true},
		{[]string{"python", "-m", "pytest", "-k", "x"}, true},
		{[]string{"pytest"}, false},
		{[]string{"pytest", "tests/"}, false},
		{[]string{"pytest", "-m", "slow"}, false},
		{[]string{"npx", "jest", "path/to/file.test.js"}, true},
		{[]string{"jest", "-t", "name"}, true},
		{[]string{"jest"}, false},
		{[]string{"npx", "vitest", "run"}, false},
		{[]string{"cargo", "test", "name"}, true},
		{[]string{"cargo", "test", "--", "name"}, true},
		{[]string{"cargo", "test", "-p", "crate"}, false},
		{[]string{"cargo", "test"}, false},
		{[]string{"npm", "test"}, false},
		{[]string{"npm", "test", "--", "path/a.test.js"}, true},
		{[]string{"npm", "run", "test"}, false},
		{[]string{"make", "test"}, false},
		{[]string{"make", "check"}, false},
		{[]string{"make"}, false},
		{[]string{"ls"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			got, reason := Focus(tt.argv)
			if got != tt.want {
				t.Fatalf("Focus(%q) = %v (%s), want %v", tt.argv, got, reason, tt.want)
			}
			if reason == "" {
				t.Errorf("Focus(%q) gave no reason", tt.argv)
			}
		})
	}
}
