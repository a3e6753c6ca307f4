package op

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/policy"
	"github.com/harnessd/harnessd/internal/trailer"
	"github.com/harnessd/harnessd/internal/verify"
)

// hookedCall is a call whose gate required the given stages, in an
// environment with hooks h.
func hookedCall(h WriteHooks, stages ...string) *Call {
	c := &Call{Env: &Env{Wiring: Wiring{Hooks: h}}}
	for _, s := range stages {
		c.gated.Decision.RequireVerified = append(c.gated.Decision.RequireVerified, policy.Requirement{RuleID: mediate.RuleRequireVerified, Stage: s})
	}
	return c
}

// recording returns a txn whose Run appends "run" to *log.
func recording(log *[]string) Txn {
	return Txn{Op: "apply_patch", Run: func(context.Context, runtime.Lease, *Receipt) error {
		*log = append(*log, "run")
		return nil
	}}
}

// Apply runs the verification gate before the write, with the call's
// decision, and puts its stamps in the receipt; a refusal stops the write
// before it starts and is returned as the gate gave it; a call that
// requires nothing does not ask the gate at all.
func TestApplyVerifiesBeforeTheWrite(t *testing.T) {
	stamp := verify.Stamp{RunID: "run_1", Stage: "tests", Rule: mediate.RuleRequireVerified}
	refusal := errs.New(errs.VerificationRequired, "stage tests is not verified")
	tests := []struct {
		name    string
		stages  []string
		verdict error
		wantLog []string
		wantErr errs.Code
		wantVer int
	}{
		{name: "verified", stages: []string{"tests"}, wantLog: []string{"verify", "run"}, wantVer: 1},
		{name: "refused", stages: []string{"tests"}, verdict: refusal, wantLog: []string{"verify"}, wantErr: errs.VerificationRequired},
		{name: "nothing required", wantLog: []string{"run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log []string
			var sawStages []string
			c := hookedCall(WriteHooks{Verify: func(_ context.Context, c *Call) ([]verify.Stamp, error) {
				log = append(log, "verify")
				for _, r := range c.Gated().Decision.RequireVerified {
					sawStages = append(sawStages, r.Stage)
				}
				if tt.verdict != nil {
					return nil, tt.verdict
				}
				return []verify.Stamp{stamp}, nil
			}}, tt.stages...)
			var r Receipt
			err := c.Apply(context.Background(), recording(&log), nil, &r)
			if errs.CodeOf(err) != tt.wantErr {
				t.Fatalf("err = %v, want code %q", err, tt.wantErr)
			}
			if tt.verdict != nil && !errors.Is(err, tt.verdict) {
				t.Fatalf("err = %v, want the gate's own refusal %v", err, tt.verdict)
			}
			if !reflect.DeepEqual(log, tt.wantLog) {
				t.Fatalf("order = %v, want %v", log, tt.wantLog)
			}
			if len(r.Verified) != tt.wantVer {
				t.Fatalf("receipt verified = %v, want %d stamps", r.Verified, tt.wantVer)
			}
			if tt.wantVer > 0 && !reflect.DeepEqual(sawStages, tt.stages) {
				t.Fatalf("the gate saw stages %v, want the decision's %v", sawStages, tt.stages)
			}
		})
	}
}

// A composite operation (its gate decided steps) verifies nothing of its
// own through Write's apply: each of its write steps runs Apply with the
// step's call, whose decision is the step's.
func TestApplyOfACompositeLeavesVerificationToItsSteps(t *testing.T) {
	var log []string
	verifyHook := func(_ context.Context, c *Call) ([]verify.Stamp, error) {
		log = append(log, "verify "+c.Gated().Decision.RequireVerified[0].Stage)
		return nil, nil
	}
	batch := hookedCall(WriteHooks{Verify: verifyHook}, "batch-stage")
	batch.gated.Steps = []govern.StepResult{{}}
	step := hookedCall(WriteHooks{Verify: verifyHook}, "step-stage")
	var r Receipt
	composite := Txn{Op: "batch", Run: func(ctx context.Context, l runtime.Lease, r *Receipt) error {
		log = append(log, "batch")
		return step.Apply(ctx, recording(&log), l, r)
	}}
	if err := batch.apply(context.Background(), context.Background(), composite, nil, &r); err != nil {
		t.Fatal(err)
	}
	if want := []string{"batch", "verify step-stage", "run"}; !reflect.DeepEqual(log, want) {
		t.Fatalf("order = %v, want %v", log, want)
	}
	log = nil
	if err := step.apply(context.Background(), context.Background(), recording(&log), nil, &r); err != nil {
		t.Fatal(err)
	}
	if want := []string{"verify step-stage", "run"}; !reflect.DeepEqual(log, want) {
		t.Fatalf("a leaf write: order = %v, want %v", log, want)
	}
}

// A hook that was never registered refuses the write that needs it
// (INTERNAL, naming the hook and the fix) instead of letting it through
// unverified, without pre-images or without trailers; only Committed,
// which runs after the commit exists, records nothing.
func TestMissingHooksFailClosed(t *testing.T) {
	c := hookedCall(WriteHooks{}, "tests")
	var log []string
	var r Receipt
	err := c.Apply(context.Background(), recording(&log), nil, &r)
	if errs.CodeOf(err) != errs.Internal || errs.From(err).Details["hook"] != "Verify" || len(log) != 0 {
		t.Fatalf("apply without a Verify hook: err = %v, ran %v; want INTERNAL naming Verify and nothing run", err, log)
	}
	if !strings.Contains(errs.From(err).Message, "ops.Wiring") {
		t.Fatalf("message %q does not name the fix", errs.From(err).Message)
	}
	if err := c.KeepPreImages(&r)(patch.PreImage{Rel: "a.go"}); errs.CodeOf(err) != errs.Internal || errs.From(err).Details["hook"] != "Keep" {
		t.Fatalf("pre-image without a Keep hook: %v, want INTERNAL naming Keep", err)
	}
	if ts, err := c.Trailers(&r, nil); errs.CodeOf(err) != errs.Internal || ts != nil {
		t.Fatalf("trailers without a hook: %v, %v; want INTERNAL and none", ts, err)
	}
	c.Committed(context.Background(), &r, "abc")
	if r.Tree != nil || r.Changes != nil {
		t.Fatalf("Committed without a hook recorded %+v", r)
	}
}

// The registered hooks get the call and the receipt they serve.
func TestHooksSeeTheirCallAndReceipt(t *testing.T) {
	var c *Call
	c = hookedCall(WriteHooks{
		Keep: func(got *Call, r *Receipt) func(patch.PreImage) error {
			return func(pi patch.PreImage) error {
				if got != c {
					t.Errorf("Keep got another call")
				}
				r.Changes = append(r.Changes, patch.Change{Path: pi.Rel, Op: "kept"})
				return nil
			}
		},
		Trailers: func(got *Call, r *Receipt, approvals []string) []trailer.Trailer {
			return []trailer.Trailer{{Key: trailer.Receipt, Value: r.ReceiptID}, {Key: trailer.Approvals, Value: strings.Join(approvals, ",")}}
		},
		Committed: func(_ context.Context, got *Call, r *Receipt, commit string) {
			r.Tree = append(r.Tree, patch.Change{Path: "a.go", After: commit})
		},
	})
	r := Receipt{ReceiptID: "rcpt_1"}
	if err := c.KeepPreImages(&r)(patch.PreImage{Rel: "a.go"}); err != nil {
		t.Fatal(err)
	}
	ts, err := c.Trailers(&r, []string{"apr_1"})
	if err != nil {
		t.Fatal(err)
	}
	c.Committed(context.Background(), &r, "c0ffee")
	if want := []trailer.Trailer{{Key: trailer.Receipt, Value: "rcpt_1"}, {Key: trailer.Approvals, Value: "apr_1"}}; !reflect.DeepEqual(ts, want) {
		t.Fatalf("trailers = %v, want %v", ts, want)
	}
	if len(r.Changes) != 1 || r.Changes[0].Path != "a.go" || len(r.Tree) != 1 || r.Tree[0].After != "c0ffee" {
		t.Fatalf("receipt = %+v, want the kept pre-image and the commit's tree", r)
	}
}

// Check names the first missing part of a wiring, and passes a whole one.
func TestWiringCheck(t *testing.T) {
	whole := Wiring{
		Hooks: WriteHooks{
			Verify:    func(context.Context, *Call) ([]verify.Stamp, error) { return nil, nil },
			Keep:      func(*Call, *Receipt) func(patch.PreImage) error { return nil },
			Trailers:  func(*Call, *Receipt, []string) []trailer.Trailer { return nil },
			Committed: func(context.Context, *Call, *Receipt, string) {},
		},
		Checks: struct{ Checker }{}, Jobs: struct{ Durable }{},
	}
	if err := whole.Check(); err != nil {
		t.Fatalf("whole wiring: %v", err)
	}
	for _, tt := range []struct {
		missing string
		cut     func(w *Wiring)
	}{
		{"Hooks.Verify", func(w *Wiring) { w.Hooks.Verify = nil }},
		{"Hooks.Keep", func(w *Wiring) { w.Hooks.Keep = nil }},
		{"Hooks.Trailers", func(w *Wiring) { w.Hooks.Trailers = nil }},
		{"Hooks.Committed", func(w *Wiring) { w.Hooks.Committed = nil }},
		{"Checks", func(w *Wiring) { w.Checks = nil }},
		{"Jobs", func(w *Wiring) { w.Jobs = nil }},
	} {
		w := whole
		tt.cut(&w)
		err := w.Check()
		if errs.CodeOf(err) != errs.Internal || errs.From(err).Details["missing"] != tt.missing {
			t.Errorf("without %s: %v, want INTERNAL naming it", tt.missing, err)
		}
	}
}
