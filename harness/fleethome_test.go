package harness

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFleetHomeDropRunID(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]any
		dropped  bool
	}{
		{"no run", `{"repo_id":"r","path":"a"}`, map[string]any{"repo_id": "r", "path": "a"}, false},
		{"run dropped", `{"repo_id":"r","run_id":"run_1","path":"a"}`, map[string]any{"repo_id": "r", "path": "a"}, true},
		{"escaped key", `{"repo_id":"r","run\u005fid":"run_1"}`, map[string]any{"repo_id": "r"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, dropped := dropRunID(json.RawMessage(tc.in))
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil || dropped != tc.dropped || len(got) != len(tc.want) {
				t.Fatalf("dropRunID(%s) = %s, %t (%v); want %v, %t", tc.in, out, dropped, err, tc.want, tc.dropped)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("dropRunID(%s)[%s] = %v, want %v", tc.in, k, got[k], v)
				}
			}
		})
	}
	// Not an object: passed on unchanged (the home node answers the error).
	if out, dropped := dropRunID(json.RawMessage(`[1]`)); string(out) != `[1]` || dropped {
		t.Fatalf("dropRunID([1]) = %s, %t", out, dropped)
	}
}

func TestFleetHomeForwardedAnswer(t *testing.T) {
	out, err := forwardedAnswer(json.RawMessage(`{"receipt_id":"rcpt_1","replayed":true}`), "a1", true)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	var got map[string]any
	_ = json.Unmarshal(b, &got)
	if got["receipt_id"] != "rcpt_1" || got["replayed"] != true || got["forwarded_to"] != "a1" || !strings.Contains(got["forwarded_warning"].(string), "run_id") {
		t.Fatalf("forwardedAnswer = %s", b)
	}
	out, _ = forwardedAnswer(json.RawMessage(`{"content":"x"}`), "a1", false)
	if b, _ := json.Marshal(out); strings.Contains(string(b), "forwarded_warning") {
		t.Fatalf("a warning without a dropped run_id: %s", b)
	}
	if _, err := forwardedAnswer(json.RawMessage(`"not an object"`), "a1", false); err == nil || !strings.Contains(err.Error(), "a1") {
		t.Fatalf("forwardedAnswer of a non-object = %v; want UNAVAILABLE naming a1", err)
	}
}

func TestFleetHomePrintable(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"node-b", true},
		{"claude-code 1.2", true},
		{"", false},
		{"a\nb", false},
		{"a\x00b", false},
		{strings.Repeat("x", maxForwardName), true},
		{strings.Repeat("x", maxForwardName+1), false},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%.20q) = %t, want %t", tc.in, got, tc.want)
		}
	}
}

func TestFleetHomeRepoIDOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"repo_id":"repo_1","path":"a"}`, "repo_1"},
		{`{"path":"a"}`, ""},
		{`{"repo":"repo_1"}`, ""}, // an alias: the pipeline's REPOSITORY_NOT_REGISTERED forwards it
		{`{"repo_id":5}`, ""},
		{`not json "repo_id"`, ""},
	} {
		if got := repoIDOf(json.RawMessage(tc.in)); got != tc.want {
			t.Errorf("repoIDOf(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
