package harness_test

import (
	"context"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/testutil"
)

func TestProposalsConflictAndIntegrate(t *testing.T) {
	h, root, id := fixture(t)
	ctx := context.Background()
	testutil.WriteFile(t, root, "go.sum", "x v1 h1:abc\n")
	testutil.WriteFile(t, root, "db/migrations/001.sql", "create table t();\n")
	testutil.Git(t, root, "add", "-A")
	testutil.Git(t, root, "commit", "-q", "-m", "more")
	v, err := h.PatchProposalValidate(ctx, harness.PatchProposalValidateArgs{RepoID: id, Proposals: []harness.Proposal{
		{ID: "a", Operations: replaceOp("README.md", "hello world", "hello A")},
		{ID: "b", Operations: []patch.Op{{Op: "write", Path: "README.md", Content: "B\n"}}},
		{ID: "c", Operations: append(replaceOp("src/main.go", "hello", "bonjour"),
			patch.Op{Op: "replace", Path: "go.sum", OldText: "abc", NewText: "def"},
			patch.Op{Op: "replace", Path: "db/migrations/001.sql", OldText: "t()", NewText: "u()"})},
		{ID: "d", Operations: replaceOp("src/main.go", "not present", "x")},
		{ID: "e", Operations: []patch.Op{{Op: "create", Path: "new/dir/file.txt", Content: "new\n"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]harness.ProposalVerdict{}
	for _, p := range v.Proposals {
		byID[p.ID] = p
	}
	a, b, c, d, e := byID["a"], byID["b"], byID["c"], byID["d"], byID["e"]
	if !a.Valid || !b.Valid || !c.Valid || !e.Valid || a.ProposalID == "" {
		t.Fatalf("verdicts = %+v, want a, b, c, e valid", v.Proposals)
	}
	if len(a.Conflicts) != 1 || a.Conflicts[0].With != "b" || a.Conflicts[0].Path != "README.md" || a.Conflicts[0].Kind != "write_read" {
		t.Fatalf("a.conflicts = %+v, want write_read with b on README.md", a.Conflicts)
	}
	if len(c.Conflicts) != 1 || c.Conflicts[0].With != "d" || c.Conflicts[0].Kind != "write_write" {
		t.Fatalf("c.conflicts = %+v, want write_write with d", c.Conflicts)
	}
	if d.Valid || d.Error == nil || d.Error.Code != errs.PatchConflict || d.ProposalID != "" {
		t.Fatalf("d = %+v, want invalid with PATCH_CONFLICT", d)
	}
	kinds := map[string]bool{}
	for _, w := range c.Warnings {
		kinds[w.Kind+":"+w.Path] = true
	}
	if !kinds["lockfile:go.sum"] || !kinds["schema:db/migrations/001.sql"] {
		t.Fatalf("c.warnings = %+v, want lockfile and schema", c.Warnings)
	}
	// Validation wrote nothing.
	if st := testutil.Git(t, root, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after validate = %q, want clean", st)
	}

	if _, err := h.PatchProposalIntegrate(ctx, harness.PatchProposalIntegrateArgs{RepoID: id, RequestID: "int-0", ProposalIDs: []string{a.ProposalID, b.ProposalID}}); errs.CodeOf(err) != errs.PatchConflict {
		t.Fatalf("integrate conflicting = %v, want PATCH_CONFLICT", err)
	}
	r, err := h.PatchProposalIntegrate(ctx, harness.PatchProposalIntegrateArgs{RepoID: id, RequestID: "int-1", ProposalIDs: []string{a.ProposalID, e.ProposalID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Changes) != 2 || r.FencingToken == 0 {
		t.Fatalf("integrate = %+v", r)
	}
	if got := readFile(t, root, "README.md"); !strings.Contains(got, "hello A") {
		t.Fatalf("README.md = %q", got)
	}
	if got := readFile(t, root, "new/dir/file.txt"); got != "new\n" {
		t.Fatalf("new file = %q", got)
	}
	// Replay returns the stored result.
	r2, err := h.PatchProposalIntegrate(ctx, harness.PatchProposalIntegrateArgs{RepoID: id, RequestID: "int-1", ProposalIDs: []string{a.ProposalID, e.ProposalID}})
	if err != nil || !r2.Replayed {
		t.Fatalf("replay = %+v, %v", r2, err)
	}
	// c's file changes underneath: refused, naming the file.
	testutil.WriteFile(t, root, "src/main.go", "package main\n// edited\nfunc main() { println(\"hello\") }\n")
	_, err = h.PatchProposalIntegrate(ctx, harness.PatchProposalIntegrateArgs{RepoID: id, RequestID: "int-2", ProposalIDs: []string{c.ProposalID}})
	if errs.CodeOf(err) != errs.PatchConflict || errs.From(err).Details["path"] != "src/main.go" {
		t.Fatalf("integrate after change = %v, want PATCH_CONFLICT on src/main.go", err)
	}
	if got := readFile(t, root, "go.sum"); got != "x v1 h1:abc\n" {
		t.Fatalf("go.sum = %q: a refused integrate wrote", got)
	}
	// HEAD moves: refused.
	testutil.Git(t, root, "commit", "-q", "-am", "move head")
	_, err = h.PatchProposalIntegrate(ctx, harness.PatchProposalIntegrateArgs{RepoID: id, RequestID: "int-3", ProposalIDs: []string{b.ProposalID}})
	if errs.CodeOf(err) != errs.PatchConflict {
		t.Fatalf("integrate after commit = %v, want PATCH_CONFLICT", err)
	}
	if _, err := h.PatchProposalIntegrate(ctx, harness.PatchProposalIntegrateArgs{RepoID: id, RequestID: "int-4", ProposalIDs: []string{"prop_unknown"}}); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("unknown proposal = %v, want NOT_FOUND", err)
	}
}

func TestProposalValidateInput(t *testing.T) {
	h, _, id := fixture(t)
	tests := []struct {
		name string
		ps   []harness.Proposal
	}{
		{"empty", nil},
		{"no id", []harness.Proposal{{Operations: replaceOp("README.md", "a", "b")}}},
		{"duplicate id", []harness.Proposal{{ID: "x", Operations: replaceOp("README.md", "a", "b")}, {ID: "x", Operations: replaceOp("README.md", "a", "b")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.PatchProposalValidate(context.Background(), harness.PatchProposalValidateArgs{RepoID: id, Proposals: tt.ps})
			if errs.CodeOf(err) != errs.InvalidArgument {
				t.Fatalf("got %v, want INVALID_ARGUMENT", err)
			}
		})
	}
	v, err := h.PatchProposalValidate(context.Background(), harness.PatchProposalValidateArgs{RepoID: id, Proposals: []harness.Proposal{
		{ID: "outside", Operations: replaceOp("../x", "a", "b")},
		{ID: "secret", Operations: replaceOp(".env", "TOKEN", "X")},
		{ID: "notallowed", Operations: replaceOp("README.md", "hello", "x"), AllowedPaths: []string{"src/**"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []errs.Code{errs.PathOutsideRoot, errs.SecretPathDenied, errs.PathNotAllowed}
	for i, p := range v.Proposals {
		if p.Valid || p.Error == nil || p.Error.Code != want[i] {
			t.Fatalf("%s = %+v, want invalid with %s", p.ID, p, want[i])
		}
	}
}
