package gitx

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/harnessd/harnessd/contract/errs"
)

// DefaultDiffBytes is the patch cap of Diff when DiffOptions.MaxBytes is 0.
const DefaultDiffBytes = 256 << 10

// MaxContext bounds DiffOptions.Context.
const MaxContext = 10000

// maxPaths bounds DiffOptions.Paths.
const maxPaths = 1000

// DiffOptions selects what Diff compares.
type DiffOptions struct {
	Staged bool     // --cached
	Rev    string   // diff against this revision (validated); with Staged: `--cached Rev`
	Paths  []string // pathspec filter (validated), passed after "--"
	// Exclude are literal paths left out of the diff (the caller's own
	// list, e.g. secret files): passed as ":(exclude,literal)<path>".
	Exclude  []string
	MaxBytes int // 0 = 256 KiB
	Context  int // -U<n>; 0 = git default (3); negative invalid
}

// Diff is a bounded patch with per-file statistics.
type Diff struct {
	Patch     string     `json:"patch"`
	Truncated bool       `json:"truncated"`
	Bytes     int        `json:"bytes"` // full size of the patch before truncation if known (else size read)
	Files     []FileStat `json:"files"` // from --numstat -z
	// SecretPathsOmitted counts changed secret files left out (set by
	// the caller that excluded them).
	SecretPathsOmitted int `json:"secret_paths_omitted,omitempty"`
}

// FileStat is one file of `git diff --numstat -z`. Binary files have
// Binary set and zero counts.
type FileStat struct {
	Path     string `json:"path"`
	OrigPath string `json:"orig_path,omitempty"`
	Added    int    `json:"added"`
	Deleted  int    `json:"deleted"`
	Binary   bool   `json:"binary"`
}

// diffArgs builds the arguments of the patch call, or with numstat set of
// the --numstat -z call (which must not get -U: it implies --patch).
func (g *Git) diffArgs(ctx context.Context, o DiffOptions, numstat bool) []string {
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color"}
	if numstat {
		args = append(args, "--numstat", "-z")
	}
	if o.Staged {
		args = append(args, "--cached")
	}
	if o.Context > 0 && !numstat {
		args = append(args, "-U"+strconv.Itoa(o.Context))
	}
	if o.Rev != "" {
		if g.endOfOptions(ctx) {
			args = append(args, "--end-of-options")
		}
		args = append(args, o.Rev)
	}
	args = append(args, "--")
	args = append(args, o.Paths...)
	if o.Rev != "" && len(o.Paths) == 0 {
		// "diff <rev> --" has exactly two arguments after the options,
		// which git reads as two files (--no-index) when the first is
		// outside the work tree. A third argument (":/", the whole tree,
		// the same diff) rules that mode out whatever the revision.
		args = append(args, ":/")
	}
	for _, p := range o.Exclude {
		args = append(args, ":(exclude,literal)"+p)
	}
	return args
}

func validateDiffOptions(o DiffOptions) error {
	if o.Context < 0 {
		return errs.New(errs.InvalidArgument, "context must not be negative, got %d", o.Context)
	}
	if o.Context > MaxContext {
		return errs.New(errs.InvalidArgument, "context %d is larger than the %d allowed", o.Context, MaxContext)
	}
	if o.MaxBytes < 0 {
		return errs.New(errs.InvalidArgument, "max_bytes must not be negative, got %d", o.MaxBytes)
	}
	if o.Rev != "" {
		if err := ValidateRev(o.Rev); err != nil {
			return err
		}
	}
	if len(o.Paths) > maxPaths {
		return errs.New(errs.InvalidArgument, "%d path filters given, at most %d allowed", len(o.Paths), maxPaths)
	}
	for _, p := range o.Paths {
		if err := ValidatePathspec(p); err != nil {
			return err
		}
	}
	for _, p := range o.Exclude {
		if p == "" || strings.ContainsRune(p, 0) {
			return errs.New(errs.InvalidArgument, "exclude path %q is empty or has a NUL", p)
		}
	}
	return nil
}

// Diff returns the patch selected by o (capped at o.MaxBytes, cut at a line
// boundary when possible) and its --numstat -z file list. The two git calls
// run concurrently; if either fails, the other is cancelled. Bytes is the
// full patch size unless the patch runs more than 32 MiB past MaxBytes, in
// which case git is cut off and Bytes counts what was read.
func (g *Git) Diff(ctx context.Context, dir string, o DiffOptions) (Diff, error) {
	if err := validateDiffOptions(o); err != nil {
		return Diff{}, err
	}
	maxBytes := o.MaxBytes
	if maxBytes == 0 {
		maxBytes = DefaultDiffBytes
	}
	patchArgs := g.diffArgs(ctx, o, false)
	statArgs := g.diffArgs(ctx, o, true)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		statRes runResult
		statErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		statRes, statErr = g.run(ctx, dir, DefaultMaxOutput, 0, statArgs)
		if statErr != nil {
			cancel()
		}
	}()
	patchRes, patchErr := g.run(ctx, dir, maxBytes, defaultDrain, patchArgs)
	if patchErr != nil {
		cancel()
	}
	wg.Wait()
	if patchErr != nil && (statErr == nil || errs.CodeOf(patchErr) != errs.Cancelled) {
		return Diff{}, diffError(patchErr, o)
	}
	if statErr != nil {
		return Diff{}, diffError(statErr, o)
	}
	files, err := ParseNumstat(statRes.out, statRes.truncated)
	if err != nil {
		return Diff{}, errs.Wrap(errs.Internal, err, "unexpected git diff --numstat output: %v", err)
	}
	patch := patchRes.out
	if patchRes.truncated {
		if i := bytes.LastIndexByte(patch, '\n'); i >= 0 {
			patch = patch[:i+1]
		}
	}
	return Diff{
		Patch:     string(patch),
		Truncated: patchRes.truncated,
		Bytes:     int(patchRes.total),
		Files:     files,
	}, nil
}

// diffError rewrites an unknown-revision failure into a clear message.
func diffError(err error, o DiffOptions) error {
	e := errs.From(err)
	if e.Code == errs.NotFound && o.Rev != "" {
		return errs.Wrap(errs.NotFound, err, "revision %q not found in the repository: %s", o.Rev, e.Message)
	}
	return err
}

// ParseNumstat parses `git diff --numstat -z` output: "A\tD\tpath\0" or, for
// a rename or copy, "A\tD\t\0orig\0path\0"; binary files show "-\t-\t".
// With partial set (the output was cut), a trailing incomplete record is
// dropped instead of reported as an error. The result is never nil.
func ParseNumstat(b []byte, partial bool) ([]FileStat, error) {
	files := []FileStat{}
	next := func() ([]byte, bool) {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			if partial || len(b) == 0 {
				return nil, false
			}
			rec := b
			b = nil
			return rec, true
		}
		rec := b[:i]
		b = b[i+1:]
		return rec, true
	}
	for len(b) > 0 {
		rec, ok := next()
		if !ok {
			break
		}
		a, rest, ok1 := bytes.Cut(rec, []byte{'\t'})
		d, path, ok2 := bytes.Cut(rest, []byte{'\t'})
		if !ok1 || !ok2 {
			return nil, errs.New(errs.InvalidArgument, "malformed numstat record %q", truncRec(rec))
		}
		fs := FileStat{}
		if string(a) == "-" && string(d) == "-" {
			fs.Binary = true
		} else {
			var err1, err2 error
			fs.Added, err1 = strconv.Atoi(string(a))
			fs.Deleted, err2 = strconv.Atoi(string(d))
			if err1 != nil || err2 != nil || fs.Added < 0 || fs.Deleted < 0 {
				return nil, errs.New(errs.InvalidArgument, "malformed numstat counts %q", truncRec(rec))
			}
		}
		if len(path) == 0 {
			orig, ok := next()
			if !ok {
				break
			}
			dst, ok := next()
			if !ok {
				break
			}
			if len(orig) == 0 || len(dst) == 0 {
				return nil, errs.New(errs.InvalidArgument, "malformed numstat rename record")
			}
			fs.OrigPath, fs.Path = string(orig), string(dst)
		} else {
			fs.Path = string(path)
		}
		files = append(files, fs)
	}
	return files, nil
}

func truncRec(b []byte) []byte {
	if len(b) > 120 {
		return b[:120]
	}
	return b
}
