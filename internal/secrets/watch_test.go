package secrets

import (
	"reflect"
	"testing"
)

func TestWatchSpots(t *testing.T) {
	root := "/w/repo"
	tests := []struct {
		name  string
		bases []string
		paths []string
		want  []watchSpot
	}{
		{"a file in the root", nil, []string{"/w/repo/.env"},
			[]watchSpot{{dir: "/w/repo", names: []string{".env"}, inRoot: true}}},
		{"the chain down to a nested file, merged per directory", nil,
			[]string{"/w/repo/.git/refs/heads/main", "/w/repo/.git/index", "/w/repo/.env"},
			[]watchSpot{
				{dir: "/w/repo", names: []string{".git", ".env"}, inRoot: true},
				{dir: "/w/repo/.git", names: []string{"refs", "index"}, rel: ".git", inRoot: true},
				{dir: "/w/repo/.git/refs", names: []string{"heads"}, rel: ".git/refs", inRoot: true},
				{dir: "/w/repo/.git/refs/heads", names: []string{"main"}, rel: ".git/refs/heads", inRoot: true},
			}},
		{"outside the root: from the git dir that holds it", []string{"/w/main/.git/worktrees/x", "/w/main/.git"},
			[]string{"/w/main/.git/worktrees/x/HEAD", "/w/main/.git/refs/heads/b"},
			[]watchSpot{
				{dir: "/w/main/.git/worktrees/x", names: []string{"HEAD"}},
				{dir: "/w/main/.git", names: []string{"refs"}},
				{dir: "/w/main/.git/refs", names: []string{"heads"}},
				{dir: "/w/main/.git/refs/heads", names: []string{"b"}},
			}},
		{"outside the root and every base: its own directory", []string{""}, []string{"/etc/gitconfig"},
			[]watchSpot{{dir: "/etc", names: []string{"gitconfig"}}}},
		{"a sibling named like the root is not inside it", nil, []string{"/w/repo2/.env"},
			[]watchSpot{{dir: "/w/repo2", names: []string{".env"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := watchSpots(root, tt.bases, tt.paths); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("watchSpots = %+v, want %+v", got, tt.want)
			}
		})
	}
}
