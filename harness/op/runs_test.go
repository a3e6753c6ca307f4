package op

import (
	"bytes"
	"encoding/json"
	"testing"
)

// stripRunID takes run_id out of an arguments object and leaves the rest as
// it was; runIDOf reads the same field. Anything that is not an object
// passes through untouched (strict decoding rejects it after).
func FuzzStripRunID(f *testing.F) {
	for _, s := range []string{`{}`, `{"run_id":"run_1","path":"a"}`, `{"path":"run_id"}`, `{"run_id":5}`, `[1,"run_id"]`, `{"a":{"run_id":"x"}}`, `null`, `{"run_id":"x","run_id":"y"}`, `{"run\u005fid":"x","p":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := stripRunID(raw)
		_ = runIDOf(raw)
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			if !bytes.Equal(out, raw) {
				t.Fatalf("non-object %q changed to %q", raw, out)
			}
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("stripped %q is not JSON: %v", out, err)
		}
		if _, ok := got["run_id"]; ok {
			t.Fatalf("run_id left in %q", out)
		}
		delete(m, "run_id")
		if len(got) != len(m) {
			t.Fatalf("stripping changed other fields: %q -> %q", raw, out)
		}
		for k, v := range m {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(v)) && !jsonEqual(got[k], v) {
				t.Fatalf("field %s changed: %s -> %s", k, v, got[k])
			}
		}
	})
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && bytes.Equal(mustJSON(x), mustJSON(y))
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }
