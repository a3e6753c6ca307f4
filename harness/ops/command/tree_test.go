package command

import (
	"slices"
	"testing"

	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/messages"
)

func TestAttribute(t *testing.T) {
	const co = "co_t"
	held := func(owner string, keys ...lease.Key) messages.HeldLease {
		ks := make([]string, len(keys))
		for i, k := range keys {
			ks[i] = string(k)
		}
		return messages.HeldLease{LeaseInfo: messages.LeaseInfo{ID: "l-" + owner, Owner: owner, Keys: ks}}
	}
	patchA := held("patch-a", lease.PathKey(co, "src/a.go"))
	patchDir := held("patch-dir", lease.PathKey(co, "docs"))
	stage := held("stage", lease.GitIndexKey(co), lease.PathKey(co, "src/a.go"))
	commit := held("commit", lease.GitIndexKey(co), lease.GitHeadKey(co))
	job := held("job", lease.WorkspaceKey(co))
	other := held("elsewhere", lease.PathKey("co_other", "src/b.go"))
	tests := []struct {
		name        string
		held        []messages.HeldLease
		paths       []string
		head        bool
		wantBy      string
		wantWriters []string
		wantUnheld  []string
	}{
		{name: "nobody else wrote", paths: []string{"src/a.go"}, wantBy: ChangedByCommand, wantUnheld: []string{"src/a.go"}},
		{name: "a patch of the changed file", held: []messages.HeldLease{patchA}, paths: []string{"src/a.go"}, wantBy: ChangedByOthers, wantWriters: []string{"patch-a"}},
		{name: "a patch of the directory", held: []messages.HeldLease{patchDir}, paths: []string{"docs/x.md", "docs/y/z.md"}, wantBy: ChangedByOthers, wantWriters: []string{"patch-dir"}},
		{name: "a writing job holds everything", held: []messages.HeldLease{job}, paths: []string{"x", "y"}, head: true, wantBy: ChangedByOthers, wantWriters: []string{"job"}},
		{name: "staging changes any path's status", held: []messages.HeldLease{stage}, paths: []string{"README.md"}, wantBy: ChangedByOthers, wantWriters: []string{"stage"}},
		{name: "a commit moves HEAD", held: []messages.HeldLease{commit}, paths: []string{"src/a.go"}, head: true, wantBy: ChangedByOthers, wantWriters: []string{"commit"}},
		{name: "HEAD moved under nobody", held: []messages.HeldLease{patchA}, paths: []string{"src/a.go"}, head: true, wantBy: ChangedByCommandAndOthers, wantWriters: []string{"patch-a"}, wantUnheld: []string{"HEAD"}},
		{name: "a change nobody held", held: []messages.HeldLease{patchA, patchDir}, paths: []string{"src/a.go", "src/b.go"}, wantBy: ChangedByCommandAndOthers, wantWriters: []string{"patch-a"}, wantUnheld: []string{"src/b.go"}},
		{name: "writers of other paths are not blamed", held: []messages.HeldLease{patchDir, other}, paths: []string{"src/a.go"}, wantBy: ChangedByCommand, wantUnheld: []string{"src/a.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			by, writers, unheld := attribute(co, tt.held, tt.paths, tt.head)
			var owners []string
			for _, w := range writers {
				owners = append(owners, w.Owner)
			}
			if by != tt.wantBy || !slices.Equal(owners, tt.wantWriters) || !slices.Equal(unheld, tt.wantUnheld) {
				t.Fatalf("attribute = %s, writers %v, unheld %v; want %s, %v, %v", by, owners, unheld, tt.wantBy, tt.wantWriters, tt.wantUnheld)
			}
		})
	}
}

func TestChangedSince(t *testing.T) {
	before := treeState{head: "h1", paths: map[string]string{"a": "modified\x001:1", "b": "untracked\x002:2", "c": "modified\x003:3"}}
	after := treeState{head: "h1", paths: map[string]string{"a": "modified\x001:1", "b": "untracked\x002:9", "d": "untracked\x004:4"}}
	paths, head := after.changedSince(before)
	if want := []string{"b", "c", "d"}; !slices.Equal(paths, want) || head {
		t.Fatalf("changedSince = %v, head %v; want %v, false", paths, head, want)
	}
	after.head = "h2"
	if _, head := after.changedSince(before); !head {
		t.Fatal("a new HEAD did not count as a change")
	}
}
