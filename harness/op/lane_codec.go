package op

import (
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/policy"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/messages"
)

// The compact binary form of what a lane step carries: the gate's answer
// (LaneRun.Gate) is written and read with it, the seal and gateDigest
// hash what it writes. Fields are written one by one, in declaration
// order, each length-prefixed, so no two values write the same bytes. It
// is written by hand (encoding/json costs ten times as much per step);
// tests fill every field by reflection and fail when a struct gains one
// this file does not carry (TestLaneGateRoundTrips,
// TestGateDigestCoversEveryInputField, TestLaneSealCoversEveryField).

// codecError is a gate's answer that cannot be read.
type codecError string

func (e codecError) Error() string { return string(e) }

const errCodec = codecError("lane codec: truncated or malformed")

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

// appendStrings writes a nil slice apart from an empty one.
func appendStrings(b []byte, v []string) []byte {
	if v == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(v))+1)
	for _, s := range v {
		b = appendString(b, s)
	}
	return b
}

func appendInt(b []byte, n int64) []byte { return binary.AppendVarint(b, n) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	return appendInt(append(b, 1), t.UnixNano())
}

func appendCaller(b []byte, c messages.Caller) []byte {
	b = appendString(b, c.RunID)
	b = appendString(b, c.Session)
	b = appendString(b, c.Client.Name)
	b = appendString(b, c.Client.Version)
	return appendString(b, c.Role)
}

func appendRoute(b []byte, r route.Decision) []byte {
	b = appendString(b, string(r.Mode))
	b = appendStrings(b, r.Reasons)
	b = appendInt(b, int64(r.Risk))
	b = appendString(b, string(r.EstimatedClass))
	b = appendBool(b, r.RequiresIsolation)
	b = appendBool(b, r.RequiresRecovery)
	b = appendString(b, r.SuggestedOperation)
	b = appendString(b, string(r.Tier))
	b = appendString(b, r.CommandClass)
	return appendBool(b, r.Mutation)
}

// appendGate writes the gate's answer for a step.
func appendGate(b []byte, g laneGate) []byte {
	d := g.Decision
	b = appendString(b, string(d.Outcome))
	b = appendString(b, d.Reason)
	b = appendString(b, d.RuleID)
	b = appendInt(b, int64(d.Risk))
	b = appendString(b, string(d.Code))
	b = appendString(b, string(d.Tier))
	b = appendRoute(b, d.Route)
	if d.RequireVerified == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(d.RequireVerified))+1)
		for _, r := range d.RequireVerified {
			b = appendString(b, r.RuleID)
			b = appendString(b, r.Stage)
		}
	}
	return appendString(b, g.InputHash)
}

// appendGateInput writes what the gate decides on for in (gateDigest
// hashes it): the repository by its id and root, the root checker by its
// path, the arguments as JSON, each step by its own digest.
func appendGateInput(b []byte, in govern.Input) ([]byte, error) {
	b = appendString(b, in.Tool)
	b = appendInt(b, int64(in.Kind))
	b = appendStrings(b, in.HashIgnore)
	if in.Repo == nil {
		b = append(b, 0)
	} else {
		b = appendString(appendString(append(b, 1), in.Repo.ID), in.Repo.Root)
	}
	if in.Root == nil {
		b = append(b, 0)
	} else {
		b = appendString(append(b, 1), in.Root.Path())
	}
	b = appendStrings(b, in.Argv)
	b = appendStrings(b, in.Paths)
	b = appendInt(b, int64(in.TimeoutMs))
	b = appendBool(b, in.Writes)
	if in.Args == nil {
		b = append(b, 0)
	} else {
		j, err := json.Marshal(in.Args)
		if err != nil {
			return nil, err
		}
		b = appendBytes(append(b, 1), j)
	}
	b = appendString(b, in.ApprovalID)
	b = appendString(b, in.TreeRevision)
	if in.Route == nil {
		b = append(b, 0)
	} else {
		b = appendRoute(append(b, 1), *in.Route)
	}
	b = binary.AppendUvarint(b, uint64(len(in.Steps)))
	for _, s := range in.Steps {
		d, err := gateDigest(s)
		if err != nil {
			return nil, err
		}
		b = appendString(b, d)
	}
	b = appendBool(b, in.Confined)
	b = appendBool(b, in.Network)
	b = appendBool(b, in.RunsDurable)
	b = appendCaller(b, in.Caller)
	b = appendStrings(b, in.RequireVerified)
	return appendString(b, in.Grant), nil
}

// reader reads what the append functions wrote; its first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.err = errCodec
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *reader) int() int64 {
	if r.err != nil {
		return 0
	}
	n, k := binary.Varint(r.b)
	if k <= 0 {
		r.err = errCodec
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errCodec
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) bool() bool {
	if r.err != nil {
		return false
	}
	if len(r.b) == 0 || r.b[0] > 1 {
		r.err = errCodec
		return false
	}
	v := r.b[0] == 1
	r.b = r.b[1:]
	return v
}

// count reads a slice's length: -1 for nil. A length larger than the bytes
// left is refused before anything is made.
func (r *reader) count() int {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return -1
	}
	if n-1 > uint64(len(r.b)) {
		r.err = errCodec
		return -1
	}
	return int(n - 1)
}

func (r *reader) strs() []string {
	n := r.count()
	if n < 0 {
		return nil
	}
	v := make([]string, n)
	for i := range v {
		v[i] = r.str()
	}
	return v
}

func (r *reader) route() route.Decision {
	return route.Decision{Mode: route.Mode(r.str()), Reasons: r.strs(), Risk: int(r.int()), EstimatedClass: route.Class(r.str()),
		RequiresIsolation: r.bool(), RequiresRecovery: r.bool(), SuggestedOperation: r.str(), Tier: route.Tier(r.str()),
		CommandClass: r.str(), Mutation: r.bool()}
}

// readGate reads the gate's answer appendGate wrote; trailing bytes are
// an error.
func readGate(b []byte) (laneGate, error) {
	r := &reader{b: b}
	var g laneGate
	d := &g.Decision
	d.Outcome, d.Reason, d.RuleID = mediate.Outcome(r.str()), r.str(), r.str()
	d.Risk = int(r.int())
	d.Code, d.Tier = errs.Code(r.str()), route.Tier(r.str())
	d.Route = r.route()
	if n := r.count(); n >= 0 {
		d.RequireVerified = make([]policy.Requirement, n)
		for i := range d.RequireVerified {
			d.RequireVerified[i] = policy.Requirement{RuleID: r.str(), Stage: r.str()}
		}
	}
	g.InputHash = r.str()
	if r.err == nil && len(r.b) > 0 {
		r.err = errCodec
	}
	return g, r.err
}
