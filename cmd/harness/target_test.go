package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// harness target add makes PATH absolute before it sends it, and --write
// asks for write access.
func TestTargetAddSendsAbsolutePath(t *testing.T) {
	f := newAPIFake(t, map[string]string{"POST /v1/target_register": `{"target_id":"tgt_1","workspace_id":"ws_1","canonical_root":"/x","access":"write","identity_fingerprint":"fp_1","created":true}`})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{".": wd, "testdata": filepath.Join(wd, "testdata"), "../harness/": wd, "/abs/path": "/abs/path"} {
		before := len(f.recorded())
		if code, _, errOut := cliRun(t, f.dataDir, "target", "add", arg, "--write"); code != exitOK {
			t.Fatalf("target add %s: exit %d %s", arg, code, errOut)
		}
		calls := f.recorded()[before:]
		var body struct {
			Path   string `json:"path"`
			Access string `json:"access"`
		}
		if len(calls) != 1 || json.Unmarshal([]byte(calls[0].body), &body) != nil || body.Path != want || body.Access != "write" {
			t.Errorf("target add %s sent %+v, want path %s with access write", arg, calls, want)
		}
	}
	if code, _, _ := cliRun(t, f.dataDir, "target", "frobnicate"); code == exitOK {
		t.Fatal("an unknown subcommand succeeded")
	}
}
