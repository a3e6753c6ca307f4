package op

import "encoding/json"

// CheckPlain reports whether args of o are plain (plainargs.go), against
// its input schema or, for step, its step schema.
func (o *Op) CheckPlain(args json.RawMessage, step bool) bool {
	if step && o.step != o.InputSchema {
		return o.stepPlain.accepts(normArgs(args))
	}
	return o.plain.accepts(normArgs(args))
}

// CheckFull is the check with the validator, whatever the arguments.
func (o *Op) CheckFull(args json.RawMessage, step bool) (json.RawMessage, bool, error) {
	if step {
		return o.checkFull(normArgs(args), o.step, o.stepResolved)
	}
	return o.checkFull(normArgs(args), o.InputSchema, o.resolved)
}
