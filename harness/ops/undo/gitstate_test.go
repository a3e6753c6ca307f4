package undo

import (
	"reflect"
	"testing"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/preimage"
)

// Targets newest first: each ref goes from where the newest left it back
// to where the oldest found it; each git file back to the oldest's.
func TestGitStateOf(t *testing.T) {
	newer := &op.Receipt{Refs: []op.RefChange{{Ref: "refs/heads/main", Old: "b", New: "c"}, {Ref: "refs/tags/v1", Old: "", New: "t"}},
		GitFiles: []preimage.Ref{{Path: "index", SHA256: "i2"}}}
	older := &op.Receipt{Refs: []op.RefChange{{Ref: "refs/heads/main", Old: "a", New: "b"}, {Ref: "refs/heads/gone", Old: "g", New: ""}},
		GitFiles: []preimage.Ref{{Path: "index", SHA256: "i1"}, {Path: "MERGE_HEAD", Absent: true}}}
	files := &op.Receipt{Changes: nil}
	for _, tc := range []struct {
		name    string
		targets []*op.Receipt
		want    gitState
	}{
		{name: "none", targets: []*op.Receipt{files}, want: gitState{}},
		{name: "one", targets: []*op.Receipt{older}, want: gitState{
			refs:  []op.RefChange{{Ref: "refs/heads/main", Old: "b", New: "a"}, {Ref: "refs/heads/gone", Old: "", New: "g"}},
			files: []preimage.Ref{{Path: "index", SHA256: "i1"}, {Path: "MERGE_HEAD", Absent: true}}}},
		{name: "chain", targets: []*op.Receipt{newer, older}, want: gitState{
			refs:  []op.RefChange{{Ref: "refs/heads/main", Old: "c", New: "a"}, {Ref: "refs/tags/v1", Old: "t", New: ""}, {Ref: "refs/heads/gone", Old: "", New: "g"}},
			files: []preimage.Ref{{Path: "index", SHA256: "i1"}, {Path: "MERGE_HEAD", Absent: true}}}},
	} {
		if got := gitStateOf(tc.targets); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
