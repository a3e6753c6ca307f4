package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	iofs "io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/checkid"
	"github.com/harnessd/harnessd/internal/mediate"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/pathsafe"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/runs"
	"github.com/harnessd/harnessd/internal/verify"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// ClaimOps returns run_claim and run_verify (FlowDeck L5, claimed vs
// verified): an agent claims what a stage of its run achieved, citing
// evidence; harnessd verifies the evidence against the checkout as it is
// now, and writes can require a verified stage (git_commit's
// require_verified, a require_verified policy rule: see Enforce).
func ClaimOps() []op.Op {
	return []op.Op{
		op.Def(op.Spec[ClaimArgs]{Name: "run_claim", Output: ClaimResult{}, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.CheckRoles, Topics: []string{"test"}, NoRepo: true,
			Description: "Record what a stage of a run achieved, citing evidence: a check as given to run_check, a write's receipt, or a file's sha256. " +
				"It stays claimed until run_verify; git_commit's require_verified needs that. Progress only: run_stage. " +
				"Example: {\"run_id\":\"run_1\",\"stage\":\"tests\",\"claim\":\"parser tests pass\",\"evidence\":[{\"kind\":\"check\",\"argv\":[\"go\",\"test\",\"./parse\"]}]}",
			Prepare: claim}),
		op.Def(op.Spec[VerifyArgs]{Name: "run_verify", Output: VerifyResult{}, OutsideRuns: true,
			Route: route.RunState, Toolset: op.Runs, Roles: op.CheckRoles, Topics: []string{"test"}, NoRepo: true,
			Description: "Check a stage's claims against the code as it is now, running nothing: a check needs a pass run_check recorded for this content, a receipt its files unchanged since, a file its sha256. " +
				"Answers passed and each blocker with its fix; a missing pass: run_check first. " +
				"Example: {\"run_id\":\"run_1\",\"stage\":\"tests\"}",
			Prepare: verifyStage}),
	}
}

// ClaimArgs are the arguments of run_claim.
type ClaimArgs struct {
	RunID    string            `json:"run_id" jsonschema:"the run"`
	Stage    string            `json:"stage" jsonschema:"e.g. tests (≤ 128 bytes)"`
	Claim    string            `json:"claim" jsonschema:"what was done, in a sentence (≤ 4096 bytes; secrets redacted)"`
	RepoID   string            `json:"repo_id,omitempty" jsonschema:"of check and file evidence (default the run's)"`
	Evidence []verify.Evidence `json:"evidence,omitempty" jsonschema:"up to 32; without any the claim stays claimed"`
	op.Approval
}

// ClaimResult is the result of run_claim: the stored claim.
type ClaimResult struct {
	verify.Claim
	// StageStatus is the stage's status after the claim (claimed: a new
	// claim is not verified until run_verify says so).
	StageStatus string `json:"stage_status"`
	// Claims counts the stage's claims.
	Claims int `json:"claims"`
	op.Meta
}

// VerifyArgs are the arguments of run_verify.
type VerifyArgs struct {
	RunID string `json:"run_id" jsonschema:"the run"`
	Stage string `json:"stage" jsonschema:"the stage to verify"`
	op.Approval
}

// VerifyResult is the result of run_verify (and what a write requiring a
// verified stage re-computes).
type VerifyResult struct {
	RunID  string `json:"run_id"`
	Stage  string `json:"stage"`
	Passed bool   `json:"passed"`
	// Status is verified or claimed.
	Status     string                  `json:"status"`
	Claims     []verify.Claim          `json:"claims"`
	Evidence   []verify.EvidenceResult `json:"evidence"`
	Blockers   []verify.Blocker        `json:"blockers"`
	VerifiedAt time.Time               `json:"verified_at"`
	Revisions  []verify.RepoRevision   `json:"revisions,omitempty"`
	// Warnings report bookkeeping that failed beside the verdict (the
	// verification could not be recorded).
	Warnings []string `json:"warnings,omitempty"`
	op.Meta
}

// verifyTimeout bounds one verification: identities, store reads, digests.
const verifyTimeout = 60 * time.Second

func claim(_ context.Context, c *op.Call, args ClaimArgs) (*op.Plan, error) {
	if err := needRun(args.RunID); err != nil {
		return nil, err
	}
	if err := runs.ValidText("stage", args.Stage, runs.MaxStage); err != nil {
		return nil, errs.New(errs.InvalidArgument, "run_claim: %v", err)
	}
	if err := runs.ValidText("claim", args.Claim, verify.MaxClaimText); err != nil {
		return nil, errs.New(errs.InvalidArgument, "run_claim: %v (say what was done)", err)
	}
	if len(args.Evidence) > verify.MaxEvidence {
		return nil, errs.New(errs.InvalidArgument, "run_claim: %d pieces of evidence; at most %d in one claim", len(args.Evidence), verify.MaxEvidence)
	}
	for i, e := range args.Evidence {
		if err := verify.Validate(e); err != nil {
			return nil, errs.New(errs.InvalidArgument, "evidence[%d]: %v", i, err).With("evidence", i)
		}
		if e.Kind == verify.KindReview && e.Reviewer == args.RunID {
			return nil, errs.New(errs.InvalidArgument, "evidence[%d]: run %s cannot review itself: name a person (reviewer: person) or another run", i, args.RunID).With("evidence", i)
		}
	}
	if args.RepoID != "" {
		if _, err := c.Env.Repo(args.RepoID); err != nil {
			return nil, err
		}
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		rs, err := runsOf(c)
		if err != nil {
			return nil, err
		}
		got, err := rs.Get(ctx, args.RunID, false)
		if err != nil {
			return nil, err
		}
		if got.State.Status != messages.RunActive {
			return nil, errs.New(errs.RunEnded, "run %s is %s: claims belong to live runs (run_start a new one)", args.RunID, got.State.Status).With("run_id", args.RunID)
		}
		repos := newRepoSet(c.Env, got.State.RepoID)
		evs := make([]verify.Evidence, len(args.Evidence))
		for i, e := range args.Evidence {
			if evs[i], err = normalize(repos, args.RepoID, e); err != nil {
				ce := errs.From(err)
				out := *ce
				out.Message = "evidence[" + strconv.Itoa(i) + "]: " + ce.Message
				return nil, out.With("evidence", i)
			}
		}
		env := c.Env
		now := env.Now().UTC()
		cl := verify.Claim{ClaimID: runs.NewID("clm_"), RunID: args.RunID, Stage: args.Stage, Claim: redact(ctx, c, args.Claim, got.State.RepoID, args.RepoID),
			RepoID: args.RepoID, Evidence: evs, Status: verify.StatusClaimed, At: now}
		var rec verify.Stage
		key := persistence.ClaimKey(args.RunID, args.Stage)
		err = env.Store.Update(true, func(tx *persistence.Txn) error {
			rec = verify.Stage{}
			switch err := tx.Get(key, &rec); {
			case errors.Is(err, persistence.ErrNotFound):
				rec = verify.Stage{RunID: args.RunID, Stage: args.Stage}
			case err != nil:
				return err
			}
			if len(rec.Claims) >= verify.MaxClaimsPerStage {
				return errs.New(errs.InvalidArgument, "stage %q of run %s has %d claims, the most a stage keeps; use another stage name", args.Stage, args.RunID, len(rec.Claims))
			}
			rec.Claims = append(rec.Claims, cl)
			rec.Status, rec.UpdatedAt = verify.StatusClaimed, now
			return tx.Put(key, rec)
		})
		if err != nil {
			var ce *errs.Error
			if errors.As(err, &ce) {
				return nil, err
			}
			return nil, errs.Wrap(errs.Unavailable, err, "store the claim: %v", err)
		}
		note(ctx, rs, args.RunID, "claim", args.Stage+": "+cl.Claim+" ("+strconv.Itoa(len(evs))+" pieces of evidence)")
		return &ClaimResult{Claim: cl, StageStatus: rec.Status, Claims: len(rec.Claims)}, nil
	}}, nil
}

func verifyStage(_ context.Context, c *op.Call, args VerifyArgs) (*op.Plan, error) {
	if err := needRun(args.RunID); err != nil {
		return nil, err
	}
	if err := runs.ValidText("stage", args.Stage, runs.MaxStage); err != nil {
		return nil, errs.New(errs.InvalidArgument, "run_verify: %v", err)
	}
	return &op.Plan{Gate: op.GateArgs(args), Run: func(ctx context.Context) (any, error) {
		res, err := Verify(ctx, c.Env, args.RunID, args.Stage)
		if err != nil {
			return nil, err
		}
		text := args.Stage + ": " + res.Status
		if len(res.Blockers) > 0 {
			text += ", " + strconv.Itoa(len(res.Blockers)) + " blockers; first: " + res.Blockers[0].Reason
		}
		note(ctx, c.Env.Runs, args.RunID, "verification", text)
		return res, nil
	}}, nil
}

// note adds a harnessd observation to a run, best effort: the claim or the
// verification is stored either way.
func note(ctx context.Context, rs *runtime.Runs, runID, kind, text string) {
	if rs == nil {
		return
	}
	if len(text) > runs.MaxText {
		text = strings.ToValidUTF8(text[:runs.MaxText-3], "") + "..."
	}
	_, _ = rs.Observe(ctx, runID, messages.RunObservation{Source: "harnessd", Kind: kind, Text: text})
}

// Verify judges the claims of a stage of a run against the evidence as it
// is now, without running anything, and records the verification on the
// stage (a failure to record is a warning of the result). A stage without
// claims is not passed and records nothing.
func Verify(ctx context.Context, env *op.Env, runID, stage string) (*VerifyResult, error) {
	if env.Runs == nil {
		return nil, errs.New(errs.Unavailable, "runs are off in this harness")
	}
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	got, err := env.Runs.Get(ctx, runID, false)
	if err != nil {
		return nil, err
	}
	key := persistence.ClaimKey(runID, stage)
	var rec verify.Stage
	found := true
	switch err := env.Store.Get(key, &rec); {
	case errors.Is(err, persistence.ErrNotFound):
		found = false
	case err != nil:
		return nil, errs.Wrap(errs.Unavailable, err, "read the claims of stage %q: %v", stage, err)
	}
	now := env.Now().UTC()
	repos := newRepoSet(env, got.State.RepoID)
	judged := make([]verify.Judged, len(rec.Claims))
	results := []verify.EvidenceResult{}
	for i, cl := range rec.Claims {
		for j, e := range cl.Evidence {
			var res verify.EvidenceResult
			var v verify.Verdict
			if e.Kind == verify.KindReview {
				res = verify.EvidenceResult{Evidence: e}
				v = verify.CheckReview(verify.ReviewFacts{RunID: runID, Stage: stage, Want: e.Reviewer, Reviews: rec.Reviews})
			} else {
				res, v = judge(ctx, repos, cl, e, now)
			}
			res.Claim, res.Index = i, j
			res.Verified, res.Reason, res.ChangedFiles = v.Verified, v.Reason, v.ChangedFiles
			judged[i].Verdicts = append(judged[i].Verdicts, v)
			judged[i].Kinds = append(judged[i].Kinds, e.Kind)
			results = append(results, res)
		}
	}
	out := verify.Decide(stage, judged)
	ver := verify.Verification{Passed: out.Passed, Status: out.Status, At: now, Revisions: repos.revisions(), Evidence: results, Blockers: out.Blockers}
	claims := make([]verify.Claim, len(rec.Claims))
	status := make(map[string]bool, len(rec.Claims))
	for i, cl := range rec.Claims {
		cl.Status = verify.StatusClaimed
		if out.ClaimVerified[i] {
			cl.Status, cl.VerifiedAt = verify.StatusVerified, now
		}
		status[cl.ClaimID] = out.ClaimVerified[i]
		claims[i] = cl
	}
	res := &VerifyResult{RunID: runID, Stage: stage, Passed: out.Passed, Status: out.Status, Claims: claims, Evidence: results,
		Blockers: out.Blockers, VerifiedAt: now, Revisions: ver.Revisions}
	if found {
		if err := record(env.Store, key, status, out.Passed, ver, now); err != nil {
			res.Warnings = append(res.Warnings, "the verification could not be recorded: "+err.Error())
		}
	}
	return res, nil
}

// record stores a verification on its stage. Claims made while it ran
// were not judged: they keep the stage claimed.
func record(st *persistence.Store, key []byte, verified map[string]bool, passed bool, ver verify.Verification, now time.Time) error {
	return st.Update(true, func(tx *persistence.Txn) error {
		var cur verify.Stage
		if err := tx.Get(key, &cur); err != nil {
			if errors.Is(err, persistence.ErrNotFound) {
				return nil
			}
			return err
		}
		all := passed && len(cur.Claims) == len(verified)
		for i := range cur.Claims {
			cl := &cur.Claims[i]
			ok, judged := verified[cl.ClaimID]
			switch {
			case !judged:
				all = false
			case ok:
				cl.Status, cl.VerifiedAt = verify.StatusVerified, now
			default:
				cl.Status = verify.StatusClaimed
			}
		}
		cur.Status = verify.StatusClaimed
		if all {
			cur.Status = verify.StatusVerified
		}
		cur.Verification, cur.UpdatedAt = &ver, now
		return tx.Put(key, cur)
	})
}

// Enforce re-verifies, now, every stage the gate's decision requires of c
// (mediate.Decision.RequireVerified: the operation's require_verified
// argument and the matching require_verified policy rules) in c's run, and
// returns the verifications passed, for the write's receipt. A stage that
// is not verified now answers VERIFICATION_REQUIRED with its blockers.
// It is the write path's verification gate (op.WriteHooks.Verify,
// registered at Open): every write runs it first thing under its lease
// (op.Call.Apply), standalone or as a step of a batch, so the decision of
// which stages are needed is the mediator's alone and the verdict is taken
// at the moment of the write.
func Enforce(ctx context.Context, c *op.Call) ([]verify.Stamp, error) {
	reqs := c.Gated().Decision.RequireVerified
	if len(reqs) == 0 {
		return nil, nil
	}
	name := "this operation"
	if c.Op != nil {
		name = c.Op.Name
	}
	runID := c.Caller.RunID
	if runID == "" {
		r := reqs[0]
		if r.RuleID == mediate.RuleRequireVerified {
			return nil, errs.New(errs.InvalidArgument, "%s with require_verified %q needs a run: pass run_id (from run_start) or call from an MCP session, claim the stage (run_claim) and verify it (run_verify)", name, r.Stage).
				With("stage", r.Stage)
		}
		return nil, errs.New(errs.VerificationRequired, "policy rule %q requires stage %q of the caller's run verified before %s, and this call belongs to no run: start one (run_start), claim the stage (run_claim), verify it (run_verify) and pass its run_id", r.RuleID, r.Stage, name).
			With("stage", r.Stage).With("rule_id", r.RuleID).With("blockers", []verify.Blocker{})
	}
	var stamps []verify.Stamp
	var blockers []verify.Blocker
	var failed []string
	var first *policyRef
	for _, r := range reqs {
		res, err := Verify(ctx, c.Env, runID, r.Stage)
		if err != nil {
			return nil, err
		}
		if !res.Passed {
			failed = append(failed, r.Stage)
			blockers = append(blockers, res.Blockers...)
			if first == nil {
				first = &policyRef{rule: r.RuleID, stage: r.Stage, res: res}
			}
			continue
		}
		stamps = append(stamps, verify.Stamp{RunID: runID, Stage: r.Stage, Rule: r.RuleID, At: res.VerifiedAt, Revisions: res.Revisions, Evidence: res.Evidence})
	}
	if first == nil {
		return stamps, nil
	}
	why := "its require_verified"
	if first.rule != mediate.RuleRequireVerified {
		why = "policy rule " + strconv.Quote(first.rule)
	}
	reason, fix := "no claim", "run_claim with evidence, then run_verify"
	if len(first.res.Blockers) > 0 {
		reason, fix = first.res.Blockers[0].Reason, first.res.Blockers[0].Fix
	}
	more := ""
	if n := len(blockers) - 1; n > 0 {
		more = " (and " + strconv.Itoa(n) + " more blockers)"
	}
	if len(blockers) > verify.MaxBlockers {
		blockers = blockers[:verify.MaxBlockers]
	}
	return nil, errs.New(errs.VerificationRequired, "%s needs stage %q of run %s verified now (%s), and it is not: %s%s. Fix: %s; then retry %s",
		name, first.stage, runID, why, reason, more, fix, name).
		With("run_id", runID).With("stage", first.stage).With("stages", failed).With("rule_id", first.rule).With("blockers", blockers)
}

type policyRef struct {
	rule, stage string
	res         *VerifyResult
}

// repoSet resolves the repositories of a verification once each, with
// their content revision computed at most once.
type repoSet struct {
	env     *op.Env
	runRepo string
	m       map[string]*repoView
	order   []string
}

type repoView struct {
	entry  runtime.RepoEntry
	root   *pathsafe.Root
	rev    checkid.Revision
	revErr error
	revOK  bool
}

func newRepoSet(env *op.Env, runRepo string) *repoSet {
	return &repoSet{env: env, runRepo: runRepo, m: map[string]*repoView{}}
}

// pick returns the first repository named: the evidence's, the claim's,
// the run's.
func (s *repoSet) pick(ids ...string) string {
	for _, id := range ids {
		if id != "" {
			return id
		}
	}
	return s.runRepo
}

func (s *repoSet) get(id string) (*repoView, error) {
	if id == "" {
		return nil, errs.New(errs.InvalidArgument, "no repository: give repo_id on the claim or the evidence (or start the run with repo_id)")
	}
	if v := s.m[id]; v != nil {
		return v, nil
	}
	e, err := s.env.Repo(id)
	if err != nil {
		return nil, err
	}
	root, err := s.env.Root(e)
	if err != nil {
		return nil, err
	}
	v := &repoView{entry: e, root: root}
	s.m[id] = v
	s.order = append(s.order, id)
	return v, nil
}

// revision returns the content revision of v, computed once.
func (s *repoSet) revision(ctx context.Context, v *repoView) (checkid.Revision, error) {
	if !v.revOK {
		v.rev, v.revErr = s.env.Checks.Revision(ctx, s.env, v.entry, v.root)
		v.revOK = true
	}
	return v.rev, v.revErr
}

// revisions lists the revisions computed, in the order first used.
func (s *repoSet) revisions() []verify.RepoRevision {
	var out []verify.RepoRevision
	for _, id := range s.order {
		v := s.m[id]
		if !v.revOK {
			continue
		}
		r := verify.RepoRevision{RepoID: id, Revision: v.rev.Digest, Head: v.rev.Head}
		if v.revErr != nil {
			r = verify.RepoRevision{RepoID: id, Error: errs.From(v.revErr).Message}
		}
		out = append(out, r)
	}
	return out
}

// normalize checks a piece of evidence against its repository when the
// claim is made (the check's definition, argv and cwd as run_check would
// take them; a file's path by the repository's path rules) and fills in
// the repository and the canonical path and digest.
func normalize(repos *repoSet, claimRepo string, e verify.Evidence) (verify.Evidence, error) {
	switch e.Kind {
	case verify.KindCheck:
		v, err := repos.get(repos.pick(e.RepoID, claimRepo))
		if err != nil {
			return e, err
		}
		if err := repos.env.Checks.Define(checkDef(e)); err != nil {
			return e, err
		}
		if err := v.root.CheckArgv(e.Argv); err != nil {
			return e, err
		}
		if _, _, err := v.root.Dir(e.Cwd); err != nil {
			return e, err
		}
		e.RepoID = v.entry.Repo.ID
	case verify.KindFile:
		v, err := repos.get(repos.pick(e.RepoID, claimRepo))
		if err != nil {
			return e, err
		}
		_, rel, err := v.root.ResolveWrite(e.Path)
		if err != nil {
			return e, err
		}
		e.RepoID, e.Path = v.entry.Repo.ID, rel
		e.SHA256, _ = verify.NormalizeSHA256(e.SHA256)
	case verify.KindReceipt:
		if e.RepoID != "" {
			if _, err := repos.get(e.RepoID); err != nil {
				return e, err
			}
		}
	}
	return e, nil
}

// judge gathers the facts of one piece of evidence and decides it.
func judge(ctx context.Context, repos *repoSet, cl verify.Claim, e verify.Evidence, now time.Time) (verify.EvidenceResult, verify.Verdict) {
	res := verify.EvidenceResult{Evidence: e}
	unusable := func(err error) verify.Verdict {
		return verify.Verdict{Reason: "the evidence cannot be judged: " + errs.From(err).Message,
			Fix: "register the repository again (repository_register) or claim again with evidence harnessd can read"}
	}
	switch e.Kind {
	case verify.KindCheck:
		v, err := repos.get(repos.pick(e.RepoID, cl.RepoID))
		if err != nil {
			return res, unusable(err)
		}
		f := checkFacts(ctx, repos, v, e, now)
		res.Identity, res.Revision = f.Identity, f.Revision
		return res, verify.Check(f)
	case verify.KindReceipt:
		f, repo := receiptFacts(ctx, repos, cl, e)
		if repo != nil {
			if rev, err := repos.revision(ctx, repo); err == nil {
				res.Revision = rev.Digest
			}
		}
		return res, verify.Receipt(f)
	case verify.KindFile:
		v, err := repos.get(repos.pick(e.RepoID, cl.RepoID))
		if err != nil {
			return res, unusable(err)
		}
		if rev, err := repos.revision(ctx, v); err == nil {
			res.Revision = rev.Digest
		}
		return res, verify.File(fileFacts(v, e))
	}
	return res, verify.Verdict{Reason: "unknown evidence kind " + strconv.Quote(e.Kind), Fix: "claim again with kind check, receipt or file"}
}

// checkDef is the check a piece of evidence names.
func checkDef(e verify.Evidence) op.CheckDef {
	return op.CheckDef{Argv: e.Argv, Cwd: e.Cwd, TimeoutMs: e.TimeoutMs, Effects: e.Effects}
}

// checkFacts looks up stored evidence of a check for the identity it has
// now, computed exactly as run_check computes it (env.Checks, run_check's
// own code); it never runs the check.
func checkFacts(ctx context.Context, repos *repoSet, v *repoView, e verify.Evidence, now time.Time) verify.CheckFacts {
	env := repos.env
	f := verify.CheckFacts{Argv: e.Argv, Cwd: e.Cwd}
	d := checkDef(e)
	if err := env.Checks.Define(d); err != nil {
		f.Err = errs.From(err).Message
		return f
	}
	rev, err := repos.revision(ctx, v)
	if err != nil {
		f.Err = errs.From(err).Message
		return f
	}
	f.Revision = rev.Digest
	found, err := env.Checks.Evidence(ctx, env, v.entry, rev, d, now)
	f.Identity = found.Identity.Digest
	if err != nil {
		f.Err = errs.From(err).Message
		return f
	}
	cur, prev := found.Current, found.Previous
	if cur != nil {
		f.Found, f.FoundAt = true, cur.Outcome.FinishedAt
		switch {
		case cur.Outcome.JobID != "":
			f.FoundBy = "job " + cur.Outcome.JobID
		case cur.Outcome.Pid != 0:
			f.FoundBy = "pid " + strconv.Itoa(cur.Outcome.Pid)
		}
		return f
	}
	if prev == nil {
		return f
	}
	f.Previous, f.PreviousAt = true, prev.StoredAt
	var p checkid.Parts
	if err := json.Unmarshal(prev.Parts, &p); err != nil || p.Revision.Digest == "" {
		f.PreviousRevision = "(unknown)"
		f.Reasons = []string{"the stored evidence does not record its content revision"}
		return f
	}
	f.PreviousRevision = p.Revision.Digest
	f.ChangedFiles, f.ChangedKnown = changedFiles(ctx, env, v.root.Path(), p.Revision, rev)
	if !f.ChangedKnown || len(f.ChangedFiles) == 0 || p.Revision.Digest == rev.Digest {
		f.Reasons = checkid.ExplainMiss(ctx, env.Git, v.root.Path(), p, found.Parts)
	}
	return f
}

// changedFiles names the files whose content differs between two content
// revisions: the dirty paths whose state differs, and when HEAD's tree
// moved, the files the two trees differ in (one git diff). ok is false
// when they cannot be named (a tree that is not an object id, git failing).
func changedFiles(ctx context.Context, env *op.Env, root string, prev, cur checkid.Revision) ([]string, bool) {
	files := verify.ChangedPaths(prev.Dirty, cur.Dirty)
	if prev.Tree == cur.Tree {
		return files, true
	}
	if !isOID(prev.Tree) || !isOID(cur.Tree) {
		return files, false
	}
	out, truncated, err := env.Git.Run(ctx, root, 1<<20,
		"diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", "--name-only", "-z", prev.Tree, cur.Tree, "--")
	if err != nil || truncated {
		return files, false
	}
	var tree []string
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) > 0 {
			tree = append(tree, string(rec))
		}
	}
	return verify.Union(files, tree), true
}

func isOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// receiptFacts finds a receipt (in the evidence's, the claim's or the
// run's repository, else in any) and compares every file it wrote with the
// file now.
func receiptFacts(_ context.Context, repos *repoSet, cl verify.Claim, e verify.Evidence) (verify.ReceiptFacts, *repoView) {
	f := verify.ReceiptFacts{ReceiptID: e.ReceiptID}
	st := repos.env.Store
	prefix := []byte(persistence.PrefixReceipt)
	if id := repos.pick(e.RepoID, cl.RepoID); id != "" {
		prefix = persistence.ReceiptPrefix(id)
	}
	needle := []byte(`"receipt_id":"` + e.ReceiptID + `"`)
	errFound := errors.New("found") // stops the scan
	var rec op.Receipt
	err := st.ScanRaw(prefix, func(_, value []byte) error {
		if !bytes.Contains(value, needle) {
			return nil
		}
		var r op.Receipt
		if persistence.Decode(value, &r) != nil || r.ReceiptID != e.ReceiptID {
			return nil
		}
		rec = r
		return errFound
	})
	switch {
	case errors.Is(err, errFound):
		f.Found = true
	case err != nil:
		f.Err = err.Error()
		return f, nil
	default:
		return f, nil
	}
	f.Operation = rec.Operation
	v, err := repos.get(rec.RepoID)
	if err != nil {
		f.Err = "its repository " + rec.RepoID + ": " + errs.From(err).Message
		return f, nil
	}
	// The last digest each file was written with, in the order written.
	last := map[string]string{}
	var order []string
	for _, ch := range rec.Changes {
		// A content write (patch.Apply) records a digest before or after
		// (both for an edit); what a receipt staged or committed has none.
		if ch.Before == "" && ch.After == "" {
			continue
		}
		if _, seen := last[ch.Path]; !seen {
			order = append(order, ch.Path)
		}
		last[ch.Path] = ch.After
	}
	for _, p := range order {
		fs := verify.FileState{Path: p, Wrote: last[p]}
		abs, rel, err := v.root.ResolveWrite(p)
		if err == nil {
			fs.Now, err = patch.DigestChecked(abs, func(fi iofs.FileInfo) error { return v.root.CheckLeaf(rel, fi) })
		}
		if err != nil {
			fs.Err = errs.From(err).Message
		}
		f.Files = append(f.Files, fs)
	}
	return f, v
}

// fileFacts reads a file by the repository's read rules (inside the root,
// not secret, not .git, not a hard link: pathsafe.Root.CheckLeaf of the
// file opened) and digests it.
func fileFacts(v *repoView, e verify.Evidence) verify.FileFacts {
	want, _ := verify.NormalizeSHA256(e.SHA256)
	f := verify.FileFacts{Path: e.Path, Want: want}
	abs, rel, err := v.root.ResolveRead(e.Path)
	if err != nil {
		if errs.CodeOf(err) == errs.NotFound {
			return f
		}
		f.Err = errs.From(err).Message
		return f
	}
	d, err := patch.DigestChecked(abs, func(fi iofs.FileInfo) error { return v.root.CheckLeaf(rel, fi) })
	switch {
	case err != nil:
		f.Err = errs.From(err).Message
	case d != "":
		f.Exists, f.Now = true, d
	}
	return f
}
