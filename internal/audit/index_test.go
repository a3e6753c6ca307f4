package audit

import (
	"slices"
	"testing"
)

// Each entry is indexed under its request id, its input hash and, for a
// policy load, its policy's digest; a filter reads through the first term
// it names, and ByPolicy says when that term is the digest.
func TestIndexTerms(t *testing.T) {
	tests := []struct {
		name  string
		e     Entry
		terms []string
	}{
		{"a write", Entry{Kind: KindMutation, RequestID: "r1", PolicyDigest: "sha256:aa"}, []string{"request\x00r1"}},
		{"an approval used", Entry{Kind: KindApproval, InputHash: "sha256:in"}, []string{"input\x00sha256:in"}},
		{"a policy load", Entry{Kind: KindPolicyLoad, PolicyDigest: "sha256:aa"}, []string{"policy\x00sha256:aa"}},
		{"a load without digest", Entry{Kind: KindPolicyLoad}, nil},
		{"everything", Entry{Kind: KindPolicyLoad, RequestID: "r", InputHash: "i", PolicyDigest: "d"}, []string{"request\x00r", "input\x00i", "policy\x00d"}},
	}
	for _, tc := range tests {
		if got := IndexTerms(tc.e); !slices.Equal(got, tc.terms) {
			t.Errorf("%s: IndexTerms = %q, want %q", tc.name, got, tc.terms)
		}
	}
	filters := []struct {
		f        Filter
		term     string
		byPolicy bool
	}{
		{Filter{RequestID: "r", PolicyDigest: "d", Kind: KindPolicyLoad}, "request\x00r", false},
		{Filter{InputHash: "i"}, "input\x00i", false},
		{Filter{Kind: KindPolicyLoad, PolicyDigest: "d"}, "policy\x00d", true},
		{Filter{PolicyDigest: "d"}, "", false}, // every entry is stamped: only loads are indexed
		{Filter{Kind: KindMutation, PolicyDigest: "d"}, "", false},
		{Filter{Kind: KindPolicyLoad}, "", false},
	}
	for _, tc := range filters {
		if got := tc.f.IndexTerm(); got != tc.term || tc.f.ByPolicy() != tc.byPolicy {
			t.Errorf("%+v: IndexTerm = %q, ByPolicy = %v; want %q, %v", tc.f, got, tc.f.ByPolicy(), tc.term, tc.byPolicy)
		}
	}
}
