package target

import (
	"errors"
	"strings"
	"testing"
)

func TestAllowWrite(t *testing.T) {
	errOut := errors.New("outside")
	check := func(p string) error {
		if strings.HasPrefix(p, "/") || strings.Contains(p, "..") || strings.HasPrefix(p, ".git") {
			return errOut
		}
		return nil
	}
	tests := []struct {
		name string
		argv []string
		want Kind
		err  error
	}{
		{"mkdir -p inside", []string{"mkdir", "-p", "a/b"}, Filesystem, nil},
		{"touch inside", []string{"touch", "x.txt"}, Filesystem, nil},
		{"cp inside", []string{"cp", "a", "b"}, Filesystem, nil},
		{"mv -n inside", []string{"mv", "-n", "a", "b"}, Filesystem, nil},
		{"mkdir outside", []string{"mkdir", "/tmp/x"}, Refused, errOut},
		{"cp escape with ..", []string{"cp", "a", "../b"}, Refused, errOut},
		{"touch .git", []string{"touch", ".git/hooks/pre-commit"}, Refused, errOut},
		{"unknown flag", []string{"cp", "--target-directory=/tmp", "a"}, Refused, nil},
		{"no path", []string{"mkdir", "-p"}, Refused, nil},
		{"stdin dash", []string{"cp", "-", "b"}, Refused, nil},
		// Builds and tests are no longer "replay-safe validation": they run
		// code (go build -toolexec, build.rs) and are a promoted
		// repository's jobs.
		{"go test refused", []string{"go", "test", "./..."}, Refused, nil},
		{"go build -toolexec refused", []string{"go", "build", "-toolexec", "./x", "."}, Refused, nil},
		{"go vet -vettool refused", []string{"go", "vet", "-vettool=./x", "."}, Refused, nil},
		{"go generate refused", []string{"go", "generate"}, Refused, nil},
		{"cargo check refused", []string{"cargo", "check"}, Refused, nil},
		{"cargo build refused", []string{"cargo", "build"}, Refused, nil},
		{"make refused", []string{"make", "all"}, Refused, nil},
		{"ln refused", []string{"ln", "-s", "/etc/passwd", "p"}, Refused, nil},
		{"empty", nil, Refused, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := AllowWrite(tt.argv, check)
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Fatalf("AllowWrite(%q) = %q, %v; want %q, %v", tt.argv, got, err, tt.want, tt.err)
			}
		})
	}
}

func FuzzAllowWrite(f *testing.F) {
	f.Add("cp\x00a\x00../b")
	f.Add("mkdir\x00-p\x00x")
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Split(s, "\x00")
		kind, paths, err := AllowWrite(argv, func(p string) error {
			if strings.Contains(p, "..") {
				return errors.New("no")
			}
			return nil
		})
		if kind == Filesystem {
			if err != nil || len(paths) == 0 {
				t.Fatalf("filesystem kind with err %v, %d paths", err, len(paths))
			}
			for _, p := range paths {
				if strings.Contains(p, "..") {
					t.Fatalf("allowed path %q that the check refuses", p)
				}
			}
		}
	})
}
