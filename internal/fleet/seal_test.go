package fleet

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// TestSealCoversEveryField: changing any field of a record (or the
// identity, or the key) changes its seal.
func TestSealCoversEveryField(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	base := func() *ActionRecord {
		return &ActionRecord{ExitCode: 0, Stdout: DigestOf([]byte("ok")), Stderr: DigestOf(nil), Node: "n1",
			StartedAt: time.Unix(100, 5), FinishedAt: time.Unix(101, 7), Passed: true, Summary: []string{"a", "b"},
			Path: "fast", RepoID: "repo_1", JobID: "", RunID: "fr-1", Token: 42}
	}
	id := identity("seal")
	want := sealRecord(key, id, base())
	cases := map[string]func(r *ActionRecord){
		"exit code": func(r *ActionRecord) { r.ExitCode = 1 },
		"stdout":    func(r *ActionRecord) { r.Stdout = DigestOf([]byte("forged")) },
		"stderr":    func(r *ActionRecord) { r.Stderr = DigestOf([]byte("x")) },
		"node":      func(r *ActionRecord) { r.Node = "n2" },
		"started":   func(r *ActionRecord) { r.StartedAt = r.StartedAt.Add(1) },
		"finished":  func(r *ActionRecord) { r.FinishedAt = r.FinishedAt.Add(1) },
		"passed":    func(r *ActionRecord) { r.Passed = false },
		"timed out": func(r *ActionRecord) { r.TimedOut = true },
		"cancelled": func(r *ActionRecord) { r.Cancelled = true },
		"summary":   func(r *ActionRecord) { r.Summary = []string{"ab"} },
		"path":      func(r *ActionRecord) { r.Path = "durable" },
		"repo":      func(r *ActionRecord) { r.RepoID = "repo_2" },
		"job":       func(r *ActionRecord) { r.JobID = "job_1" },
		"run":       func(r *ActionRecord) { r.RunID = "fr-2" },
		"token":     func(r *ActionRecord) { r.Token = 43 },
	}
	for name, change := range cases {
		r := base()
		change(r)
		if got := sealRecord(key, id, r); got == want {
			t.Errorf("%s: the seal did not change", name)
		}
	}
	if sealRecord(key, identity("other"), base()) == want {
		t.Error("another identity has the same seal")
	}
	if sealRecord([]byte("another key of 32 bytes, really!"), id, base()) == want {
		t.Error("another key gives the same seal")
	}
	r := base()
	r.Seal = want
	if !sealValid(key, id, r) {
		t.Error("a record's own seal is not valid")
	}
}

// TestSealedFleetRefusesForgedEvidence is the attack: someone who can
// write etcd (a job a person granted the network, on a host where etcd
// listens) but does not hold the fleet key turns a failing check into a
// pass, with an output of their own whose digest matches. A sealed node
// refuses the record and runs the check itself.
func TestSealedFleetRefusesForgedEvidence(t *testing.T) {
	prefix := testPrefix(t)
	key := []byte("the fleet key a person gave every node")
	cfg := func(name string) Config {
		return Config{Endpoints: ClientURLs(shared), Prefix: prefix, Node: name, BlobDir: t.TempDir(), SealKey: key}
	}
	a, b := join(t, cfg("a")), join(t, cfg("b"))
	id := identity(t.Name())
	var calls atomic.Int64
	failing := func(ctx context.Context, c Claim) (Outcome, error) {
		calls.Add(1)
		return Outcome{ExitCode: 1, Stdout: "--- FAIL: TestX", Path: "fast"}, nil
	}
	if r, err := a.SingleFlight(context.Background(), id, failing); err != nil || r.Outcome.Passed {
		t.Fatalf("a: %+v, %v; want the failing run", r, err)
	}

	// The forger writes a pass: a blob and a record of their own, in the
	// REAPI shape harnessd reads, without the key.
	forgedOut := []byte("ok  example.com/x  0.01s (forged)")
	d := DigestOf(forgedOut)
	forged := &ActionRecord{ExitCode: 0, Passed: true, Stdout: d, Stderr: DigestOf(nil), Node: "a", RunID: "fr-forged", Token: 1,
		Seal: sealRecord([]byte("a key the forger made up!!"), id, &ActionRecord{})}
	b1, err := forged.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ad, _ := ActionDigest(id)
	raw := rawClient(t, ClientURLs(shared))
	for k, v := range map[string]string{a.keys.cas(d.Hash): string(forgedOut), a.keys.ac(ad.Hash): string(b1)} {
		if _, err := raw.Put(context.Background(), k, v); err != nil {
			t.Fatal(err)
		}
	}
	r, err := b.SingleFlight(context.Background(), id, failing)
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != SourceRan || r.Outcome.Passed || calls.Load() != 2 || strings.Contains(r.Outcome.Stdout, "forged") {
		t.Fatalf("b: source %s passed %v stdout %q runs %d: want the forged pass refused and the check run again", r.Source, r.Outcome.Passed, r.Outcome.Stdout, calls.Load())
	}
	if len(r.Refused) != 1 || !strings.Contains(r.Refused[0], "carries no valid seal of the fleet key") {
		t.Fatalf("refused = %q, want the forged record named", r.Refused)
	}

	// A node's own sealed pass is reused by the other.
	passing := func(ctx context.Context, c Claim) (Outcome, error) {
		calls.Add(1)
		return Outcome{Passed: true, Stdout: "ok", Path: "fast"}, nil
	}
	id2 := identity(t.Name() + "-pass")
	if _, err := a.SingleFlight(context.Background(), id2, passing); err != nil {
		t.Fatal(err)
	}
	if r, err := b.SingleFlight(context.Background(), id2, passing); err != nil || r.Source != SourceReused || len(r.Refused) != 0 {
		t.Fatalf("b on a's sealed pass: %+v, %v; want reused", r, err)
	}
}

// TestSealKeyTooShort: a key under 16 bytes is refused at Join.
func TestSealKeyTooShort(t *testing.T) {
	_, err := Join(context.Background(), Config{Endpoints: ClientURLs(shared), Prefix: testPrefix(t), Node: "a", SealKey: []byte("short")})
	if errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("Join with a 5-byte key = %v, want INVALID_ARGUMENT naming the minimum", err)
	}
}
