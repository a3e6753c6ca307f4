package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	repb "github.com/bazelbuild/remote-apis/build/bazel/remote/execution/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/harnessd/harnessd/contract/errs"
)

// Outcome is what a check run yields, as the fleet records it (the
// daemon converts its own check outcome to and from it).
type Outcome struct {
	ExitCode   int       `json:"exit_code"`
	Passed     bool      `json:"passed"`
	TimedOut   bool      `json:"timed_out"`
	Cancelled  bool      `json:"cancelled"`
	Stdout     string    `json:"stdout"`
	Stderr     string    `json:"stderr"`
	Summary    []string  `json:"summary,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Path       string    `json:"path"`             // "fast" or "durable"
	RepoID     string    `json:"repo_id"`          // the node-local checkout it ran in
	JobID      string    `json:"job_id,omitempty"` // its durable job, if any
}

// Claim is the run a node won: its token (the claim key's create
// revision), its run id, and the node.
type Claim struct {
	Identity string `json:"identity"`
	Token    int64  `json:"token"`
	RunID    string `json:"run_id"`
	Node     string `json:"node"`
	Epoch    int64  `json:"epoch"`
}

// RunFunc runs a check this node claimed; ctx ends when the caller gives
// up. The session's end does not stop it: its result is fenced where it
// is recorded (its claim's token).
type RunFunc func(ctx context.Context, claim Claim) (Outcome, error)

// Result answers SingleFlight.
type Result struct {
	Outcome Outcome  `json:"outcome"`
	Source  string   `json:"source"` // SourceRan, SourceJoined or SourceReused
	RunID   string   `json:"run_id"`
	Node    string   `json:"node"`  // the node that ran it
	Token   int64    `json:"token"` // the run's claim token
	Refused []string `json:"refused,omitempty"`
}

// The sources of a Result.
const (
	SourceRan    = "ran"
	SourceJoined = "joined"
	SourceReused = "reused"
)

// Digest is a REAPI content digest: the lowercase hex sha256 of a blob
// and its size.
type Digest struct {
	Hash string `json:"hash"`
	Size int64  `json:"size_bytes"`
}

// DigestOf answers the sha256 digest of b.
func DigestOf(b []byte) Digest {
	s := sha256.Sum256(b)
	return Digest{Hash: hex.EncodeToString(s[:]), Size: int64(len(b))}
}

// String is "sha256:<hex>/<size>".
func (d Digest) String() string { return "sha256:" + d.Hash + "/" + itoa(d.Size) }

func (d Digest) valid() error {
	if !isHex64(d.Hash) || d.Size < 0 {
		return errs.New(errs.InvalidArgument, "fleet: digest %s/%d is not a sha256 hex and a size", d.Hash, d.Size)
	}
	return nil
}

// verify answers nil iff b has digest d.
func (d Digest) verify(b []byte) bool {
	return int64(len(b)) == d.Size && DigestOf(b).Hash == d.Hash
}

// ActionDigest is the action-cache key of a check identity
// ("sha256:<hex>"): the identity's hex and the length of the identity.
func ActionDigest(identity string) (Digest, error) {
	h, err := ValidIdentity(identity)
	if err != nil {
		return Digest{}, err
	}
	return Digest{Hash: h, Size: int64(len(identity))}, nil
}

// ActionRecord is an action-cache entry: a check run that passed. On the
// wire (etcd's ac/ keys, an HTTP cache's /ac/) it is a REAPI
// ActionResult: exit_code, stdout_digest, stderr_digest and
// execution_metadata (worker = the node, worker start and completed
// timestamps); harnessd's extras ride in execution_metadata's
// auxiliary_metadata as one google.protobuf.Struct whose fields are named
// "harnessd.*" (see auxFields).
type ActionRecord struct {
	ExitCode   int
	Stdout     Digest
	Stderr     Digest
	Node       string // the worker
	StartedAt  time.Time
	FinishedAt time.Time
	Passed     bool
	TimedOut   bool
	Cancelled  bool
	Summary    []string
	Path       string
	RepoID     string
	JobID      string
	RunID      string
	Token      int64
	// Seal is the HMAC of the record under the fleet key (Config.SealKey;
	// "" when the fleet has none): see sealRecord.
	Seal string
}

// The names of the auxiliary Struct's fields.
const (
	auxPassed    = "harnessd.passed"
	auxTimedOut  = "harnessd.timed_out"
	auxCancelled = "harnessd.cancelled"
	auxSummary   = "harnessd.summary"
	auxPath      = "harnessd.path"
	auxRepoID    = "harnessd.repo_id"
	auxJobID     = "harnessd.job_id"
	auxRunID     = "harnessd.run_id"
	auxToken     = "harnessd.token"
	auxSeal      = "harnessd.seal"
)

// Marshal answers the record as a serialized REAPI ActionResult.
func (r *ActionRecord) Marshal() ([]byte, error) {
	summary := make([]any, len(r.Summary))
	for i, s := range r.Summary {
		summary[i] = s
	}
	aux, err := structpb.NewStruct(map[string]any{
		auxPassed: r.Passed, auxTimedOut: r.TimedOut, auxCancelled: r.Cancelled,
		auxSummary: summary, auxPath: r.Path, auxRepoID: r.RepoID, auxJobID: r.JobID,
		auxRunID: r.RunID, auxToken: itoa(r.Token), // a string: Struct numbers are float64
		auxSeal: r.Seal,
	})
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "fleet: encode action record extras")
	}
	anyAux, err := anypb.New(aux)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "fleet: encode action record extras")
	}
	ar := &repb.ActionResult{
		ExitCode:     int32(r.ExitCode),
		StdoutDigest: &repb.Digest{Hash: r.Stdout.Hash, SizeBytes: r.Stdout.Size},
		StderrDigest: &repb.Digest{Hash: r.Stderr.Hash, SizeBytes: r.Stderr.Size},
		ExecutionMetadata: &repb.ExecutedActionMetadata{
			Worker:                   r.Node,
			WorkerStartTimestamp:     timestamppb.New(r.StartedAt),
			WorkerCompletedTimestamp: timestamppb.New(r.FinishedAt),
			AuxiliaryMetadata:        []*anypb.Any{anyAux},
		},
	}
	b, err := proto.Marshal(ar)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "fleet: encode action record")
	}
	return b, nil
}

// UnmarshalActionRecord decodes a serialized REAPI ActionResult. One
// without harnessd's extras (written by another client of a shared
// cache) is INVALID_ARGUMENT: it is no evidence harnessd can reuse.
func UnmarshalActionRecord(b []byte) (*ActionRecord, error) {
	var ar repb.ActionResult
	if err := proto.Unmarshal(b, &ar); err != nil {
		return nil, errs.Wrap(errs.InvalidArgument, err, "fleet: action record is not a REAPI ActionResult")
	}
	r := &ActionRecord{ExitCode: int(ar.GetExitCode())}
	if d := ar.GetStdoutDigest(); d != nil {
		r.Stdout = Digest{Hash: d.GetHash(), Size: d.GetSizeBytes()}
	}
	if d := ar.GetStderrDigest(); d != nil {
		r.Stderr = Digest{Hash: d.GetHash(), Size: d.GetSizeBytes()}
	}
	if err := r.Stdout.valid(); err != nil {
		return nil, errs.New(errs.InvalidArgument, "fleet: action record's stdout digest is not sha256")
	}
	if err := r.Stderr.valid(); err != nil {
		return nil, errs.New(errs.InvalidArgument, "fleet: action record's stderr digest is not sha256")
	}
	md := ar.GetExecutionMetadata()
	r.Node = md.GetWorker()
	if t := md.GetWorkerStartTimestamp(); t != nil {
		r.StartedAt = t.AsTime()
	}
	if t := md.GetWorkerCompletedTimestamp(); t != nil {
		r.FinishedAt = t.AsTime()
	}
	found := false
	for _, a := range md.GetAuxiliaryMetadata() {
		var s structpb.Struct
		if a.MessageIs(&s) && a.UnmarshalTo(&s) == nil {
			if _, ok := s.GetFields()[auxRunID]; !ok {
				continue
			}
			found = true
			f := s.GetFields()
			r.Passed = f[auxPassed].GetBoolValue()
			r.TimedOut = f[auxTimedOut].GetBoolValue()
			r.Cancelled = f[auxCancelled].GetBoolValue()
			for _, v := range f[auxSummary].GetListValue().GetValues() {
				r.Summary = append(r.Summary, v.GetStringValue())
			}
			r.Path = f[auxPath].GetStringValue()
			r.RepoID = f[auxRepoID].GetStringValue()
			r.JobID = f[auxJobID].GetStringValue()
			r.RunID = f[auxRunID].GetStringValue()
			r.Token = atoi(f[auxToken].GetStringValue())
			r.Seal = f[auxSeal].GetStringValue()
		}
	}
	if !found {
		return nil, errs.New(errs.InvalidArgument, "fleet: action record carries no harnessd metadata (written by another tool)")
	}
	return r, nil
}

// outcome answers the record's outcome with the given stdout and stderr.
func (r *ActionRecord) outcome(stdout, stderr []byte) Outcome {
	return Outcome{ExitCode: r.ExitCode, Passed: r.Passed, TimedOut: r.TimedOut, Cancelled: r.Cancelled,
		Stdout: string(stdout), Stderr: string(stderr), Summary: r.Summary,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Path: r.Path, RepoID: r.RepoID, JobID: r.JobID}
}

// recordOf answers the record of a run's outcome (the blobs' digests in
// place of stdout and stderr).
func recordOf(c Claim, o Outcome) *ActionRecord {
	return &ActionRecord{ExitCode: o.ExitCode, Stdout: DigestOf([]byte(o.Stdout)), Stderr: DigestOf([]byte(o.Stderr)),
		Node: c.Node, StartedAt: o.StartedAt, FinishedAt: o.FinishedAt, Passed: o.Passed, TimedOut: o.TimedOut,
		Cancelled: o.Cancelled, Summary: o.Summary, Path: o.Path, RepoID: o.RepoID, JobID: o.JobID,
		RunID: c.RunID, Token: c.Token}
}

// claimValue is the JSON value of a claim key.
type claimValue struct {
	Node  string `json:"node"`
	RunID string `json:"run_id"`
	Epoch int64  `json:"epoch"`
}

// memberValue is the JSON value of a member key.
type memberValue struct {
	Name      string    `json:"name"`
	Advertise string    `json:"advertise,omitempty"`
	Started   time.Time `json:"started"`
	Epoch     int64     `json:"epoch"`
}
