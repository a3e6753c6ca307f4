package op

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/policy"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/messages"
)

type peekArgs struct {
	RepoID string `json:"repo_id"`
	Path   string `json:"path"`
}

type peekResult struct {
	Meta
	Path    string `json:"path"`
	Root    string `json:"root"`
	Outcome string `json:"outcome"`
}

type fanArgs struct {
	RepoID string   `json:"repo_id"`
	Paths  []string `json:"paths"`
}

type fanResult struct {
	Meta
	Handed []messages.LaneRun `json:"-"`
}

// laneRig is a pipeline with a repository-bound read (peek) and a
// composite (fan) that prepares one peek step per path and, once the gate
// passed them all, hands each out as a lane would get it. ran counts the
// peeks that ran; root is what the registry answers for repo "r1".
type laneRig struct {
	p        *Pipeline
	ran      atomic.Int32
	root     atomic.Value // string
	observed []govern.Decision
}

func newLaneRig(t *testing.T) *laneRig {
	t.Helper()
	rig := &laneRig{}
	rig.root.Store(t.TempDir())
	ops := []Op{
		Def(Spec[peekArgs]{Name: "peek", Output: peekResult{}, ReadOnly: true,
			Repo: func(a peekArgs) string { return a.RepoID },
			Prepare: func(_ context.Context, c *Call, in peekArgs) (*Plan, error) {
				return &Plan{Gate: govern.Input{Paths: []string{in.Path}, Route: fastRoute("peek")},
					Run: func(context.Context) (any, error) {
						rig.ran.Add(1)
						return &peekResult{Path: in.Path, Root: c.Root.Path(), Outcome: string(c.Gated().Decision.Outcome)}, nil
					}}, nil
			}}),
		Def(Spec[fanArgs]{Name: "fan", Output: fanResult{}, ReadOnly: true,
			Repo: func(a fanArgs) string { return a.RepoID },
			Prepare: func(ctx context.Context, c *Call, in fanArgs) (*Plan, error) {
				var steps []*Step
				for i, path := range in.Paths {
					raw, _ := json.Marshal(peekArgs{RepoID: in.RepoID, Path: path})
					s, err := c.Pipeline().PrepareStep(ctx, c, i, "peek", raw)
					if err != nil {
						return nil, err
					}
					steps = append(steps, s)
				}
				return &Plan{Gate: govern.Input{Route: fastRoute("fan")}, Steps: steps,
					Run: func(context.Context) (any, error) {
						out := &fanResult{}
						for _, s := range steps {
							m, err := c.Pipeline().LaneStep(c, "g1", s, time.Time{})
							if err != nil {
								return nil, err
							}
							out.Handed = append(out.Handed, m)
						}
						return out, nil
					}}, nil
			}}),
	}
	gov, err := govern.New(govern.Config{Audit: &runtime.FakeAudit{}, LoopThreshold: -1,
		Observe: func(d govern.Decision) { rig.observed = append(rig.observed, d) }})
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Gov: gov, Lookup: func(id string) (runtime.RepoEntry, bool) {
		if id != "r1" {
			return runtime.RepoEntry{}, false
		}
		return runtime.RepoEntry{Repo: messages.Repository{ID: id, Root: rig.root.Load().(string)}}, true
	}}
	rig.p = NewPipeline(NewRegistry(ops), env)
	return rig
}

// hand runs fan over paths and returns the lane steps it handed out.
func (rig *laneRig) hand(t *testing.T, paths ...string) []messages.LaneRun {
	t.Helper()
	raw, _ := json.Marshal(fanArgs{RepoID: "r1", Paths: paths})
	out, err := rig.p.Call(context.Background(), "fan", raw)
	if err != nil {
		t.Fatal(err)
	}
	return out.(*fanResult).Handed
}

// A step handed to a lane is data; run from it, it does what the gate
// passed, with the gate's answer, and never crosses the gate again.
func TestLaneStepRunsWhatTheGatePassed(t *testing.T) {
	rig := newLaneRig(t)
	handed := rig.hand(t, "a.txt", "b.txt")
	if got := len(rig.observed); got != 3 {
		t.Fatalf("gate decided %d times, want 3 (fan and its two steps)", got)
	}
	if rig.ran.Load() != 0 {
		t.Fatal("a step ran before a lane ran it")
	}
	for i, m := range handed {
		if m.Index != i || m.Kind != "peek" || m.RepoID != "r1" || m.Group != "g1" || len(m.Seal) == 0 || m.GateDigest == "" {
			t.Fatalf("handed %d = %+v", i, m)
		}
		b, err := rig.p.RunLaneStep(context.Background(), m)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var r peekResult
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if want := []string{"a.txt", "b.txt"}[i]; r.Path != want || r.Outcome != "allow" || r.Root != rig.root.Load().(string) || r.Route != "fast" {
			t.Fatalf("step %d result = %+v, want %s allowed in the root", i, r, want)
		}
	}
	if got := len(rig.observed); got != 3 {
		t.Fatalf("gate decided %d times after the lanes ran, want still 3", got)
	}
}

// A message the gate did not pass as it is runs nothing: made up, changed
// on its way, or sealed by another pipeline.
func TestLaneStepRefusesWhatTheGateDidNotPass(t *testing.T) {
	rig := newLaneRig(t)
	m := rig.hand(t, "a.txt")[0]
	other := newLaneRig(t)
	otherM := other.hand(t, "a.txt")[0]
	tests := []struct {
		name string
		edit func(m *messages.LaneRun)
	}{
		{"made up", func(m *messages.LaneRun) {
			*m = messages.LaneRun{Group: "g1", Kind: "peek", RepoID: "r1", Args: m.Args}
		}},
		{"other args", func(m *messages.LaneRun) { m.Args = json.RawMessage(`{"repo_id":"r1","path":".env"}`) }},
		{"other kind", func(m *messages.LaneRun) { m.Kind = "fan" }},
		{"other index", func(m *messages.LaneRun) { m.Index = 1 }},
		{"other gate answer", func(m *messages.LaneRun) { m.Gate = json.RawMessage(`{"decision":{"outcome":"allow","risk":0}}`) }},
		{"other digest", func(m *messages.LaneRun) { m.GateDigest = otherM.GateDigest + "0" }},
		{"other deadline", func(m *messages.LaneRun) { m.Deadline = time.Now().Add(time.Hour) }},
		{"another pipeline's seal", func(m *messages.LaneRun) { m.Seal = otherM.Seal }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := m
			bad.Args = append(json.RawMessage(nil), m.Args...)
			tt.edit(&bad)
			_, err := rig.p.RunLaneStep(context.Background(), bad)
			if errs.CodeOf(err) != errs.PolicyDenied {
				t.Fatalf("err = %v, want POLICY_DENIED", err)
			}
			if rig.ran.Load() != 0 {
				t.Fatal("the step ran")
			}
		})
	}
	if _, err := other.p.RunLaneStep(context.Background(), otherM); err != nil {
		t.Fatalf("the other pipeline's own step: %v", err)
	}
}

// A step whose repository moved between the gate and its lane answers
// POLICY_DENIED: the gate decided on another root.
func TestLaneStepRefusesAStepThatChangedSinceTheGate(t *testing.T) {
	rig := newLaneRig(t)
	m := rig.hand(t, "a.txt")[0]
	rig.root.Store(t.TempDir())
	_, err := rig.p.RunLaneStep(context.Background(), m)
	if errs.CodeOf(err) != errs.PolicyDenied || rig.ran.Load() != 0 {
		t.Fatalf("err = %v, ran %d: want POLICY_DENIED and nothing run", err, rig.ran.Load())
	}
}

// A closed pipeline runs no lane step.
func TestLaneStepAfterClose(t *testing.T) {
	rig := newLaneRig(t)
	m := rig.hand(t, "a.txt")[0]
	rig.p.Close(context.Background())
	if _, err := rig.p.RunLaneStep(context.Background(), m); errs.CodeOf(err) != errs.Unavailable || rig.ran.Load() != 0 {
		t.Fatalf("err = %v: want UNAVAILABLE and nothing run", err)
	}
}

// The seal covers every field of a LaneRun: a field added to the message
// and left out of sealLane fails here.
func TestLaneSealCoversEveryField(t *testing.T) {
	p := NewPipeline(NewRegistry(nil), &Env{})
	m := messages.LaneRun{Group: "g", Index: 1, Kind: "read_file", RepoID: "r", Args: json.RawMessage(`{}`), Deadline: time.Unix(100, 0),
		Caller: messages.Caller{RunID: "run", Session: "s", Client: messages.Client{Name: "c", Version: "1"}}, ParentSpan: "sp",
		Gate: json.RawMessage(`{}`), GateDigest: "d"}
	base := p.lanes.seal(m)
	n := 0
	eachLeaf(t, reflect.ValueOf(&m).Elem(), "LaneRun", func(path string, mutate func() func()) {
		if path == "LaneRun.Seal" {
			return
		}
		n++
		undo := mutate()
		if reflect.DeepEqual(p.lanes.seal(m), base) {
			t.Errorf("changing %s leaves the seal as it was: sealLane must write it", path)
		}
		undo()
	})
	if n < 12 || !reflect.DeepEqual(p.lanes.seal(m), base) {
		t.Fatalf("walked %d fields, or the mutations were not undone", n)
	}
}

// The gate digest covers every field of govern.Input: a field added to the
// gate's input and left out of gateDigest fails here.
func TestGateDigestCoversEveryInputField(t *testing.T) {
	root, err := pathsafe.NewRoot(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := govern.Input{Tool: "t", Repo: &messages.Repository{ID: "r", Root: "/r"}, Root: root, Argv: []string{"a"}, Paths: []string{"p"},
		TimeoutMs: 1, Args: map[string]any{"k": "v"}, ApprovalID: "ap", TreeRevision: "rev", Route: &route.Decision{Mode: route.Fast},
		Steps: []govern.Input{{Tool: "s"}}, Caller: messages.Caller{RunID: "run"}, RequireVerified: []string{"st"}, Grant: "g"}
	base, err := gateDigest(in)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pathsafe.NewRoot(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(&in).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		old := reflect.New(f.Type()).Elem()
		old.Set(f)
		switch name {
		case "Repo":
			f.Set(reflect.ValueOf(&messages.Repository{ID: "r2", Root: "/r"}))
		case "Root":
			f.Set(reflect.ValueOf(other))
		case "Args":
			f.Set(reflect.ValueOf(any(map[string]any{"k": "w"})))
		case "Route":
			f.Set(reflect.ValueOf(&route.Decision{Mode: route.Durable}))
		case "Steps":
			f.Set(reflect.ValueOf([]govern.Input{{Tool: "s2"}}))
		case "Caller":
			f.Set(reflect.ValueOf(messages.Caller{RunID: "run2"}))
		default:
			if !mutateLeaf(f) {
				t.Errorf("govern.Input.%s (%s): teach this test and gateDigest about it", name, f.Type())
				continue
			}
		}
		got, err := gateDigest(in)
		if err != nil {
			t.Fatal(err)
		}
		if got == base {
			t.Errorf("changing govern.Input.%s leaves the gate digest as it was: gateDigest must cover it", name)
		}
		f.Set(old)
	}
	if got, _ := gateDigest(in); got != base {
		t.Fatal("the mutations were not undone")
	}
}

// eachLeaf calls visit for every leaf field under v (structs are walked),
// with a function that changes the field and returns its undo.
func eachLeaf(t *testing.T, v reflect.Value, path string, visit func(path string, mutate func() func())) {
	t.Helper()
	if v.Kind() == reflect.Struct && v.Type() != reflect.TypeOf(time.Time{}) {
		for i := range v.NumField() {
			eachLeaf(t, v.Field(i), path+"."+v.Type().Field(i).Name, visit)
		}
		return
	}
	visit(path, func() func() {
		old := reflect.New(v.Type()).Elem()
		old.Set(v)
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Nanosecond)))
		} else if !mutateLeaf(v) {
			t.Fatalf("%s (%s): teach this test how to change it", path, v.Type())
		}
		return func() { v.Set(old) }
	})
}

// mutateLeaf changes a string, number, bool, or slice of strings or bytes
// in place; it reports false for other kinds.
func mutateLeaf(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint8: // an enum (route.Kind)
		v.SetUint(v.Uint() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice:
		switch v.Type().Elem().Kind() {
		case reflect.String:
			v.Set(reflect.Append(v, reflect.ValueOf("x").Convert(v.Type().Elem())))
		case reflect.Uint8:
			v.SetBytes(append(append([]byte(nil), v.Bytes()...), ' '))
		default:
			return false
		}
	default:
		return false
	}
	return true
}

// The gate's answer survives its trip to the lane whole: every field of
// the decision, filled in by reflection (a field added to mediate.Decision
// and left out of appendGate and readGate fails here), a zero one, and
// empty lists apart from none.
func TestLaneGateRoundTrips(t *testing.T) {
	var full laneGate
	fill(reflect.ValueOf(&full).Elem(), 1)
	for _, g := range []laneGate{full, {}, {Decision: mediate.Decision{Route: route.Decision{Reasons: []string{}}, RequireVerified: []policy.Requirement{}}}} {
		b := appendGate(nil, g)
		back, err := readGate(b)
		if err != nil || !reflect.DeepEqual(back, g) {
			t.Fatalf("round trip of %+v = %+v (err %v)", g, back, err)
		}
		// Every shorter form, and a longer one, is refused, never read as
		// something else.
		for n := range len(b) {
			if cut, err := readGate(b[:n]); err == nil {
				t.Fatalf("%d of %d bytes read as %+v", n, len(b), cut)
			}
		}
		if _, err := readGate(append(b, 0)); err == nil {
			t.Fatal("a trailing byte was accepted")
		}
	}
	// A length larger than what follows is refused before anything is made.
	r := &reader{b: []byte{0xff, 0xff, 0xff, 0xff, 0x0f}}
	if v := r.strs(); v != nil || r.err == nil {
		t.Fatalf("a 4 GiB list length was accepted: %d strings", len(v))
	}
}

// fill sets every field under v to a value that is not zero.
func fill(v reflect.Value, seed int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("v" + strconv.Itoa(seed))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(seed))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(seed))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), seed*10+i)
		}
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), seed*10+i)
		}
	}
}
