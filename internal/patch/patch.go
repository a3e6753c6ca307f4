package patch

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/harnessd/harnessd/contract/errs"
)

// Op kinds.
const (
	OpReplace = "replace" // replace OldText by NewText in an existing file
	OpCreate  = "create"  // create a new file (or overwrite one with Overwrite)
	OpWrite   = "write"   // write a file whether or not it exists
	OpDelete  = "delete"  // remove an existing file
)

// Defaults for the zero fields of Options, and the per-file read cap.
const (
	DefaultMaxOps   = 100
	DefaultMaxBytes = 1 << 20
	// MaxFileBytes is the largest existing file a patch may read (to edit,
	// overwrite or delete it); the plan and the backup live in memory.
	MaxFileBytes = 64 << 20
	// DefaultMode is the mode of files a patch creates without Op.Mode.
	DefaultMode os.FileMode = 0o644
)

// Resolver maps a path named by an agent to an absolute path on disk and the
// slash-separated path relative to the repository root. It is implemented by
// pathsafe.Root, which refuses paths outside the root, secret paths and .git,
// and resolves symlinks; the leaf may not exist yet.
type Resolver interface {
	ResolveWrite(p string) (abs, rel string, err error)
}

// LeafChecker is what a Resolver (pathsafe.Root) may also decide: whether
// the file a path names, as an lstat found it, may be touched (CheckLeaf).
// A patch refuses to replace, overwrite or delete a file it refuses: a
// hard link's content is another name's too (a secret's, or a file's
// outside the root), and a write, a kept pre-image or a revert would make
// it a plain file of its own.
type LeafChecker interface {
	CheckLeaf(rel string, fi fs.FileInfo) error
}

// Op is one edit operation of a patch.
type Op struct {
	Op        string `json:"op" enum:"replace,create,write,delete" jsonschema:"replace old_text by new_text; create a new file; write a whole file; delete"`
	Path      string `json:"path" jsonschema:"relative to the root"`
	OldText   string `json:"old_text,omitempty" jsonschema:"replace: the exact text, found once unless all"`
	NewText   string `json:"new_text,omitempty" jsonschema:"replace: its replacement (empty deletes it)"`
	All       bool   `json:"all,omitempty" jsonschema:"replace: every occurrence"`
	Content   string `json:"content,omitempty" jsonschema:"create, write: the whole file"`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"create: replace an existing file"`
	Mode      string `json:"mode,omitempty" jsonschema:"create, write: octal, e.g. 0755"`
	// Link makes a write's Content the target of a symbolic link (a
	// revert restoring one): never decoded from an agent's input.
	Link bool `json:"-"`
}

// Options tune Apply. The zero value is safe: defaults apply and files are
// fsynced.
type Options struct {
	// AllowedPaths are doublestar globs over slash-separated relative paths.
	// Empty allows every path. Every op's path is checked before anything is
	// written; a miss is errs.PathNotAllowed naming the path.
	AllowedPaths []string
	// MaxOps caps the number of ops; 0 means DefaultMaxOps.
	MaxOps int
	// MaxBytes caps the total of new content: Content plus NewText times
	// its number of replacements. 0 means DefaultMaxBytes.
	MaxBytes int
	// Fence, if set, is called immediately before each rename or remove of
	// a target file. An error aborts the patch and rolls it back; an
	// uncoded error is reported as errs.LeaseLost.
	Fence func() error
	// NoSync skips fsync of files and directories (tests, benchmarks).
	NoSync bool
	// Expect, if set, maps relative paths to the SHA-256 each must have
	// before the patch ("" = absent); a file that differs is
	// PATCH_CONFLICT before anything is written (revert).
	Expect map[string]string
	// PreImage, if set, is called after planning and before the first
	// write with the original state of every file the patch changes (see
	// PreImage); an error aborts the patch with nothing written.
	PreImage func(PreImage) error
}

// Change reports one applied op. For a file touched by several ops, Before of
// the first and After of the last are the on-disk digests before and after
// the patch. Digests are hex SHA-256 (see Digest).
type Change struct {
	Path         string `json:"path"`
	Op           string `json:"op"`
	Before       string `json:"before_sha256,omitempty"` // "" when the file did not exist
	After        string `json:"after_sha256,omitempty"`  // "" when deleted
	Replacements int    `json:"replacements,omitempty"`
}

// Result is the outcome of a successful Apply: one Change per op, in order.
type Result struct {
	Changes []Change `json:"changes"`
}

// Apply applies ops to the checkout behind r, all-or-nothing. See the package
// documentation for the phases, rollback and crash guarantees.
//
// Errors are *errs.Error: INVALID_ARGUMENT, PATH_NOT_ALLOWED, IS_DIRECTORY and
// the resolver's codes for bad input; PATCH_CONFLICT (details "path",
// "op_index", and "matches" for replace) when the ops do not fit the files;
// CANCELLED/TIMEOUT, LEASE_LOST (Fence), STORAGE_FULL (ENOSPC or EDQUOT;
// details "path") or INTERNAL (other I/O) when the commit failed and was
// rolled back; PATCH_ROLLBACK_INCOMPLETE (details "paths")
// when the rollback itself could not restore everything.
//
// Apply is not safe to call concurrently on overlapping files; the caller
// serialises mutations of a checkout.
func Apply(ctx context.Context, r Resolver, ops []Op, o Options) (Result, error) {
	if r == nil {
		return Result{}, errs.New(errs.InvalidArgument, "patch: no resolver")
	}
	if err := ctx.Err(); err != nil {
		return Result{}, ctxError(err, "patch cancelled before it started")
	}
	o = o.withDefaults()
	p, err := newPlan(r, ops, o)
	if err != nil {
		return Result{}, err
	}
	if err := p.before(o); err != nil {
		return Result{}, err
	}
	if err := p.commit(ctx, o); err != nil {
		return Result{}, err
	}
	return Result{Changes: p.changes}, nil
}

func (o Options) withDefaults() Options {
	if o.MaxOps <= 0 {
		o.MaxOps = DefaultMaxOps
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	return o
}

// ctxError codes a context error as CANCELLED or TIMEOUT.
func ctxError(err error, msg string) error {
	return errs.Wrap(errs.CodeOf(err), err, "%s: %v", msg, err)
}

// coded returns err unchanged if it already carries a code, else wraps it
// with code and the formatted message.
func coded(err error, code errs.Code, format string, args ...any) error {
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	return errs.Wrap(code, err, format, args...)
}
