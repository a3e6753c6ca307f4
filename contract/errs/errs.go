// Package errs defines harnessd's stable error codes and the coded error type
// that every surface (MCP, HTTP, CLI, embedding) reports to callers.
//
// Codes are part of the public contract: add new ones, never rename.
package errs

import (
	"errors"
	"fmt"
	"os/exec"
)

// Code is a stable, machine-readable error code.
type Code string

// The stable codes of DESIGN.md section 6.
const (
	InvalidArgument         Code = "INVALID_ARGUMENT"
	NotFound                Code = "NOT_FOUND"
	NotAGitRepository       Code = "NOT_A_GIT_REPOSITORY"
	RepositoryNotRegistered Code = "REPOSITORY_NOT_REGISTERED"
	PathOutsideRoot         Code = "PATH_OUTSIDE_ROOT"
	SecretPathDenied        Code = "SECRET_PATH_DENIED"
	PathNotAllowed          Code = "PATH_NOT_ALLOWED"
	IsDirectory             Code = "IS_DIRECTORY"
	RouteRejected           Code = "ROUTE_REJECTED"
	RouteDurableRequired    Code = "ROUTE_DURABLE_REQUIRED"
	PolicyDenied            Code = "POLICY_DENIED"
	ApprovalRequired        Code = "APPROVAL_REQUIRED"
	LoopDetected            Code = "LOOP_DETECTED"
	MutationBusy            Code = "MUTATION_BUSY"
	LeaseLost               Code = "LEASE_LOST"
	RequestIDRequired       Code = "REQUEST_ID_REQUIRED"
	RequestConflict         Code = "REQUEST_CONFLICT"
	RequestInProgress       Code = "REQUEST_IN_PROGRESS"
	RequestOutcomeUnknown   Code = "REQUEST_OUTCOME_UNKNOWN"
	PatchConflict           Code = "PATCH_CONFLICT"
	PatchRollbackIncomplete Code = "PATCH_ROLLBACK_INCOMPLETE"
	Timeout                 Code = "TIMEOUT"
	Cancelled               Code = "CANCELLED"
	Unavailable             Code = "UNAVAILABLE"
	Internal                Code = "INTERNAL"
	// Unauthenticated: a people's endpoint (approvals, policy, audit) was
	// called without the human credential, the token of the data dir.
	Unauthenticated Code = "UNAUTHENTICATED"
	// BudgetExceeded: the call would cross a limit of its run's budget (or
	// of an ancestor's); details name the resource, the limit and the use.
	BudgetExceeded Code = "BUDGET_EXCEEDED"
	// RunEnded: the run_id names a run that has ended (run_end, its
	// deadline, or abandonment); start a new run or leave run_id out.
	RunEnded Code = "RUN_ENDED"
	// Deadlock: the call waited for a resource held by a run that waits
	// for one this call's run holds; the youngest waiter of the cycle is
	// failed, and details name the cycle.
	Deadlock Code = "DEADLOCK"
	// VerificationRequired: the operation needs a verified stage of its
	// run (require_verified, or a policy rule); details list the blockers.
	VerificationRequired Code = "VERIFICATION_REQUIRED"
	// RetryLimit: the same failed call was retried past its run's bound;
	// details carry the history and the recovery plan.
	RetryLimit Code = "RETRY_LIMIT"
	// StorageFull: the data dir's file system (or the work tree's) has no
	// room for the write; nothing was written, reads keep working, and
	// writes succeed again once space is freed.
	StorageFull Code = "STORAGE_FULL"
	// StorageUnavailable: the data dir's file system refused the store's
	// write (mounted read-only, as ext4 does after an error with
	// errors=remount-ro, or an I/O error); nothing was written and later
	// writes are refused at once, without touching the disk, while reads
	// are served from memory. A person fixes the disk (remount it
	// read-write, or restart harnessd on a healthy data dir); writes are
	// tried again by themselves every few seconds.
	StorageUnavailable Code = "STORAGE_UNAVAILABLE"
	// StoreDamaged: the store failed a check at open or in use (a missing
	// MANIFEST, a bad checksum, lost acknowledged entries); the message
	// names the file and the recovery (harness store verify|restore).
	StoreDamaged Code = "STORE_DAMAGED"
	// RepositoryMoved: the registered root (or its .git) is no longer the
	// directory registered under this repo_id (moved, deleted or
	// replaced); nothing was done. Register the new location.
	RepositoryMoved Code = "REPOSITORY_MOVED"
	// ConcurrentModification: git read the work tree or index while
	// another writer changed it; nothing was changed; retry the call.
	ConcurrentModification Code = "CONCURRENT_MODIFICATION"
	// GitIdentityRequired: git_commit (or a job's commit) found no author
	// identity; the message gives the git config commands that set one.
	GitIdentityRequired Code = "GIT_IDENTITY_REQUIRED"
	// JobFailed: a durable job ended with a non-zero exit status or a
	// signal; details carry exit_code or signal.
	JobFailed Code = "JOB_FAILED"
	// CheckFailed: a check ran and did not pass (the CLI's `harness check`
	// exits 1 with it); the check's result carries the evidence.
	CheckFailed Code = "CHECK_FAILED"
	// TargetMoved: the directory at a repository-free target's root is
	// not the one granted (moved, deleted, or another directory swapped in
	// under the same path: its device and inode differ); nothing was done.
	// Register the directory again (target_register) for a new target_id.
	TargetMoved Code = "TARGET_MOVED"
	// RevertConflict: a revert would restore files a later fenced write
	// (another receipt of the checkout) changed again; details "later"
	// name those receipts and their paths, "paths" the files. Revert the
	// later ones first, or pass cascade: true (not for run_revert).
	RevertConflict Code = "REVERT_CONFLICT"
	// RoleDenied: the operation is outside the role the session acts as
	// (reader, editor, reviewer, operator); nothing ran. The message names
	// the roles that may call it and how a person grants one (harnessd mcp
	// --role, HARNESSD_ROLE, ?role= on the MCP URL, the policy): an agent
	// cannot raise its own role.
	RoleDenied Code = "ROLE_DENIED"
	// PushRejected: git_push reached the remote and it (or git) refused
	// the ref: details "reason" (non-fast-forward, fetch first, already
	// exists, or the remote's own); the message names the fix.
	PushRejected Code = "PUSH_REJECTED"
	// RemoteAuthFailed: git_push's remote refused the credential or got
	// none; the message names how to set one up (git credential), never
	// the credential.
	RemoteAuthFailed Code = "REMOTE_AUTH_FAILED"
)

// Error is a coded error. Its JSON form is the "error" object of a tool error:
// {"code": "...", "message": "...", "details": {...}}.
type Error struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	cause   error
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code, so
// errors.Is(err, errs.E(errs.NotFound)) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Message == ""
}

// New returns a coded error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns a coded error that keeps cause for errors.Is/As. Wrapping
// as Internal a cause that carries a code of its own (a coded *Error, or
// an error with an ErrorCode method such as the store's full-disk and
// damage errors) keeps the cause's code: a disk that is full stays
// STORAGE_FULL however many layers report it.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	if code == Internal && cause != nil {
		if c := CodeOf(cause); c != Internal && c != "" {
			code = c
		}
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), cause: cause}
}

// coder is an error of a lower layer (persistence) that names the stable
// code it maps to without importing this package.
type coder interface{ ErrorCode() string }

// E returns a bare error of the given code, for use as an errors.Is target.
func E(code Code) *Error { return &Error{Code: code} }

// With returns a copy of e with the detail key set.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		c.Details[k] = v
	}
	c.Details[key] = value
	return &c
}

// CodeOf returns the code of err: the code of the first *Error in its chain,
// Cancelled or Timeout for context errors, and Internal otherwise.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var c coder
	if errors.As(err, &c) {
		return Code(c.ErrorCode())
	}
	if errors.Is(err, errContextCanceled) {
		return Cancelled
	}
	if errors.Is(err, errDeadlineExceeded) {
		return Timeout
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		// A process (git, rg) whose output stayed open past its wait:
		// under heavy load, not a fault of the call; retry it.
		return Unavailable
	}
	return Internal
}

// From converts any error into an *Error. Uncoded errors become Internal with
// their text as the message.
func From(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	code := CodeOf(err)
	return &Error{Code: code, Message: err.Error(), cause: err}
}
