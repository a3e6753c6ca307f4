package messages

// Failed answers any request that could not be served. Err is usually an
// *errs.Error from the harness/errs package.
type Failed struct{ Err error }

func (f Failed) Error() string {
	if f.Err == nil {
		return "failed"
	}
	return f.Err.Error()
}

// Ping asks an actor to answer Pong once every message sent before it has
// been handled: a mailbox barrier for tests and drains.
type Ping struct{}

// Pong answers Ping.
type Pong struct{}
