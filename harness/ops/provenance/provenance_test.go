package provenance

import (
	"reflect"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/trailer"
	"github.com/harnessd/harnessd/internal/verify"
)

func TestParseRaw(t *testing.T) {
	z := strings.Repeat("0", 40)
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	raw := ":000000 100644 " + z + " " + a + " A\x00new file.txt\x00:100644 100644 " + a + " " + b + " M\x00dir/x\x00"
	got, err := parseRaw([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := []rawEntry{{"000000", "100644", z, a, "A", "new file.txt"}, {"100644", "100644", a, b, "M", "dir/x"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseRaw = %#v, want %#v", got, want)
	}
	for _, bad := range []string{":100644 100644 x M", ":1 2 3\x00p\x00"} {
		if _, err := parseRaw([]byte(bad)); err == nil {
			t.Errorf("parseRaw(%q): no error", bad)
		}
	}
}

func TestSameChanges(t *testing.T) {
	rec := []patch.Change{{Path: "a", Op: "modify", Before: "1", After: "2"}, {Path: "b", Op: "create", After: "3"}}
	tests := []struct {
		name string
		tree []patch.Change
		ok   bool
		want string
	}{
		{"same, any order", []patch.Change{rec[1], rec[0]}, true, "2 paths"},
		{"other digest", []patch.Change{rec[0], {Path: "b", Op: "create", After: "4"}}, false, "b: receipt create"},
		{"path missing", []patch.Change{rec[0]}, false, "b: in the receipt, not changed by the commit"},
		{"extra path", append([]patch.Change{{Path: "c", Op: "delete", Before: "9"}}, rec...), false, "c: changed by the commit, not in the receipt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, detail := sameChanges(rec, tt.tree)
			if ok != tt.ok || !strings.Contains(detail, tt.want) {
				t.Fatalf("sameChanges = %v %q, want %v and %q", ok, detail, tt.ok, tt.want)
			}
		})
	}
	if ok, _ := sameChanges(nil, rec); ok {
		t.Fatal("a receipt without a tree (written before provenance) matched a commit")
	}
}

func TestTrailersAndVerifiedValue(t *testing.T) {
	stamps := []verify.Stamp{
		{Stage: "tests", Evidence: []verify.EvidenceResult{{Identity: "chk_b"}, {Identity: "chk_a"}, {}}},
		{Stage: "review", Evidence: []verify.EvidenceResult{{}}},
	}
	if got := VerifiedValue(stamps); got != "review=-,tests=chk_a,tests=chk_b" {
		t.Fatalf("VerifiedValue = %q", got)
	}
	ts := Trailers(Stamp{ReceiptID: "rcpt_1", Policy: "sha256:p", Approvals: []string{"apr_1", "apr_2"}, Verified: stamps, RepoID: "repo_1"})
	want := []trailer.Trailer{{Key: trailer.Receipt, Value: "rcpt_1"}, {Key: trailer.Policy, Value: "sha256:p"},
		{Key: trailer.Approvals, Value: "apr_1,apr_2"}, {Key: trailer.Verified, Value: "review=-,tests=chk_a,tests=chk_b"}, {Key: trailer.Repo, Value: "repo_1"}}
	if !reflect.DeepEqual(ts, want) {
		t.Fatalf("Trailers = %#v, want %#v", ts, want)
	}
	// What git_commit writes, commit_verify reads back.
	if got := trailer.Parse(trailer.Append("subject\n\nbody", ts)); !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip = %#v", got)
	}
}
