package route

// Kind is an operation's route class: how Decide routes it. Every
// operation's descriptor names its kind (harness/op.Spec.Route); the
// router never decides by an operation's name, so a new operation routes
// as its descriptor says or, without one, is rejected as unknown.
type Kind uint8

// The route classes.
const (
	// Unclassified is the zero Kind: the operation declares no class and
	// Decide rejects it as an unknown operation.
	Unclassified Kind = iota
	// Readonly runs on the Fast Path and changes nothing (risk 5).
	Readonly
	// RunState records run state and touches no repository (risk 0).
	RunState
	// Mutation is a Fast Path mutation under a lease (risk 30).
	Mutation
	// IndexMutation is a Fast Path mutation of the git index only, under a
	// lease (risk 20).
	IndexMutation
	// Signal signals a durable job (risk 20).
	Signal
	// Registry records a grant in a registry and touches no file (risk 10).
	Registry
	// Command runs a command, routed by its argv, timeout and background
	// flag (run_command).
	Command
	// Check runs a check, routed by its focus and timeout (run_check).
	Check
	// Job starts a durable job, routed by its argv and declared writes
	// (job_start).
	Job
	// Batch routes its steps as one (batch).
	Batch
	// RemoteWrite writes a remote harnessd performs itself (git_push): it
	// is its own durable path, and always needs a person (risk 85).
	RemoteWrite
	numKinds
)

var kindNames = [numKinds]string{
	Unclassified:  "unclassified",
	Readonly:      "readonly",
	RunState:      "run_state",
	Mutation:      "mutation",
	IndexMutation: "index_mutation",
	Signal:        "signal",
	Registry:      "registry",
	Command:       "command",
	Check:         "check",
	Job:           "job",
	Batch:         "batch",
	RemoteWrite:   "remote_write",
}

// String names the kind; a value outside the enum is "unknown".
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "unknown"
}

// Valid reports whether k is one of the classes (not Unclassified).
func (k Kind) Valid() bool { return k > Unclassified && k < numKinds }

// MarshalText writes the kind's name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Kinds returns every class, Unclassified excluded, in declaration order.
func Kinds() []Kind {
	out := make([]Kind, 0, numKinds-1)
	for k := Readonly; k < numKinds; k++ {
		out = append(out, k)
	}
	return out
}
