package route

import (
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/classify"
)

// Mode is where an operation runs.
type Mode string

// The modes.
const (
	Fast    Mode = "fast"
	Durable Mode = "durable"
	Reject  Mode = "reject"
)

// Tier is the scope of work an operation represents.
type Tier string

// The tiers, as the seed defines them: small, scope-clear edits and
// reads are Direct (Fast Path writes under a lease included), work that
// goes with the Durable Path is BoundedWork, and only two or more
// independent deliverables make a Campaign.
const (
	Direct      Tier = "direct"
	BoundedWork Tier = "bounded_work"
	Campaign    Tier = "campaign"
)

// Class is the estimated duration class of an operation.
type Class string

// The estimated classes.
const (
	Short        Class = "short"
	Long         Class = "long"
	UnknownClass Class = "unknown"
)

// Fast Path limits, in milliseconds.
const (
	FastTimeoutMax     = 15_000
	FastTimeoutDefault = 10_000
)

// MaxBatchSteps is the largest batch Decide accepts.
const MaxBatchSteps = 20

// SuggestJobStart is the SuggestedOperation of durable decisions.
const SuggestJobStart = "job_start"

// SuggestGitPush is the SuggestedOperation of a git push in argv: the
// typed git_push does it, with the user's credential the job never holds.
const SuggestGitPush = "git_push"

// SuggestRunCheck is the SuggestedOperation of a test command sent to
// run_command: tests run the code under test, which is run_check's work
// (a focused test on the Fast Path, a whole suite as a durable check).
const SuggestRunCheck = "run_check"

// Decision is the router's ExecutionDecision.
type Decision struct {
	Mode               Mode     `json:"mode"`
	Reasons            []string `json:"reasons"`
	Risk               int      `json:"risk"` // 0-100
	EstimatedClass     Class    `json:"estimated_class"`
	RequiresIsolation  bool     `json:"requires_isolation"`
	RequiresRecovery   bool     `json:"requires_recovery"`
	SuggestedOperation string   `json:"suggested_operation,omitempty"` // when Mode is durable: "job_start", or "run_check" for a test command sent to run_command; "" otherwise
	Tier               Tier     `json:"tier"`
	CommandClass       string   `json:"command_class,omitempty"` // classify class for commands
	Mutation           bool     `json:"mutation"`
	// Effect states what destructive or remote work does (what it
	// removes, which remote it writes): such work runs only as a durable
	// job behind a person (internal/mediate asks), never on the Fast
	// Path or inside a check.
	Effect *classify.Effect `json:"effect,omitempty"`
}

// Request is an operation as the router sees it.
type Request struct {
	Tool string `json:"tool"`
	// Kind is the operation's route class, from its descriptor
	// (harness/op.Spec.Route): Decide routes by it, never by Tool, which
	// only names the operation in reasons. Unclassified is rejected.
	Kind         Kind     `json:"kind"`
	Argv         []string `json:"argv,omitempty"`
	TimeoutMs    int      `json:"timeout_ms,omitempty"`
	Writes       bool     `json:"writes,omitempty"`       // caller declares workspace writes (job_start)
	Background   bool     `json:"background,omitempty"`   // caller asks to run in the background
	Deliverables int      `json:"deliverables,omitempty"` // independent deliverables declared; >= 2 -> campaign tier
	// Confined says the Durable Path confines its commands with the kernel
	// (the sandbox's job profile): it then accepts shell scripts and
	// unclassified commands, which without it are rejected.
	Confined bool      `json:"confined,omitempty"`
	Steps    []Request `json:"steps,omitempty"` // batch: routed once, as a whole
}

// Err returns the coded error a caller that wanted the Fast Path reports:
// nil for fast, ROUTE_REJECTED for reject and ROUTE_DURABLE_REQUIRED for
// durable. The reasons go into the message and the "reasons" detail.
func (d Decision) Err() error {
	var code errs.Code
	switch d.Mode {
	case Fast:
		return nil
	case Reject:
		code = errs.RouteRejected
	default:
		code = errs.RouteDurableRequired
	}
	return errs.New(code, "%s", strings.Join(d.Reasons, "; ")).With("reasons", d.Reasons)
}

// Decide routes one request. It is a pure function: it runs and reads nothing.
func Decide(req Request) Decision {
	d := decide(req, false)
	if req.Deliverables >= 2 && d.Mode != Reject {
		d.Tier = Campaign
		d.Reasons = append(d.Reasons, strconv.Itoa(req.Deliverables)+" independent deliverables make this a campaign")
	}
	return d
}

func decide(req Request, inBatch bool) Decision {
	if req.Tool == "" {
		return reject(50, "unknown operation: the tool is empty")
	}
	switch req.Kind {
	case Readonly:
		return Decision{Mode: Fast, Reasons: []string{req.Tool + " is a readonly Fast Path operation"},
			Risk: 5, EstimatedClass: Short, Tier: Direct}
	case RunState:
		return Decision{Mode: Fast, Reasons: []string{req.Tool + " records run state; it touches no repository"},
			Risk: 0, EstimatedClass: Short, Tier: Direct}
	case Mutation, IndexMutation:
		risk := 30
		if req.Kind == IndexMutation {
			risk = 20
		}
		return Decision{Mode: Fast, Reasons: []string{req.Tool + " is a Fast Path mutation under a lease"},
			Risk: risk, EstimatedClass: Short, Tier: Direct, Mutation: true}
	case Signal:
		return Decision{Mode: Fast, Reasons: []string{req.Tool + " signals a durable job"},
			Risk: 20, EstimatedClass: Short, Tier: Direct}
	case Registry:
		return Decision{Mode: Fast, Reasons: []string{req.Tool + " is a Fast Path registry operation"},
			Risk: 10, EstimatedClass: Short, Tier: Direct}
	case Command:
		return decideCommand(req)
	case Check:
		return decideCheck(req)
	case Job:
		return decideJob(req)
	case RemoteWrite:
		return Decision{Mode: Durable, SuggestedOperation: req.Tool, Reasons: []string{req.Tool + " writes a remote: harnessd performs it itself, recorded, behind a person's approval"},
			Risk: 85, EstimatedClass: UnknownClass, Tier: BoundedWork, RequiresRecovery: true, Mutation: true}
	case Batch:
		if inBatch {
			return reject(50, "a batch cannot contain a batch")
		}
		return decideBatch(req)
	}
	return reject(50, "unknown operation "+strconv.Quote(req.Tool))
}

func reject(risk int, reasons ...string) Decision {
	return Decision{Mode: Reject, Reasons: reasons, Risk: risk, EstimatedClass: UnknownClass, Tier: Direct}
}

var classRisk = map[classify.Class]int{
	classify.Readonly:       10,
	classify.WorkspaceWrite: 50,
	classify.Unknown:        60,
	classify.Remote:         75,
	classify.Shell:          80,
	classify.Destructive:    95,
}

// confinedShellRisk is the risk of a shell script on a confined Durable
// Path: the kernel, not the classifier, bounds what it can do.
const confinedShellRisk = 60

// vetCommand classifies argv and returns a rejection for commands that must
// never run (ok false), or the classification. A destructive or remote
// command is rejected unless the classifier states its effect exactly
// (classify.Effect: named paths inside the checkout, a remote write the
// command names, a git push); a shell script only when the Durable Path is
// not confined (the Fast Path never runs one: it is not proven read-only).
func vetCommand(tool string, argv []string, confined bool) (classify.Result, Decision, bool) {
	if len(argv) == 0 {
		return classify.Result{}, reject(50, tool+" needs a command: argv is empty"), false
	}
	r := classify.Argv(argv)
	why := strings.Join(r.Reasons, "; ")
	var d Decision
	switch r.Class {
	case classify.Destructive, classify.Remote:
		if r.Effect != nil {
			return r, Decision{}, true
		}
		what := "destructive"
		if r.Class == classify.Remote {
			what = "remote"
		}
		d = reject(classRisk[r.Class], what+" command rejected: "+why)
	case classify.Shell:
		if confined {
			return r, Decision{}, true
		}
		d = reject(classRisk[r.Class], "shell script cannot be proven safe: "+why)
	default:
		return r, Decision{}, true
	}
	d.CommandClass = r.Class.String()
	d.Mutation = true
	return r, d, false
}

// behindPerson is the durable decision for destructive or remote work whose
// effect is stated: a job_start (a git push: git_push) a person approves.
func behindPerson(r classify.Result) Decision {
	d := Decision{Mode: Durable, SuggestedOperation: SuggestJobStart, Risk: classRisk[r.Class], EstimatedClass: UnknownClass,
		Tier: BoundedWork, RequiresRecovery: true, Mutation: true, CommandClass: r.Class.String(), Effect: r.Effect}
	switch r.Effect.Kind {
	case classify.GitPush:
		d.SuggestedOperation = SuggestGitPush
		d.Reasons = []string{"a git push runs as git_push {remote, refspec, force}, behind a person's approval, with a credential the job never holds: " + r.Effect.Describe()}
	case classify.RemoteWrite:
		d.Reasons = []string{"a remote write runs as a durable job behind a person's approval, with the network for that job only: " + r.Effect.Describe()}
	default:
		d.Reasons = []string{"destructive work runs as a durable job behind a person's approval: " + r.Effect.Describe()}
	}
	d.Reasons = append(d.Reasons, r.Reasons...)
	return d
}

func timeoutReason(ms int) string {
	return "timeout " + strconv.Itoa(ms) + " ms is above the Fast Path maximum of 15 s"
}

// risk is the routing risk of a command class.
func risk(c classify.Class, confined bool) int {
	if c == classify.Shell && confined {
		return confinedShellRisk
	}
	return classRisk[c]
}

func decideCommand(req Request) Decision {
	if req.TimeoutMs < 0 {
		return reject(50, "timeout_ms must not be negative")
	}
	r, rej, ok := vetCommand(req.Tool, req.Argv, req.Confined)
	if !ok {
		return rej
	}
	if r.Effect != nil {
		return behindPerson(r)
	}
	d := Decision{CommandClass: r.Class.String(), Risk: risk(r.Class, req.Confined), Tier: BoundedWork,
		Reasons: append([]string(nil), r.Reasons...)}
	if r.Class != classify.Readonly {
		d.Mode, d.SuggestedOperation = Durable, SuggestJobStart
		d.EstimatedClass = UnknownClass
		d.RequiresRecovery, d.Mutation = true, true
		d.Reasons = append([]string{r.Class.String() + " command runs as a durable job"}, d.Reasons...)
		if classify.IsTest(req.Argv) {
			d.SuggestedOperation = SuggestRunCheck
			d.Reasons[0] = "tests run the code under test: run them with run_check (a focused test on the Fast Path, a whole suite as a durable check)"
		}
		return d
	}
	switch {
	case req.TimeoutMs > FastTimeoutMax:
		d.Mode, d.SuggestedOperation, d.EstimatedClass = Durable, SuggestJobStart, Long
		d.Risk = 15
		d.Reasons = append([]string{timeoutReason(req.TimeoutMs)}, d.Reasons...)
	case req.Background:
		d.Mode, d.SuggestedOperation, d.EstimatedClass = Durable, SuggestJobStart, UnknownClass
		d.Reasons = append([]string{"background execution runs as a durable job"}, d.Reasons...)
	default:
		d.Mode, d.EstimatedClass, d.Tier = Fast, Short, Direct
	}
	return d
}

func decideCheck(req Request) Decision {
	if req.TimeoutMs < 0 {
		return reject(50, "timeout_ms must not be negative")
	}
	r, rej, ok := vetCommand(req.Tool, req.Argv, false)
	if !ok {
		return rej
	}
	if r.Effect != nil {
		return behindPerson(r) // not a check: a job a person approves
	}
	focused, why := classify.Focus(req.Argv)
	d := Decision{CommandClass: r.Class.String(), Tier: BoundedWork, Reasons: []string{why}}
	switch {
	case !focused:
		d.Mode, d.SuggestedOperation, d.EstimatedClass, d.Risk = Durable, SuggestJobStart, Long, 30
		d.RequiresRecovery = true
		d.Reasons = append([]string{"unfocused check runs as a durable job"}, d.Reasons...)
	case req.TimeoutMs > FastTimeoutMax:
		d.Mode, d.SuggestedOperation, d.EstimatedClass, d.Risk = Durable, SuggestJobStart, Long, 30
		d.RequiresRecovery = true
		d.Reasons = append([]string{timeoutReason(req.TimeoutMs)}, d.Reasons...)
	case req.Background:
		d.Mode, d.SuggestedOperation, d.EstimatedClass, d.Risk = Durable, SuggestJobStart, UnknownClass, 30
		d.RequiresRecovery = true
		d.Reasons = append([]string{"background execution runs as a durable job"}, d.Reasons...)
	default:
		d.Mode, d.EstimatedClass, d.Risk = Fast, Short, 20
	}
	return d
}

func decideJob(req Request) Decision {
	r, rej, ok := vetCommand(req.Tool, req.Argv, req.Confined)
	if !ok {
		return rej
	}
	if r.Effect != nil {
		d := behindPerson(r)
		d.EstimatedClass, d.RequiresIsolation = Long, req.Writes
		d.Reasons = append([]string{"job_start runs a durable job"}, d.Reasons...)
		return d
	}
	d := Decision{Mode: Durable, SuggestedOperation: SuggestJobStart, Risk: 40, EstimatedClass: Long,
		Tier: BoundedWork, RequiresRecovery: true, RequiresIsolation: req.Writes,
		CommandClass: r.Class.String(), Mutation: req.Writes || r.Class != classify.Readonly,
		Reasons: []string{"job_start runs a durable job"}}
	if req.Writes {
		d.Risk = 50
		d.Reasons = append(d.Reasons, "declared workspace writes run in isolation")
	}
	if cr := risk(r.Class, req.Confined); cr > d.Risk {
		d.Risk = cr
	}
	if req.Confined && r.Class == classify.Shell {
		d.Reasons = append(d.Reasons, "the shell script runs confined by the sandbox's job profile")
	}
	d.Reasons = append(d.Reasons, r.Reasons...)
	return d
}

// StepLabel names step i (0-based: the index of the step in the request's
// steps, as an error's details.step and a result's index) of a batch in a
// reason or a message: "step 1 (run_command)" is the second step.
func StepLabel(i int, tool string) string {
	return "step " + strconv.Itoa(i) + " (" + tool + ")"
}

func decideBatch(req Request) Decision {
	switch {
	case len(req.Steps) == 0:
		return reject(50, "batch has no steps")
	case len(req.Steps) > MaxBatchSteps:
		return reject(50, "batch has "+strconv.Itoa(len(req.Steps))+" steps, more than the maximum of "+strconv.Itoa(MaxBatchSteps))
	}
	d := Decision{Mode: Fast, Tier: BoundedWork, EstimatedClass: Short}
	var durable []string
	for i, s := range req.Steps {
		sd := decide(s, true)
		label := StepLabel(i, s.Tool) + ": "
		if sd.Mode == Reject {
			r := reject(sd.Risk, label+strings.Join(sd.Reasons, "; "))
			r.Tier, r.CommandClass, r.Mutation = BoundedWork, sd.CommandClass, sd.Mutation
			return r
		}
		if sd.Mode == Durable {
			d.Mode = Durable
			durable = append(durable, label+strings.Join(sd.Reasons, "; "))
		}
		d.Risk = max(d.Risk, sd.Risk)
		d.Mutation = d.Mutation || sd.Mutation
		d.RequiresIsolation = d.RequiresIsolation || sd.RequiresIsolation
		d.RequiresRecovery = d.RequiresRecovery || sd.RequiresRecovery
		switch {
		case sd.EstimatedClass == Long:
			d.EstimatedClass = Long
		case sd.EstimatedClass == UnknownClass && d.EstimatedClass == Short:
			d.EstimatedClass = UnknownClass
		}
	}
	if d.Mode == Durable {
		d.SuggestedOperation = SuggestJobStart
		d.Reasons = durable
	} else {
		d.Reasons = []string{"all " + strconv.Itoa(len(req.Steps)) + " steps run on the Fast Path"}
	}
	return d
}
