// Package push holds git_push: the typed remote write harnessd performs
// itself with the user's credential, behind a person's approval of the
// exact URL, refs, commit and force (internal/gitpush does the push).
//
// Order of one call:
//  1. Prepare reads the checkout's config (confined, like every git of
//     harnessd's) for the remote's URL, refusing settings that would send
//     the push elsewhere, and resolves the local ref to its commit;
//  2. the gate asks a person (mediate's Grant: never a policy allow, never
//     the agent) with the exact push in the request's text, and binds the
//     approval to it (its hash covers URL, refs, commit, force);
//  3. the write engine records the request (a retry replays, never pushes
//     twice), and under a lease of the local ref the push runs from a
//     scratch repository, with network, confined (not over ssh, which
//     needs the user's keys and agent);
//  4. the push is audited (URL, refs, old and new remote commit, outcome)
//     and its receipt carries the same.
package push

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/gitpush"
	"github.com/harnessd/harnessd/internal/lease"
	"github.com/harnessd/harnessd/internal/route"
	"github.com/harnessd/harnessd/internal/sandbox"
)

// pushTimeout bounds one push.
const pushTimeout = 10 * time.Minute

// Ops returns git_push.
func Ops() []op.Op {
	return []op.Op{
		op.Def(op.Spec[Args]{Name: "git_push", Output: op.MutationResult{}, Idempotent: true,
			Route: route.RemoteWrite, Toolset: op.Git, Roles: op.WriteRoles,
			Description: "Push a local branch or tag to a configured remote once your work is committed. Always needs a person's approval of the exact URL, refs and commit: the first call answers APPROVAL_REQUIRED, retry with approval_id. harnessd supplies the credential. Example: {\"request_id\":\"p1\",\"remote\":\"origin\",\"refspec\":\"main\"}",
			Repo:        func(a Args) string { return a.RepoID },
			Prepare:     prepare}),
	}
}

// Args are the arguments of git_push.
type Args struct {
	RepoID     string `json:"repo_id" jsonschema:"from repository_list"`
	RequestID  string `json:"request_id,omitempty" required:"true" jsonschema:"unique per push; a retry with it replays and never pushes twice"`
	Remote     string `json:"remote" jsonschema:"a remote configured in the checkout, e.g. origin"`
	Refspec    string `json:"refspec" jsonschema:"local branch or tag, or local:remote (main:release)"`
	Force      bool   `json:"force,omitempty" jsonschema:"replace the remote ref even if the push is no fast-forward (needs its own approval)"`
	ApprovalID string `json:"approval_id,omitempty" jsonschema:"from APPROVAL_REQUIRED, once a person approved it"`
}

// Approved is what a person approves of one push, and what the approval's
// hash covers: a change of any field needs another approval.
type Approved struct {
	RepoID    string `json:"repo_id"`
	Remote    string `json:"remote"`
	URL       string `json:"url"`
	LocalRef  string `json:"local_ref"`
	RemoteRef string `json:"remote_ref"`
	Commit    string `json:"commit"`
	Force     bool   `json:"force"`
}

// Text is the approval request's text: the exact push.
func (a Approved) Text() string {
	force := "not forced"
	if a.Force {
		force = "FORCED: it may replace commits of the remote's " + a.RemoteRef
	}
	return "git_push writes a remote: push commit " + a.Commit + " of " + a.LocalRef + " to " + a.RemoteRef + " at " + a.URL +
		" (remote " + strconv.Quote(a.Remote) + "), " + force + "; only a person approves a remote write"
}

// maxConfig bounds the checkout config read.
const maxConfig = 1 << 20

func prepare(ctx context.Context, c *op.Call, a Args) (*op.Plan, error) {
	if a.Remote == "" {
		return nil, errs.New(errs.InvalidArgument, "remote is empty: name a remote of the checkout (origin)")
	}
	rs, err := gitpush.ParseRefspec(a.Refspec)
	if err != nil {
		return nil, err
	}
	root, git := c.Root.Path(), c.Env.Git
	cfg, _, err := git.Run(ctx, root, maxConfig, "config", "--null", "--list", "--show-scope")
	if err != nil {
		return nil, err
	}
	entries := gitpush.ParseConfigList(cfg)
	rem, err := gitpush.ResolveRemote(entries, a.Remote, root)
	if err != nil {
		return nil, err
	}
	full, _, err := git.Run(ctx, root, 4096, "rev-parse", "--symbolic-full-name", rs.Src)
	localRef := strings.TrimSpace(string(full))
	if err != nil || localRef == "" || strings.Contains(localRef, "\n") {
		return nil, errs.New(errs.NotFound, "local ref %q names no branch or tag of the checkout (git branch and git tag list them)", rs.Src).With("refspec", a.Refspec)
	}
	sha, _, err := git.Run(ctx, root, 4096, "rev-parse", "--verify", "-q", localRef+"^{commit}")
	commit := strings.TrimSpace(string(sha))
	if err != nil || commit == "" {
		return nil, errs.New(errs.NotFound, "local ref %s has no commit to push", localRef).With("refspec", a.Refspec)
	}
	remoteRef, err := gitpush.RemoteRef(localRef, rs.Dst)
	if err != nil {
		return nil, err
	}
	cd, _, err := git.Run(ctx, root, 4096, "rev-parse", "--git-common-dir")
	if err != nil {
		return nil, err
	}
	common := strings.TrimSpace(string(cd))
	if !filepath.IsAbs(common) {
		common = filepath.Join(root, common)
	}
	format := ""
	for _, e := range entries {
		if (e.Scope == "local" || e.Scope == "worktree") && e.Key == "extensions.objectformat" {
			format = e.Value
		}
	}
	ap := Approved{RepoID: c.Repo.Repo.ID, Remote: a.Remote, URL: rem.URL, LocalRef: localRef, RemoteRef: remoteRef, Commit: commit, Force: a.Force}
	p := pusher{c: c, ap: ap, rem: rem, common: filepath.Clean(common), format: format}
	// The router's remote_write route is Durable: a person's approval, the
	// ledger's entry before the push, a receipt. The push itself runs
	// within the call (bounded), not as a background job.
	c.SetRoute("durable")
	return &op.Plan{
		// A person approves exactly ap: mediate's Grant asks whatever a
		// policy allows, and the approval's hash is ap's.
		Gate: govern.Input{Args: ap, Grant: ap.Text()},
		Write: func() *op.Txn {
			t := op.MutationTxn(op.Txn{Op: "git_push", RequestID: a.RequestID, Hashed: a,
				Keys: []string{string(lease.GitRefKey(c.Repo.Repo.CheckoutID, localRef))}, Run: p.run})
			return &t
		}(),
	}, nil
}

// pusher is one approved push.
type pusher struct {
	c      *op.Call
	ap     Approved
	rem    gitpush.Remote
	common string // the checkout's common git dir
	format string // its object format ("" = sha1)
}

// run pushes under the lease l and records the push in the receipt r.
func (p pusher) run(ctx context.Context, l runtime.Lease, r *op.Receipt) error {
	if err := l.Fence(); err != nil {
		return err
	}
	env := p.c.Env
	scratch, err := os.MkdirTemp("", "harnessd-push-")
	if err != nil {
		return errs.Wrap(errs.Internal, err, "push: scratch repository: %v", err)
	}
	defer os.RemoveAll(scratch)
	if err := gitpush.MakeScratch(scratch, filepath.Join(p.common, "objects"), p.format); err != nil {
		return errs.Wrap(errs.Internal, err, "push: scratch repository: %v", err)
	}
	bin := ""
	if env.Git != nil {
		bin = env.Git.Bin
	}
	gitBin, err := gitpush.Lookup(bin)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	cred := gitpush.FillCredential(ctx, gitBin, scratch, p.rem)
	q := gitpush.Request{Git: gitBin, Scratch: scratch, Remote: p.rem, Commit: p.ap.Commit, RemoteRef: p.ap.RemoteRef, Force: p.ap.Force,
		Cred: cred, Run: p.confined(scratch)}
	res, err := gitpush.Push(ctx, q)
	p.audit(r, res, err)
	if err != nil {
		return err
	}
	r.Commit = p.ap.Commit
	r.Push = &op.PushRecord{Remote: p.ap.Remote, URL: p.ap.URL, LocalRef: p.ap.LocalRef, RemoteRef: p.ap.RemoteRef, Commit: p.ap.Commit,
		Force: p.ap.Force, Old: res.Old, New: res.New, Summary: res.Summary}
	return nil
}

// audit records the push itself: the remote's URL (no credential is ever
// in it), the refs, the commit, the remote ref's old and new commit and
// the outcome. The write engine adds its own entry with the receipt.
func (p pusher) audit(r *op.Receipt, res gitpush.Result, err error) {
	c := p.c
	e := audit.Entry{Kind: audit.KindMutation, Operation: "git_push", RepoID: p.ap.RepoID, RequestID: r.RequestID, Outcome: "pushed",
		Details: map[string]string{"remote": p.ap.Remote, "url": p.ap.URL, "local_ref": p.ap.LocalRef, "remote_ref": p.ap.RemoteRef,
			"commit": p.ap.Commit, "force": strconv.FormatBool(p.ap.Force), "old": res.Old, "new": res.New, "receipt_id": r.ReceiptID}}
	if err != nil {
		ce := errs.From(err)
		e.Outcome, e.Code, e.Reason = "failed", string(ce.Code), ce.Message
	}
	govern.Identify(&e, c.Caller)
	c.Env.Gov.AuditAppend(e)
}

// confined returns how the pushing git runs: under the sandbox's read
// profile like every git of harnessd's (the scratch repository writable,
// the checkout's git directory readable, nothing else of the checkout),
// with network for http(s) and, for a local remote, that repository
// writable instead. Over ssh it runs unconfined: ssh needs the user's
// keys and agent, which no confined process reaches. Nil = unconfined.
func (p pusher) confined(scratch string) func(*exec.Cmd) error {
	env := p.c.Env
	if p.rem.Scheme == "ssh" || !env.Confines(sandbox.Read) {
		return nil
	}
	pol := sandbox.Policy{Profile: sandbox.Read, Root: scratch, GitDirs: []string{p.common}, Writable: []string{scratch},
		Network: p.rem.Scheme != "file", Metadata: true, CPUSeconds: uint64(pushTimeout / time.Second)}
	if p.rem.Scheme == "file" {
		pol.Writable = append(pol.Writable, p.rem.Path)
	}
	return func(cmd *exec.Cmd) error {
		prep, err := env.Sandbox.Prepare(pol)
		if err != nil {
			return err
		}
		if prep == nil {
			return cmd.Run()
		}
		defer prep.Done()
		cmd.Env = prep.Env(cmd.Env)
		exited := make(chan struct{})
		defer close(exited)
		if err := prep.Start(cmd, exited); err != nil {
			return err
		}
		return cmd.Wait()
	}
}
