package op

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"sync"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/messages"
)

// A lane's step is data.
//
// read_lanes prepares its steps and the pipeline gates them with the call,
// once (runCall). Each step then goes to a lane actor as a
// messages.LaneRun: the operation's name and JSON arguments, who called,
// the gate's answer for the step, the digest of the input the gate decided
// on, and a seal over all of it. The lane hands the message to its runner,
// RunLaneStep, which
//
//  1. checks the seal: an HMAC-SHA256 of every field under a key only this
//     pipeline holds (made when it is built, never put in a message), so a
//     step that did not pass this pipeline's gate, or was changed on its
//     way, does not run;
//  2. prepares the step again from its arguments, with the operation's
//     own Prepare found in the registry, as PrepareStep does (a prepared
//     plan is code and cannot travel); the arguments are decoded without
//     a second schema check, since the seal says they passed it;
//  3. checks that the gate would see what it decided on (gateDigest of
//     the new plan's gate input against the one sealed): the same
//     operation, arguments, paths, argv, repository and root. A step
//     whose repository was moved or replaced in between answers
//     POLICY_DENIED instead of running on a decision made for another;
//  4. runs the step with the gate's answer (Call.Gated) and never crosses
//     the gate again.
//
// A seal rather than a table of admitted steps: a message must say by
// itself that it was admitted, as a check's spec does, and the pipeline
// keeps no state per call in flight. The policy a step was judged by is
// the one of the gate's moment, as for any operation; the executors check
// secret paths against the current list when they run.

// laneSealer seals lane steps with a random key made when the pipeline is
// built; its MACs are pooled (a step is sealed once and checked once).
type laneSealer struct {
	macs sync.Pool // of hash.Hash: HMAC-SHA256 under the key
}

func newLaneSealer() *laneSealer {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return &laneSealer{macs: sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

// laneGate is the gate's answer for one step as a lane carries it (in
// LaneRun.Gate, in the lane codec's form): what Call.Gated answers when the
// step runs.
type laneGate struct {
	Decision  mediate.Decision
	InputHash string
}

// LaneStep returns step s of parent (a composite call the gate passed,
// with its steps) as the work a lane is handed: group names the call's
// steps for cancellation, deadline ends the step (zero = none).
func (p *Pipeline) LaneStep(parent *Call, group string, s *Step, deadline time.Time) (messages.LaneRun, error) {
	gate := appendGate(make([]byte, 0, 128), laneGate{Decision: s.Call.gated.Decision, InputHash: s.Call.gated.InputHash})
	digest, err := gateDigest(s.GateInput())
	if err != nil {
		return messages.LaneRun{}, StepError(err, s.Index, s.Kind)
	}
	m := messages.LaneRun{Group: group, Index: s.Index, Kind: s.Kind, Args: s.Raw, Deadline: deadline,
		Caller: parent.Caller, Gate: gate, GateDigest: digest}
	if parent.HasRepo() {
		m.RepoID = parent.Repo.Repo.ID
	}
	if parent.run != nil {
		m.ParentSpan = parent.run.spanID
	}
	m.Seal = p.lanes.seal(m)
	return m, nil
}

// RunLaneStep runs a step a lane was handed (LaneStep) and returns its
// JSON result: the lanes' runner. It fails with POLICY_DENIED for a step
// this pipeline's gate did not pass as it is, and with UNAVAILABLE once
// the pipeline closes.
func (p *Pipeline) RunLaneStep(ctx context.Context, m messages.LaneRun) (json.RawMessage, error) {
	if !hmac.Equal(m.Seal, p.lanes.seal(m)) {
		return nil, errs.New(errs.PolicyDenied, "step %d (%s) of %s was not passed by this harness's gate as it is (its seal does not match): run it through read_lanes",
			m.Index, m.Kind, m.Group).With("step", m.Index).With("kind", m.Kind)
	}
	leave, err := p.Enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	gate, err := readGate(m.Gate)
	if err != nil {
		return nil, errs.New(errs.Internal, "step %d (%s): the gate's answer it carries cannot be read", m.Index, m.Kind)
	}
	s, err := p.prepareLaneStep(ctx, m)
	if err != nil {
		return nil, err
	}
	digest, err := gateDigest(s.GateInput())
	if err != nil {
		return nil, StepError(err, m.Index, m.Kind)
	}
	if digest != m.GateDigest {
		return nil, errs.New(errs.PolicyDenied, "step %d (%s) of %s changed between the gate and its lane (its repository, root or what it touches): nothing ran; call read_lanes again",
			m.Index, m.Kind, m.Group).With("step", m.Index).With("kind", m.Kind)
	}
	s.Call.gated = govern.Result{Decision: gate.Decision, InputHash: gate.InputHash}
	out, err := s.Run(ctx)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "encode step result: %v", err)
	}
	return b, nil
}

// prepareLaneStep prepares m's step again, through the registry, in its
// repository, for its caller and under its parent's span. The parent checked the repository's
// identity when it started; the digest check covers its root since.
func (p *Pipeline) prepareLaneStep(ctx context.Context, m messages.LaneRun) (*Step, error) {
	parent := &Call{Env: p.env, pipe: p, Caller: m.Caller}
	if m.RepoID != "" {
		r, err := p.env.Repo(m.RepoID)
		if err != nil {
			return nil, err
		}
		root, err := p.env.Root(r)
		if err != nil {
			return nil, err
		}
		parent.Repo, parent.Root = r, root
	}
	if m.ParentSpan != "" && p.env.Runs != nil {
		if e, ok := p.env.Runs.Lookup(m.Caller.RunID); ok {
			parent.run = &callRun{entry: e, spanID: m.ParentSpan}
		}
	}
	o, ok := p.reg.Lookup(m.Kind)
	if !ok || !o.Agent {
		return nil, errs.New(errs.InvalidArgument, "unknown step kind %q", m.Kind)
	}
	// The seal says PrepareStep accepted exactly these bytes against the
	// step schema: decoding them needs no second check.
	in, err := o.decode(normArgs(m.Args))
	if err != nil {
		return nil, err
	}
	return p.prepareStep(ctx, parent, o, m.Index, m.Args, in)
}

// seal returns the seal of m: the HMAC of every field but Seal.
func (s *laneSealer) seal(m messages.LaneRun) []byte {
	b := make([]byte, 0, 160+len(m.Group)+len(m.Args)+len(m.Gate)+len(m.Caller.Session))
	b = appendString(b, m.Group)
	b = appendInt(b, int64(m.Index))
	b = appendString(b, m.Kind)
	b = appendString(b, m.RepoID)
	b = appendBytes(b, m.Args)
	b = appendTime(b, m.Deadline)
	b = appendCaller(b, m.Caller)
	b = appendString(b, m.ParentSpan)
	b = appendBytes(b, m.Gate)
	b = appendString(b, m.GateDigest)
	mac := s.macs.Get().(hash.Hash)
	mac.Reset()
	_, _ = mac.Write(b)
	sum := mac.Sum(nil)
	s.macs.Put(mac)
	return sum
}

// gateDigest returns the digest of what the gate decides on for in
// (appendGateInput): equal digests mean the gate saw the same action.
func gateDigest(in govern.Input) (string, error) {
	b, err := appendGateInput(make([]byte, 0, 512), in)
	if err != nil {
		return "", errs.Wrap(errs.InvalidArgument, err, "the arguments of %s cannot be encoded: %v", in.Tool, err)
	}
	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:]), nil
}
