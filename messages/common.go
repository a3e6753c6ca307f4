package messages

// Failed answers any request that could not be served. It is the coded
// error as plain data: Code is one of contract/errs' stable codes, Message
// names the fix, Details holds small JSON-encodable facts.
type Failed struct {
	Code    string
	Message string
	Details map[string]any
}

func (f Failed) Error() string {
	if f.Code == "" && f.Message == "" {
		return "failed"
	}
	return f.Code + ": " + f.Message
}

// Ping asks an actor to answer Pong once every message sent before it has
// been handled: a mailbox barrier for tests and drains.
type Ping struct{}

// Pong answers Ping.
type Pong struct{}
