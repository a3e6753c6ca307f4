package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/fleet"
)

// homeAnswer is the part of an apply_patch or read_file answer the home
// tests read.
type homeAnswer struct {
	ReceiptID   string `json:"receipt_id"`
	RepoID      string `json:"repo_id"`
	CheckoutID  string `json:"checkout_id"`
	Replayed    bool   `json:"replayed"`
	Content     string `json:"content"`
	ForwardedTo string `json:"forwarded_to"`
}

// TestFleetHomeForwardsMutations: a repository registered only on node
// A; an agent on node B writes and reads it by A's repo_id: the call is
// forwarded to A, which writes its own disk under its own ledger and
// receipts; a retry on B replays; B's status names A as the owner; a
// forward without the fleet secret is 401 and changes nothing; a
// forwarded call cannot reach a person's operation.
//
// Sealed (the fleet key on every node), the home record carries its seal
// and the bearer is the key's: etcd's secret is no credential.
func TestFleetHomeForwardsMutations(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "etcd secret", true: "fleet key"}[sealed], func(t *testing.T) { fleetHome(t, sealed) })
	}
}

func fleetHome(t *testing.T, sealed bool) {
	f := newFleetEnv(t, true)
	if sealed {
		f.key = []byte(hex.EncodeToString([]byte(newSecret(t))))
	}
	ns := f.nodes(t, "home", 2, f.etcdCached)
	a, b := ns[0], ns[1]
	path := f.clone(t)
	id := a.register(t, path)

	raw, rev := f.etcd.get(t, fleetPrefix+"homes/"+id)
	var home fleet.Home
	if err := json.Unmarshal(raw, &home); err != nil || home.Node != a.name || home.Root != path || rev == 0 {
		t.Fatalf("etcd homes/%s = %s (%v); want %s's record of %s", id, raw, err, a.name, path)
	}
	if (home.Seal != "") != sealed {
		t.Fatalf("etcd homes/%s = %s; want a seal exactly when the fleet key is set (%t)", id, raw, sealed)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call := func(n *fleetNode, tool string, args map[string]any) (homeAnswer, json.RawMessage, error) {
		raw, err := n.api.Call(ctx, tool, args)
		if err != nil {
			return homeAnswer{}, nil, err
		}
		var ans homeAnswer
		if err := json.Unmarshal(raw, &ans); err != nil {
			t.Fatalf("node %s: %s answered %s (%v)", n.name, tool, raw, err)
		}
		return ans, raw, nil
	}
	// A run of B's: node-local, so the forwarded call runs outside it.
	var run struct {
		RunID string `json:"run_id"`
	}
	rraw0, err := b.api.Call(ctx, "run_start", map[string]any{"goal": "write A's checkout", "repo_id": b.repoID})
	if err != nil || json.Unmarshal(rraw0, &run) != nil || run.RunID == "" {
		t.Fatalf("run_start on %s = %s, %v", b.name, rraw0, errorOf(err))
	}
	patch := map[string]any{"repo_id": id, "request_id": "home-w1", "run_id": run.RunID,
		"operations": []map[string]any{{"op": "write", "path": "notes/home.txt", "content": "written through " + b.name + "\n"}}}
	w1, wraw, err := call(b, "apply_patch", patch)
	if err != nil {
		t.Fatalf("apply_patch on %s with %s's repo_id: %v", b.name, a.name, errorOf(err))
	}
	if w1.ForwardedTo != a.name || w1.ReceiptID == "" || w1.Replayed || w1.RepoID != id || !strings.Contains(string(wraw), "run_id is node-local") {
		t.Fatalf("forwarded apply_patch answered %s; want a receipt of %s, forwarded_to %s, run_id's warning", wraw, id, a.name)
	}
	got, err := os.ReadFile(filepath.Join(path, "notes", "home.txt"))
	if err != nil || string(got) != "written through "+b.name+"\n" {
		t.Fatalf("%s's disk has %q (%v); want the forwarded write", a.name, got, err)
	}
	// The receipt is A's: A answers it itself.
	rraw, err := a.api.Call(ctx, "receipt_list", map[string]any{"repo_id": id})
	if err != nil || !strings.Contains(string(rraw), w1.ReceiptID) {
		t.Fatalf("%s: receipt_list = %.300s, %v; want A's receipt %s", a.name, rraw, errorOf(err), w1.ReceiptID)
	}
	if braw, err := b.api.Call(ctx, "receipt_list", map[string]any{}); err != nil || strings.Contains(string(braw), w1.ReceiptID) {
		t.Fatalf("%s: receipt_list = %.300s, %v: the receipt must be only the home node's", b.name, braw, errorOf(err))
	}
	// A retry of the same request on B: A's ledger replays it.
	w2, _, err := call(b, "apply_patch", patch)
	if err != nil || !w2.Replayed || w2.ReceiptID != w1.ReceiptID || w2.ForwardedTo != a.name {
		t.Fatalf("retry on %s = %+v, %v; want receipt %s replayed", b.name, w2, errorOf(err), w1.ReceiptID)
	}
	// A conflicting retry keeps the home node's code.
	other := map[string]any{"repo_id": id, "request_id": "home-w1",
		"operations": []map[string]any{{"op": "write", "path": "notes/other.txt", "content": "x\n"}}}
	if _, _, err := call(b, "apply_patch", other); !codeIs(err, errs.RequestConflict) {
		t.Fatalf("conflicting retry on %s = %v; want REQUEST_CONFLICT from %s", b.name, errorOf(err), a.name)
	}
	r, _, err := call(b, "read_file", map[string]any{"repo_id": id, "path": "notes/home.txt"})
	if err != nil || r.Content != "written through "+b.name+"\n" || r.ForwardedTo != a.name {
		t.Fatalf("read_file through %s = %+v, %v; want A's content", b.name, r, errorOf(err))
	}
	// The repository named by an alias: B's pipeline answers it unknown,
	// and the call is forwarded all the same.
	r2, _, err := call(b, "read_file", map[string]any{"repo": id, "path": "notes/home.txt"})
	if err != nil || r2.Content != r.Content || r2.ForwardedTo != a.name {
		t.Fatalf("read_file with repo= through %s = %+v, %v; want A's content", b.name, r2, errorOf(err))
	}
	// A's audit says who: forwarded from B.
	araw, err := a.human.Get(ctx, "/v1/audit?request_id=home-w1")
	if err != nil || !strings.Contains(string(araw), "forwarded from node "+b.name) {
		t.Fatalf("%s's audit of home-w1 = %.600s, %v; want it forwarded from %s", a.name, araw, err, b.name)
	}
	// An unknown repository stays unknown (no home anywhere).
	if _, _, err := call(b, "read_file", map[string]any{"repo_id": "repo_nowhere", "path": "x"}); !codeIs(err, errs.RepositoryNotRegistered) {
		t.Fatalf("read_file of an unregistered repository = %v; want REPOSITORY_NOT_REGISTERED", errorOf(err))
	}

	// harness status on B lists A as the owner.
	out, err := exec.Command(harnessBin, "--data-dir", b.dataDir, "status").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "fleet owner") || !strings.Contains(string(out), id+" on "+a.name) {
		t.Fatalf("harness status on %s: %v\n%s\nwant %s on %s", b.name, err, out, id, a.name)
	}

	// The forward route without the fleet secret, or with a wrong one:
	// 401, nothing written.
	secret, _ := f.etcd.get(t, fleetPrefix+"secret")
	wrong := []string{"", "not-the-secret", string(secret) + "x"}
	if sealed {
		// The bearer is the person's key; etcd's secret (if any) is none.
		wrong = append(wrong, string(secret), string(f.key))
		secret = []byte(hex.EncodeToString(f.key))
	}
	post := func(opName, bearer string, args map[string]any) (int, string) {
		body, _ := json.Marshal(args)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.listen+fleet.ForwardPath+opName, bytes.NewReader(body))
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		req.Header.Set(fleet.HeaderForwardedFrom, "intruder")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	marker := map[string]any{"repo_id": id, "request_id": "home-marker",
		"operations": []map[string]any{{"op": "write", "path": "marker.txt", "content": "must not appear\n"}}}
	for _, bearer := range wrong {
		if code, body := post("apply_patch", bearer, marker); code != http.StatusUnauthorized || !strings.Contains(body, "UNAUTHENTICATED") {
			t.Fatalf("forward with bearer %q = %d %s; want 401", bearer[:min(len(bearer), 3)], code, body)
		}
	}
	if _, err := os.Stat(filepath.Join(path, "marker.txt")); !os.IsNotExist(err) {
		t.Fatalf("marker.txt exists after unauthenticated forwards (%v)", err)
	}
	// With the secret, a person's routes are not operations: approvals
	// and policy cannot be forwarded.
	for _, name := range []string{"approve", "approvals", "policy_reload"} {
		if code, body := post(name, string(secret), map[string]any{"approval_id": "apr_x"}); code != http.StatusNotFound || !strings.Contains(body, "only operations are forwarded") {
			t.Fatalf("forwarded %s = %d %s; want 404 (no such operation)", name, code, body)
		}
	}
	// A forwarded call acts in the role it names, never above it: a
	// reader's forwarded write is refused by A's gate, nothing written.
	req := map[string]any{"repo_id": id, "request_id": "home-reader",
		"operations": []map[string]any{{"op": "write", "path": "marker.txt", "content": "must not appear\n"}}}
	body, _ := json.Marshal(req)
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.listen+fleet.ForwardPath+"apply_patch", bytes.NewReader(body))
	hr.Header.Set("Authorization", "Bearer "+string(secret))
	hr.Header.Set(fleet.HeaderForwardedFrom, b.name)
	hr.Header.Set(fleet.HeaderRole, "reader")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	var rb bytes.Buffer
	_, _ = rb.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(rb.String(), "ROLE_DENIED") {
		t.Fatalf("a reader's forwarded apply_patch = %d %s; want 403 ROLE_DENIED", resp.StatusCode, rb.String())
	}
	if _, err := os.Stat(filepath.Join(path, "marker.txt")); !os.IsNotExist(err) {
		t.Fatalf("marker.txt exists after refused forwards (%v)", err)
	}
	if strings.Contains(string(out), string(secret)) || strings.Contains(string(wraw), string(secret)) {
		t.Fatal("the fleet secret is in an answer or in harness status")
	}
	noFleetSecret(t, f, ns)

	// Unregistered on its home node: the record goes, and B answers the
	// repository unknown.
	if _, err := a.api.Call(ctx, "repository_unregister", map[string]any{"repo_id": id}); err != nil {
		t.Fatalf("%s: repository_unregister: %v", a.name, errorOf(err))
	}
	if raw, _ := f.etcd.get(t, fleetPrefix+"homes/"+id); raw != nil {
		t.Fatalf("homes/%s = %s after its home unregistered it; want none", id, raw)
	}
	if _, _, err := call(b, "read_file", map[string]any{"repo_id": id, "path": "notes/home.txt"}); !codeIs(err, errs.RepositoryNotRegistered) {
		t.Fatalf("read_file of the unregistered repository on %s = %v; want REPOSITORY_NOT_REGISTERED", b.name, errorOf(err))
	}

	// The home node killed: a forwarded call is UNAVAILABLE naming it.
	id2 := a.register(t, f.clone(t))
	_ = a.d.cmd.Process.Kill()
	<-a.d.done
	if _, _, err := call(b, "read_file", map[string]any{"repo_id": id2, "path": "README.md"}); !codeIs(err, errs.Unavailable) || !strings.Contains(errorOf(err), a.name) {
		t.Fatalf("read_file with the home node killed = %v; want UNAVAILABLE naming %s", errorOf(err), a.name)
	}
}
