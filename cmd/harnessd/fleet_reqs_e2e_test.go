package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/fleet"
)

// reqAnswer is the part of an apply_patch answer the request id tests read.
type reqAnswer struct {
	ReceiptID    string `json:"receipt_id"`
	Replayed     bool   `json:"replayed"`
	ForwardedTo  string `json:"forwarded_to"`
	FencingToken uint64 `json:"fencing_token"`
}

// TestFleetRequestIDs: two nodes have one checkout registered (the same
// directory, so the same repo_id; the first is its home), as a client
// behind a load balancer sees them.
//   - A request id is one request fleet-wide: its retry through the
//     other node is forwarded to the node that holds it and replays there
//     (a "create" run twice would fail); the same id with other input is
//     REQUEST_CONFLICT on both; etcd has its record.
//   - kill -9 of the node that holds a request id: its retry elsewhere is
//     UNAVAILABLE naming it, and never runs.
//   - The home's fencing tokens come from blocks the fleet reserved
//     (tokens/<repo_id>); killed and restarted (a new epoch), its first
//     token on a file it never wrote is above everything reserved before.
func TestFleetRequestIDs(t *testing.T) {
	f := newFleetEnv(t, true)
	ns := f.nodes(t, "rq", 2, f.etcdCached)
	a, b := ns[0], ns[1]
	path := f.clone(t)
	id := a.register(t, path)
	if idB := b.register(t, path); idB != id {
		t.Fatalf("the same directory registered as %s on %s and %s on %s", id, a.name, idB, b.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	create := func(n *fleetNode, rid, file, content string) (reqAnswer, error) {
		raw, err := n.api.Call(ctx, "apply_patch", map[string]any{"repo_id": id, "request_id": rid,
			"operations": []map[string]any{{"op": "create", "path": file, "content": content}}})
		if err != nil {
			return reqAnswer{}, err
		}
		var ans reqAnswer
		if err := json.Unmarshal(raw, &ans); err != nil {
			t.Fatalf("node %s: apply_patch answered %s (%v)", n.name, raw, err)
		}
		return ans, nil
	}

	w1, err := create(a, "rq-1", "reqs/one.txt", "one\n")
	if err != nil || w1.ReceiptID == "" || w1.ForwardedTo != "" {
		t.Fatalf("rq-1 on %s = %+v, %v", a.name, w1, errorOf(err))
	}
	raw, _ := f.etcd.get(t, fleetPrefix+"req/rq-1")
	var rec fleet.Request
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Node != a.name || rec.Op != "apply_patch" || rec.Epoch <= 0 {
		t.Fatalf("etcd req/rq-1 = %s (%v); want %s's record of apply_patch", raw, err, a.name)
	}
	start := time.Now()
	w1b, err := create(b, "rq-1", "reqs/one.txt", "one\n")
	forwardedRetry := time.Since(start)
	if err != nil || !w1b.Replayed || w1b.ReceiptID != w1.ReceiptID || w1b.ForwardedTo != a.name {
		t.Fatalf("rq-1's retry on %s = %+v, %v; want %s's receipt %s replayed", b.name, w1b, errorOf(err), a.name, w1.ReceiptID)
	}
	for _, n := range ns {
		if _, err := create(n, "rq-1", "reqs/other.txt", "x\n"); !codeIs(err, errs.RequestConflict) {
			t.Fatalf("rq-1 with other input on %s = %v; want REQUEST_CONFLICT", n.name, errorOf(err))
		}
	}
	if _, err := os.Stat(filepath.Join(path, "reqs", "other.txt")); !os.IsNotExist(err) {
		t.Fatalf("reqs/other.txt exists after the conflicts (%v)", err)
	}

	// The home's tokens are inside the fleet's reservation.
	high := func() uint64 {
		raw, _ := f.etcd.get(t, fleetPrefix+"tokens/"+id)
		var v struct {
			High uint64 `json:"high"`
			Node string `json:"node"`
		}
		if err := json.Unmarshal(raw, &v); err != nil || v.Node != a.name {
			t.Fatalf("etcd tokens/%s = %s (%v); want %s's reservation", id, raw, err, a.name)
		}
		return v.High
	}
	reserved := high()
	if w1.FencingToken == 0 || w1.FencingToken > reserved {
		t.Fatalf("%s's token %d is not inside the reserved %d", a.name, w1.FencingToken, reserved)
	}

	// rq-2 is b's; b killed: its retry on a is UNAVAILABLE naming b.
	if w2, err := create(b, "rq-2", "reqs/two.txt", "two\n"); err != nil || w2.ForwardedTo != "" {
		t.Fatalf("rq-2 on %s = %+v, %v", b.name, w2, errorOf(err))
	}
	_ = b.d.cmd.Process.Kill()
	<-b.d.done
	if err := os.Remove(filepath.Join(path, "reqs", "two.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := create(a, "rq-2", "reqs/two.txt", "two\n"); !codeIs(err, errs.Unavailable) || !strings.Contains(errorOf(err), b.name) {
		t.Fatalf("rq-2 on %s with %s killed = %v; want UNAVAILABLE naming %s", a.name, b.name, errorOf(err), b.name)
	}
	if _, err := os.Stat(filepath.Join(path, "reqs", "two.txt")); !os.IsNotExist(err) {
		t.Fatalf("reqs/two.txt was written again by %s (%v): a request ran twice", a.name, err)
	}

	// a killed and restarted: a new epoch reserves above everything.
	before := high()
	_ = a.d.cmd.Process.Kill()
	<-a.d.done
	f.launch(t, a)
	f.ready(t, a)
	w3, err := create(a, "rq-3", "reqs/fresh.txt", "fresh\n")
	if err != nil || w3.FencingToken <= before {
		t.Fatalf("rq-3 on the restarted %s = %+v, %v; want a token above the %d reserved before", a.name, w3, errorOf(err), before)
	}
	if r, err := create(a, "rq-1", "reqs/one.txt", "one\n"); err != nil || !r.Replayed || r.ReceiptID != w1.ReceiptID {
		t.Fatalf("rq-1 on the restarted %s = %+v, %v; want it replayed from its ledger", a.name, r, errorOf(err))
	}
	t.Logf("retry forwarded and replayed in %s; tokens: %d (block up to %d), after the restart %d (fleet reserved up to %d)",
		forwardedRetry.Round(time.Millisecond), w1.FencingToken, reserved, w3.FencingToken, high())
}
