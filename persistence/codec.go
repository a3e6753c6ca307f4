package persistence

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Version is the envelope version this build writes and reads.
const Version = 1

// ErrUnknownVersion reports an envelope written by an unknown format version.
var ErrUnknownVersion = errors.New("persistence: unknown envelope version")

// ErrCorrupt reports a value that is not a valid envelope.
var ErrCorrupt = errors.New("persistence: corrupt value")

type envelope struct {
	V     int             `json:"v"`
	State json.RawMessage `json:"state"`
}

// Encode wraps v in the versioned envelope {"v":1,"state":...}.
func Encode(v any) ([]byte, error) {
	state, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("persistence: encode %T: %w", v, err)
	}
	return json.Marshal(envelope{V: Version, State: state})
}

// Decode unwraps an envelope into v. An unknown version returns
// ErrUnknownVersion and leaves v untouched.
func Decode(b []byte, v any) error {
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if env.V != Version {
		return fmt.Errorf("%w %d (this build reads %d)", ErrUnknownVersion, env.V, Version)
	}
	if len(env.State) == 0 {
		return fmt.Errorf("%w: no state", ErrCorrupt)
	}
	if err := json.Unmarshal(env.State, v); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}
