package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
)

// register registers a fresh repository with the runtime's registry and
// returns its entry.
func register(t *testing.T, r *startedRuntime) RepoEntry {
	t.Helper()
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	id, err := pathsafe.IdentityOf(root)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := r.Registry.Register(context.Background(), root, filepath.Join(root, ".git"), id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e, ok := r.Registry.Lookup(reg.Repo.ID)
	if !ok {
		t.Fatalf("registered %s is not in the published index", reg.Repo.ID)
	}
	return e
}

// The registry client registers idempotently, lists, resolves through the
// published index without a round trip, and forgets.
func TestRegistryClient(t *testing.T) {
	r := startRuntime(t)
	ctx := context.Background()
	root := testutil.Repo(t, nil)
	id, err := pathsafe.IdentityOf(root)
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Registry.Register(ctx, root, filepath.Join(root, ".git"), id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !first.Created || first.Repo.ID == "" || first.Repo.CheckoutID == "" || first.Repo.Root != root {
		t.Fatalf("first registration %+v", first)
	}
	again, err := r.Registry.Register(ctx, root, filepath.Join(root, ".git"), id, time.Now())
	if err != nil || again.Created || again.Repo.ID != first.Repo.ID {
		t.Fatalf("second registration %+v, %v; want the same repository, not created", again, err)
	}
	list, err := r.Registry.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != first.Repo.ID {
		t.Fatalf("List = %+v, %v", list, err)
	}
	e, ok := r.Registry.Lookup(first.Repo.ID)
	if !ok || e.Checkout == nil || e.Repo.Root != root {
		t.Fatalf("Lookup = %+v, %v; want the entry with its checkout actor", e, ok)
	}
	if _, err := r.Registry.Unregister(ctx, first.Repo.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Registry.Lookup(first.Repo.ID); ok {
		t.Fatal("an unregistered repository is still in the index")
	}
	if list, err := r.Registry.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("List after Unregister = %+v, %v", list, err)
	}
}

// ledgerScript runs the same requests against a Ledger and describes what
// each answered: the fake must answer as the ledger actor does.
func ledgerScript(ctx context.Context, l Ledger) []string {
	var out []string
	say := func(step string, err error, more string) {
		out = append(out, fmt.Sprintf("%s: %s %s", step, errs.CodeOf(err), more))
	}
	begin := func(step, id, hash string) {
		b, err := l.Begin(ctx, messages.LedgerBegin{RequestID: id, Operation: "apply_patch", InputHash: hash, Paths: []string{"a.txt"}})
		say(step, err, fmt.Sprintf("replay=%v state=%s result=%s", b.Replay, b.Entry.State, b.Entry.Result))
	}
	get := func(step, id string) {
		g, err := l.Get(ctx, id)
		say(step, err, fmt.Sprintf("found=%v state=%s op=%s paths=%v", g.Found, g.Entry.State, g.Entry.Operation, g.Entry.Paths))
	}
	begin("begin", "req-1", "h1")
	begin("begin while executing", "req-1", "h1")
	say("complete", l.Complete(ctx, "req-1", json.RawMessage(`{"ok":true}`)), "")
	get("get succeeded", "req-1")
	begin("replay", "req-1", "h1")
	begin("other input", "req-1", "h2")
	begin("begin req-2", "req-2", "h1")
	say("fail", l.Fail(ctx, "req-2", errs.New(errs.LeaseLost, "lost")), "")
	get("get failed", "req-2")
	begin("retry after failure", "req-2", "h1")
	say("abandon another input", l.Abandon(ctx, "req-2", "h9"), "")
	say("abandon", l.Abandon(ctx, "req-2", "h1"), "")
	get("get abandoned", "req-2")
	begin("begin after abandon", "req-2", "h1")
	return out
}

// FakeLedger keeps the ledger actor's rules: the same script answers the
// same through both (codes, replays, states, stored results).
func TestLedgerClientAndItsFake(t *testing.T) {
	r := startRuntime(t)
	ctx := context.Background()
	real := ledgerScript(ctx, r.Ledger)
	fake := ledgerScript(ctx, &FakeLedger{})
	if !slices.Equal(real, fake) {
		t.Fatalf("the fake answers otherwise:\nactor: %s\nfake:  %s", strings.Join(real, "\n       "), strings.Join(fake, "\n       "))
	}
	// And the script says what the protocol is.
	for _, want := range []string{
		"begin:  replay=false state=executing",
		"begin while executing: REQUEST_IN_PROGRESS",
		`replay:  replay=true state=succeeded result={"ok":true}`,
		"other input: REQUEST_CONFLICT",
		"get failed:  found=true state=failed",
		"retry after failure:  replay=false state=executing",
		"get abandoned:  found=false",
	} {
		found := false
		for _, line := range real {
			found = found || strings.HasPrefix(line, want)
		}
		if !found {
			t.Errorf("no step answered %q:\n%s", want, strings.Join(real, "\n"))
		}
	}
}

// The lease client: a lease holds its keys (another request is busy, or
// waits in mailbox order and gets the next token), fences while it lives,
// and its context ends when it is released; a durable lease shows in the
// status.
func TestLeaseClient(t *testing.T) {
	r := startRuntime(t)
	ctx := context.Background()
	e := register(t, r)
	key := "path:" + e.Repo.CheckoutID + ":a.txt"
	req := LeaseRequest{Owner: "req-1", Operation: "apply_patch", Keys: []string{key}}
	l1, lctx, err := r.Leases.Acquire(ctx, e, req)
	if err != nil {
		t.Fatal(err)
	}
	info := l1.Info()
	if info.ID == "" || info.CheckoutID != e.Repo.CheckoutID || info.Tokens[key] == 0 || l1.MaxToken() != info.Tokens[key] || info.Visibility != "ephemeral" {
		t.Fatalf("lease %+v (max token %d)", info, l1.MaxToken())
	}
	if err := l1.Fence(); err != nil {
		t.Fatalf("fence of a live lease: %v", err)
	}
	if _, _, err := r.Leases.Acquire(ctx, e, LeaseRequest{Owner: "req-2", Operation: "apply_patch", Keys: []string{key}}); errs.CodeOf(err) != errs.MutationBusy {
		t.Fatalf("a busy key: %v, want MUTATION_BUSY", err)
	}
	if _, _, err := r.Leases.Acquire(ctx, e, LeaseRequest{Owner: "req-2", Keys: []string{key}, Wait: MaxLeaseWait + time.Second}); errs.CodeOf(err) != errs.InvalidArgument ||
		!strings.Contains(err.Error(), "wait_ms") {
		t.Fatalf("a wait past the bound: %v, want INVALID_ARGUMENT naming wait_ms", err)
	}
	type granted struct {
		l   Lease
		err error
	}
	waiting := make(chan granted, 1)
	go func() {
		l, _, err := r.Leases.Acquire(ctx, e, LeaseRequest{Owner: "req-3", Operation: "apply_patch", Keys: []string{key}, Wait: 20 * time.Second})
		waiting <- granted{l, err}
	}()
	select {
	case g := <-waiting:
		t.Fatalf("a waiting request was granted while the key was held: %+v", g)
	case <-time.After(50 * time.Millisecond):
	}
	l1.Release()
	l1.Release() // idempotent
	if lctx.Err() == nil {
		t.Fatal("the lease's context lives on after Release")
	}
	g := <-waiting
	if g.err != nil {
		t.Fatalf("the waiting request: %v", g.err)
	}
	if g.l.MaxToken() <= info.Tokens[key] {
		t.Fatalf("the next lease has token %d after %d, want a higher one", g.l.MaxToken(), info.Tokens[key])
	}
	if err := l1.Fence(); err == nil {
		t.Fatal("a released lease still fences")
	}
	g.l.Release()

	d, _, err := r.Leases.Acquire(ctx, e, LeaseRequest{Owner: "job-1", Operation: "job_start", Keys: []string{key}, Visibility: "durable", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	st := r.Status(ctx)
	if len(st.DurableLeases) != 1 || st.DurableLeases[0].RepoID != e.Repo.ID || st.DurableLeases[0].ID != d.Info().ID {
		t.Fatalf("durable leases in the status %+v, want %s", st.DurableLeases, d.Info().ID)
	}
	d.Release()
	if st := r.Status(ctx); len(st.DurableLeases) != 0 {
		t.Fatalf("durable leases after Release %+v", st.DurableLeases)
	}
}

// leaseScript runs the requests both lease clients answer alike (the
// fake grants what the checkout would find free) and describes each.
func leaseScript(ctx context.Context, ls Leases, e RepoEntry) []string {
	var out []string
	key := "path:" + e.Repo.CheckoutID + ":a.txt"
	acquire := func(step string, req LeaseRequest) Lease {
		l, lctx, err := ls.Acquire(ctx, e, req)
		if err != nil {
			out = append(out, step+": "+string(errs.CodeOf(err)))
			return nil
		}
		out = append(out, fmt.Sprintf("%s: granted keys=%v checkout-ok=%v live=%v", step, l.Info().Keys, l.Info().CheckoutID == e.Repo.CheckoutID, lctx.Err() == nil))
		return l
	}
	acquire("invalid key", LeaseRequest{Owner: "r", Keys: []string{"file:a.txt"}})
	acquire("negative wait", LeaseRequest{Owner: "r", Keys: []string{key}, Wait: -time.Second})
	acquire("wait past the bound", LeaseRequest{Owner: "r", Keys: []string{key}, Wait: MaxLeaseWait + time.Millisecond})
	first := acquire("first", LeaseRequest{Owner: "r1", Operation: "apply_patch", Keys: []string{key}})
	if first == nil {
		return out
	}
	out = append(out, fmt.Sprintf("fence: %v", first.Fence()))
	tok := first.MaxToken()
	first.Release()
	first.Release()
	second := acquire("after release", LeaseRequest{Owner: "r2", Operation: "apply_patch", Keys: []string{key}})
	if second != nil {
		out = append(out, fmt.Sprintf("token grows: %v", second.MaxToken() > tok))
		second.Release()
	}
	return out
}

// FakeLeases answers what the actors answer for the requests it models.
func TestLeaseClientAndItsFake(t *testing.T) {
	r := startRuntime(t)
	ctx := context.Background()
	e := register(t, r)
	real := leaseScript(ctx, r.Leases, e)
	fake := leaseScript(ctx, &FakeLeases{}, e)
	if !slices.Equal(real, fake) {
		t.Fatalf("the fake answers otherwise:\nactor: %s\nfake:  %s", strings.Join(real, "\n       "), strings.Join(fake, "\n       "))
	}
	for _, want := range []string{"invalid key: INVALID_ARGUMENT", "wait past the bound: INVALID_ARGUMENT", "fence: <nil>", "token grows: true"} {
		if !slices.Contains(real, want) {
			t.Errorf("no step answered %q:\n%s", want, strings.Join(real, "\n"))
		}
	}
}

// The audit client: appends are sealed in order, a durable append
// answers once it is durable, and the chain verifies.
func TestAuditClient(t *testing.T) {
	r := startRuntime(t)
	ctx := context.Background()
	r.Audit.Append(messages.AuditEntry{Kind: audit.KindMutation, Operation: "apply_patch", RequestID: "req-1", Outcome: "succeeded"})
	r.Audit.Append(messages.AuditEntry{Kind: audit.KindRejection, Operation: "run_command", Outcome: "block"})
	if err := r.Audit.AppendDurable(messages.AuditEntry{Kind: audit.KindMutation, Operation: "git_commit", RequestID: "req-2", Outcome: "succeeded"})(); err != nil {
		t.Fatal(err)
	}
	head, err := r.Audit.Head(ctx)
	if err != nil || head.Seq != 3 {
		t.Fatalf("head %+v, %v; want seq 3", head, err)
	}
	all, err := r.Audit.Query(ctx, messages.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for i, e := range all.Entries {
		if e.Seq != uint64(i+1) || e.Time.IsZero() {
			t.Errorf("entry %d: seq %d time %v", i, e.Seq, e.Time)
		}
		ops = append(ops, e.Operation)
	}
	if want := []string{"apply_patch", "run_command", "git_commit"}; !slices.Equal(ops, want) {
		t.Fatalf("entries %q, want %q", ops, want)
	}
	muts, err := r.Audit.Query(ctx, messages.AuditQuery{Kind: audit.KindMutation, RequestID: "req-2"})
	if err != nil || len(muts.Entries) != 1 || muts.Entries[0].Operation != "git_commit" {
		t.Fatalf("query by kind and request: %+v, %v", muts, err)
	}
	v, err := r.Audit.Verify(ctx)
	if err != nil || !v.OK || v.Checked != 3 {
		t.Fatalf("verify %+v, %v; want 3 entries intact", v, err)
	}
}

// The status reports every part: the actors by kind (a registered
// repository's checkout among them), the four lanes, checks and jobs.
func TestStatusAndTheOtherClients(t *testing.T) {
	r := startRuntime(t)
	ctx := context.Background()
	register(t, r)
	st := r.Status(ctx)
	if st.Actors["checkout"] != 1 {
		t.Errorf("actors %v, want one checkout", st.Actors)
	}
	if len(st.Lanes) != 4 || st.Checks == nil || st.Jobs == nil {
		t.Fatalf("status lanes %d, checks %v, jobs %v", len(st.Lanes), st.Checks, st.Jobs)
	}
	for i, l := range st.Lanes {
		if l.Lane == "" || l.Running != "" {
			t.Errorf("lane %d: %+v, want a named idle lane", i, l)
		}
	}
	if jobs, err := r.Jobs.List(ctx, messages.JobList{}); err != nil || len(jobs) != 0 {
		t.Fatalf("jobs %+v, %v; want none", jobs, err)
	}
	if _, err := r.Jobs.Get(ctx, "job_nope"); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("an unknown job: %v, want NOT_FOUND", err)
	}
	if s, err := r.Checks.Stats(ctx); err != nil || s.Running != 0 {
		t.Fatalf("checks %+v, %v", s, err)
	}
}
