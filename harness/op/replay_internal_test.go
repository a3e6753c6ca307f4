package op

import (
	"context"
	"reflect"
	"testing"
)

// The operations a retry is replayed for before they prepare: a write
// with a request_id whose result carries its receipt and a replayed flag
// (what the write stores as its ledger result).
func TestReplayable(t *testing.T) {
	type withID struct {
		RequestID string `json:"request_id,omitempty"`
	}
	type noID struct {
		Path string `json:"path"`
	}
	type jobResult struct {
		JobID    string `json:"job_id"`
		Replayed bool   `json:"replayed"`
	}
	type executeResult struct {
		Receipt  *Receipt `json:"receipt,omitempty"`
		Replayed bool     `json:"replayed"`
	}
	type noFlag struct {
		Receipt
	}
	def := func(name string, readOnly bool, in, out any) Op {
		prep := func(context.Context, *Call, struct{}) (*Plan, error) { return &Plan{}, nil }
		o := Def(Spec[struct{}]{Name: name, ReadOnly: readOnly, Output: out, Prepare: prep})
		if in != nil {
			o.inType = reflect.TypeOf(in)
		}
		return o
	}
	cases := []struct {
		name    string
		op      Op
		replays bool
	}{
		{"a write's MutationResult", def("w", false, withID{}, MutationResult{}), true},
		{"a receipt behind a pointer", def("x", false, withID{}, executeResult{}), true},
		{"job_start's result names its job only", def("j", false, withID{}, jobResult{}), false},
		{"no request_id", def("n", false, noID{}, MutationResult{}), false},
		{"no replayed flag", def("f", false, withID{}, noFlag{}), false},
		{"a read", def("r", true, withID{}, MutationResult{}), false},
		{"no output", def("o", false, withID{}, nil), false},
	}
	for _, c := range cases {
		if got := replayable(&c.op); got != c.replays {
			t.Errorf("%s: replayable %v, want %v", c.name, got, c.replays)
		}
	}
}
