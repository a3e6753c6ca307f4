package ledger

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

type patchArgs struct {
	RequestID string   `json:"request_id"`
	Path      string   `json:"path"`
	Lines     []int    `json:"lines"`
	Tags      []string `json:"tags,omitempty"`
}

func TestInputHashCanonical(t *testing.T) {
	base := `{"path":"a.go","lines":[1,2,3],"opts":{"x":true,"y":null,"z":"é\u0001"}}`
	tests := []struct {
		name string
		op   string
		args any
		same bool
	}{
		{"identical raw", "apply_patch", json.RawMessage(base), true},
		{"key order", "apply_patch", json.RawMessage(`{"opts":{"z":"é\u0001","y":null,"x":true},"lines":[1,2,3],"path":"a.go"}`), true},
		{"whitespace", "apply_patch", json.RawMessage("{ \"path\" : \"a.go\",\n\t\"lines\": [ 1, 2, 3 ],\"opts\":{\"x\":true, \"y\":null,\"z\":\"\\u00e9\\u0001\"} }"), true},
		{"request_id ignored", "apply_patch", json.RawMessage(`{"request_id":"r9","path":"a.go","lines":[1,2,3],"opts":{"x":true,"y":null,"z":"é\u0001"}}`), true},
		{"other ignored fields", "apply_patch", json.RawMessage(`{"include_latency_breakdown":true,"approval_id":"ap1","path":"a.go","lines":[1,2,3],"opts":{"x":true,"y":null,"z":"é\u0001"}}`), true},
		{"number forms", "apply_patch", json.RawMessage(`{"path":"a.go","lines":[1.0,2e0,30e-1],"opts":{"x":true,"y":null,"z":"é\u0001"}}`), true},
		{"go map", "apply_patch", map[string]any{"path": "a.go", "lines": []any{1, 2.0, int64(3)}, "opts": map[string]any{"x": true, "y": nil, "z": "é\x01"}}, true},
		{"go map with request_id", "apply_patch", map[string]any{"request_id": "other", "path": "a.go", "lines": []any{1, 2, 3}, "opts": map[string]any{"x": true, "y": nil, "z": "é\x01"}}, true},
		{"changed value", "apply_patch", json.RawMessage(`{"path":"b.go","lines":[1,2,3],"opts":{"x":true,"y":null,"z":"é\u0001"}}`), false},
		{"changed nested value", "apply_patch", json.RawMessage(`{"path":"a.go","lines":[1,2,3],"opts":{"x":false,"y":null,"z":"é\u0001"}}`), false},
		{"changed order in array", "apply_patch", json.RawMessage(`{"path":"a.go","lines":[3,2,1],"opts":{"x":true,"y":null,"z":"é\u0001"}}`), false},
		{"added field", "apply_patch", json.RawMessage(`{"path":"a.go","lines":[1,2,3],"opts":{"x":true,"y":null,"z":"é\u0001"},"dry_run":true}`), false},
		{"null vs missing", "apply_patch", json.RawMessage(`{"path":"a.go","lines":[1,2,3],"opts":{"x":true,"z":"é\u0001"}}`), false},
		{"nested request_id counts", "apply_patch", json.RawMessage(`{"path":"a.go","lines":[1,2,3],"opts":{"x":true,"y":null,"z":"é\u0001","request_id":"r"}}`), false},
		{"other operation", "git_commit", json.RawMessage(base), false},
		{"string vs number", "apply_patch", json.RawMessage(`{"path":"a.go","lines":["1",2,3],"opts":{"x":true,"y":null,"z":"é\u0001"}}`), false},
	}
	want, err := InputHash("apply_patch", json.RawMessage(base))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(want, "sha256:") || len(want) != len("sha256:")+64 {
		t.Fatalf("got %q, want sha256:<64 hex>", want)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := InputHash(tt.op, tt.args)
			if err != nil {
				t.Fatalf("InputHash = %v", err)
			}
			if (got == want) != tt.same {
				t.Fatalf("got %s, base %s, want same=%v", got, want, tt.same)
			}
		})
	}
}

func TestInputHashStructMatchesMap(t *testing.T) {
	a, err := InputHash("op", patchArgs{RequestID: "r1", Path: "x", Lines: []int{4}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := InputHash("op", map[string]any{"path": "x", "lines": []any{float64(4)}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := InputHash("op", &patchArgs{RequestID: "r2", Path: "x", Lines: []int{4}})
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a != c {
		t.Fatalf("struct %s, map %s, pointer %s: want all equal", a, b, c)
	}
}

func TestCanonicalForm(t *testing.T) {
	tests := []struct {
		name string
		args any
		want string
	}{
		{"sorted compact", json.RawMessage(`{ "b": 1, "a": [true, null] }`), `{"a":[true,null],"b":1}`},
		{"escapes", map[string]any{"s": "q\"\\\n<>&\x7f"}, `{"s":"q\"\\\u000a<>&` + "\x7f" + `"}`},
		{"invalid utf8", map[string]any{"s": "a\xffb"}, `{"s":"a` + "\uFFFD" + `b"}`},
		{"negative zero", json.RawMessage(`[-0, -0.0, 0e5]`), `[0,0,0]`},
		{"big integer exact", json.RawMessage(`[123456789012345678901234567890]`), `[123456789012345678901234567890]`},
		{"big float integral", json.RawMessage(`[1e20, 1.5e20]`), `[100000000000000000000,150000000000000000000]`},
		{"go float big", []any{1e20}, `[100000000000000000000]`},
		{"fraction", json.RawMessage(`[0.1, 1.50, -2.5e-3]`), `[0.1,1.5,-0.0025]`},
		{"top-level fields dropped only at top", map[string]any{"request_id": "x", "a": map[string]any{"approval_id": "y"}}, `{"a":{"approval_id":"y"}}`},
		{"scalar", "x", `"x"`},
		{"nil", nil, `null`},
		{"strings", []string{"a", "b"}, `["a","b"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := canon{}
			if err := c.value(tt.args, 0, true); err != nil {
				t.Fatalf("canon = %v", err)
			}
			if got := string(c.buf); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestInputHashErrors(t *testing.T) {
	deep := strings.Repeat("[", 1100) + strings.Repeat("]", 1100)
	tests := []struct {
		name string
		op   string
		args any
	}{
		{"no operation", "", map[string]any{}},
		{"channel", "op", make(chan int)},
		{"nan", "op", map[string]any{"x": float64Nan()}},
		{"invalid raw", "op", json.RawMessage(`{"a":`)},
		{"trailing data", "op", json.RawMessage(`{} {}`)},
		{"huge number", "op", json.RawMessage(`[1e999]`)},
		{"too deep", "op", json.RawMessage(deep)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := InputHash(tt.op, tt.args)
			if errs.CodeOf(err) != errs.InvalidArgument {
				t.Fatalf("got %q, %v; want %s", h, err, errs.InvalidArgument)
			}
		})
	}
}

func float64Nan() float64 {
	zero := 0.0
	return zero / zero
}

func FuzzInputHash(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[1.0,"x"]}`, `[1e20]`, `"\ud800"`, `{"request_id":"r"}`, `null`, `-0`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h1, err := InputHash("op", json.RawMessage(s))
		if err != nil {
			return
		}
		// The canonical form is a fixed point: hashing it gives the same hash.
		c := canon{}
		if err := c.value(json.RawMessage(s), 0, false); err != nil {
			t.Fatalf("canon failed after InputHash succeeded: %v", err)
		}
		if !json.Valid(c.buf) {
			t.Fatalf("canonical form %q is not valid JSON", c.buf)
		}
		h2, err := InputHash("op", json.RawMessage(c.buf))
		if err != nil || h1 != h2 {
			t.Fatalf("canonical form %s hashes to %s (%v), want %s", c.buf, h2, err, h1)
		}
	})
}

func BenchmarkInputHash(b *testing.B) {
	args := map[string]any{
		"request_id": "req-1",
		"repo_id":    "r-0123456789abcdef",
		"ops": []any{
			map[string]any{"op": "replace", "path": "src/main.go", "old": "func main() {}", "new": "func main() { run() }"},
			map[string]any{"op": "create", "path": "src/run.go", "content": strings.Repeat("x", 512)},
		},
		"allowed_paths":             []any{"src/**"},
		"include_latency_breakdown": true,
	}
	raw, _ := json.Marshal(args)
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := InputHash("apply_patch", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := InputHash("apply_patch", json.RawMessage(raw)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// An operation's own ignored fields (its descriptor's HashIgnore) are left
// out at the top level only, beside the common ones; the plain InputHash
// keeps them.
func TestInputHashIgnoring(t *testing.T) {
	base := map[string]any{"path": "a.go", "nested": map[string]any{"wait_ms": 5}}
	with := map[string]any{"path": "a.go", "nested": map[string]any{"wait_ms": 5}, "wait_ms": 2000, "request_id": "r9"}
	want, err := InputHashIgnoring("apply_patch", base, []string{"wait_ms"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := InputHashIgnoring("apply_patch", with, []string{"wait_ms"})
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("hash with wait_ms ignored = %s, want %s (the hash without it)", got, want)
	}
	plain, err := InputHash("apply_patch", with)
	if err != nil {
		t.Fatal(err)
	}
	if plain == want {
		t.Error("InputHash left out wait_ms, want only the common fields left out")
	}
	nested, err := InputHashIgnoring("apply_patch", map[string]any{"path": "a.go", "nested": map[string]any{}}, []string{"wait_ms"})
	if err != nil {
		t.Fatal(err)
	}
	if nested == want {
		t.Error("a nested wait_ms was left out, want only top-level fields ignored")
	}
	if nilExtra, _ := InputHashIgnoring("apply_patch", base, nil); nilExtra != mustHash(t, "apply_patch", base) {
		t.Error("InputHashIgnoring with no extra fields differs from InputHash")
	}
	if c := CommonIgnored(); len(c) != 3 || c[0] != "request_id" {
		t.Errorf("CommonIgnored() = %q, want request_id, include_latency_breakdown, approval_id", c)
	}
}

func mustHash(t *testing.T, op string, args any) string {
	t.Helper()
	h, err := InputHash(op, args)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
