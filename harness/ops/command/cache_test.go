package command

import "testing"

func TestCacheable(t *testing.T) {
	tests := []struct {
		argv []string
		want bool
	}{
		{[]string{"git", "status", "--short"}, true},
		{[]string{"git", "rev-parse", "HEAD"}, true},
		{[]string{"git", "diff", "--", "a.go"}, true},
		{[]string{"git", "log", "-5"}, false}, // log is not on the list
		{[]string{"git", "rev-list", "--since=2.weeks", "HEAD"}, false},
		{[]string{"git", "show", "--format=%ar", "HEAD"}, false}, // relative date
		{[]string{"git", "show", "--date=relative", "HEAD"}, false},
		{[]string{"git", "rev-parse", "HEAD@{1}"}, false}, // reflogs are not watched
		{[]string{"git", "diff", "--no-index", "/etc/passwd", "a"}, false},
		{[]string{"git", "-C", "..", "status"}, false}, // global options first: no
		{[]string{"/usr/bin/git", "status"}, false},
		{[]string{"ls", "-la"}, false},
		{[]string{"git"}, false},
		{[]string{"git", "status", "--ignored"}, false}, // ignored dirs are not watched
		{[]string{"git", "ls-files", "-oi", "--exclude-standard"}, false},
		{[]string{"git", "ls-files", "-s"}, true},
	}
	for _, tt := range tests {
		if got := Cacheable(tt.argv); got != tt.want {
			t.Errorf("Cacheable(%q) = %v, want %v", tt.argv, got, tt.want)
		}
	}
}
