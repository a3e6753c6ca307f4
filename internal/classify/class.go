package classify

import (
	"strconv"

	"github.com/harnessd/harnessd/contract/errs"
)

// Class is the kind of effect a command has.
type Class int

// The classes, in declaration order (not severity order: see [Class.Severity]).
const (
	Readonly Class = iota
	WorkspaceWrite
	Remote
	Destructive
	Shell
	Unknown
)

var classNames = [...]string{
	Readonly:       "readonly",
	WorkspaceWrite: "workspace_write",
	Remote:         "remote",
	Destructive:    "destructive",
	Shell:          "shell",
	Unknown:        "unknown",
}

// String returns the stable name of c, or "unknown(N)" for an invalid class.
func (c Class) String() string {
	if c.Valid() {
		return classNames[c]
	}
	return "unknown(" + strconv.Itoa(int(c)) + ")"
}

// Valid reports whether c is one of the declared classes.
func (c Class) Valid() bool { return c >= Readonly && c <= Unknown }

// ParseClass returns the class named s (as produced by [Class.String]).
func ParseClass(s string) (Class, error) {
	for c, n := range classNames {
		if n == s {
			return Class(c), nil
		}
	}
	return Unknown, errs.New(errs.InvalidArgument, "unknown command class %q", s)
}

// MarshalText encodes c as its name. Invalid classes are an error.
func (c Class) MarshalText() ([]byte, error) {
	if !c.Valid() {
		return nil, errs.New(errs.Internal, "invalid command class %d", int(c))
	}
	return []byte(classNames[c]), nil
}

// MarshalJSON encodes c as a JSON string.
func (c Class) MarshalJSON() ([]byte, error) {
	t, err := c.MarshalText()
	if err != nil {
		return nil, err
	}
	return []byte(strconv.Quote(string(t))), nil
}

// UnmarshalText decodes a class name.
func (c *Class) UnmarshalText(b []byte) error {
	v, err := ParseClass(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Severity orders classes from harmless to most dangerous:
// readonly 0 < workspace_write 1 < unknown 2 < shell 3 < remote 4 < destructive 5.
// Invalid classes rank as shell: they cannot be proven safe.
func (c Class) Severity() int {
	switch c {
	case Readonly:
		return 0
	case WorkspaceWrite:
		return 1
	case Unknown:
		return 2
	case Remote:
		return 4
	case Destructive:
		return 5
	default:
		return 3
	}
}

// Worse returns the more severe of a and b (a when they are equal).
func Worse(a, b Class) Class {
	if b.Severity() > a.Severity() {
		return b
	}
	return a
}

// Result is the classification of one command or script.
type Result struct {
	Class   Class    `json:"class"`
	Program string   `json:"program"` // base name of argv[0]; for scripts, the program that decided the class
	Reasons []string `json:"reasons"` // why the command has its class, most relevant first
	Network bool     `json:"network"` // the command talks to the network
	// Effect states what a destructive or remote command does when the
	// classifier can name it exactly (a person may approve it as a
	// durable job); nil otherwise, and such a command is never run.
	Effect *Effect `json:"effect,omitempty"`
}

// maxReasons bounds the reasons a script can accumulate.
const maxReasons = 16

func result(c Class, reason string) Result {
	return Result{Class: c, Reasons: []string{reason}}
}

func remote(reason string) Result {
	return Result{Class: Remote, Reasons: []string{reason}, Network: true}
}

// raise makes r at least as severe as c. A more severe class replaces the
// reasons, an equally severe one adds to them, a milder one is ignored.
func (r *Result) raise(c Class, reason string) {
	switch s, cur := c.Severity(), r.Class.Severity(); {
	case s > cur:
		r.Class = c
		r.Reasons = []string{reason}
		r.Effect = nil
	case s == cur:
		r.addReason(reason)
		r.Effect = nil // a part whose effect is not stated: the whole is not
	}
}

// merge folds o into r with the same rules as raise; Network is or-ed.
func (r *Result) merge(o Result) {
	r.Network = r.Network || o.Network
	switch s, cur := o.Class.Severity(), r.Class.Severity(); {
	case s > cur:
		r.Class = o.Class
		r.Program = o.Program
		r.Reasons = append([]string(nil), o.Reasons...)
		r.Effect = o.Effect
	case s == cur:
		r.Effect = joinEffects(r.Effect, o.Effect)
		if r.Program == "" {
			r.Program = o.Program
		}
		for _, m := range o.Reasons {
			r.addReason(m)
		}
	}
}

func (r *Result) addReason(m string) {
	if len(r.Reasons) >= maxReasons {
		return
	}
	for _, x := range r.Reasons {
		if x == m {
			return
		}
	}
	r.Reasons = append(r.Reasons, m)
}

// joinEffects is the effect of two parts of the same severity: both
// stated and of one kind, or none (a part whose effect is not stated makes
// the whole unstated).
func joinEffects(a, b *Effect) *Effect {
	if a == nil || b == nil || a.Kind != b.Kind || a.Kind != WorkspaceDelete {
		return nil
	}
	return &Effect{Kind: WorkspaceDelete, Removes: append(append([]string(nil), a.Removes...), b.Removes...)}
}
