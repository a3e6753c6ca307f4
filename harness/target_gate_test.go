package harness_test

import (
	"testing"

	"github.com/harnessd/harnessd/harness"
)

// targetOpCalls registers two targets in h and returns a valid call of
// every target operation, in an order that works (the last unregisters
// one). everyOpCall (gate_test.go) appends it, so the gate-once and
// approval tests cover every target operation.
func targetOpCalls(t *testing.T, h *harness.Harness) []opCall {
	t.Helper()
	dir := targetDir(t, map[string]string{"README.md": "hello world\n"})
	other := targetDir(t, nil)
	g := addTarget(t, h, dir, "write", "")
	o := addTarget(t, h, other, "write", "")
	with := func(kv ...any) map[string]any {
		m := map[string]any{"target_id": g.TargetID}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	return []opCall{
		{"target_register", map[string]any{"path": dir, "access": "write"}, nil},
		{"target_list", map[string]any{}, nil},
		{"target_read_file", with("path", "README.md"), nil},
		{"target_list_dir", with(), nil},
		{"target_search", with("query", "hello"), nil},
		{"target_write_file", with("path", "w.txt", "content", "w\n"), nil},
		{"target_apply_patch", with("operations", patchOps("README.md", "hello", "hi")), nil},
		{"target_copy", with("from", "README.md", "to_target_id", o.TargetID, "to", "copy.md", "overwrite", true), nil},
		{"target_move", with("from", "w.txt", "to", "moved.txt", "overwrite", true), nil},
		{"target_execute_command", with("argv", []string{"ls"}), nil},
		{"target_promote", map[string]any{"target_id": o.TargetID}, nil},
		{"target_unregister", with(), nil},
	}
}
