package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/classify"
	"github.com/harnessd/harnessd/internal/patch"
	"github.com/harnessd/harnessd/internal/preimage"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// UndoConfig bounds the snapshot taken before a job that writes its
// checkout in place (0 = preimage.DefaultTreeMaxBytes and
// DefaultTreeMaxFiles).
type UndoConfig struct {
	MaxBytes int64
	MaxFiles int
}

// Undo returns the undo of jobs that write their checkout in place (a
// dependency of the jobs actor, see docs/undo.md): before the process
// starts, a snapshot of what the job may change, every content kept in
// the pre-image store and synced, the snapshot itself saved beside the
// job's logs; after it ended (or at boot, when a restart interrupted it),
// the comparison with the checkout, stored as the job's receipt.
func Undo(env *op.Env, cfg UndoConfig) actors.JobUndo {
	return &undoer{env: env, cfg: cfg, last: map[string]*preimage.Tree{}}
}

type undoer struct {
	env *op.Env
	cfg UndoConfig

	mu   sync.Mutex                // protects last
	last map[string]*preimage.Tree // checkout root -> its newest tree
}

// maxCachedTrees bounds the trees kept to spare the next snapshot reading
// files that did not change.
const maxCachedTrees = 8

func beforeFile(j messages.Job) string {
	return filepath.Join(j.LogDir, "undo-before-"+strconv.Itoa(j.Attempt)+".json")
}

func receiptFile(j messages.Job) string {
	return filepath.Join(j.LogDir, "undo-receipt-"+strconv.Itoa(j.Attempt))
}

func (u *undoer) cached(root string) *preimage.Tree {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last[root]
}

func (u *undoer) remember(root string, t *preimage.Tree) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.last[root]; !ok && len(u.last) >= maxCachedTrees {
		for k := range u.last {
			delete(u.last, k)
			break
		}
	}
	u.last[root] = t
}

// Before keeps the pre-images of everything j may change.
func (u *undoer) Before(ctx context.Context, j messages.Job) error {
	if u.env.PreImages == nil || j.LogDir == "" {
		return nil
	}
	if gs, ok, _ := parseGitState(j.Argv); ok && gs.refsOnly() {
		return nil // it changes refs only: its plan keeps them (gitstate.go)
	}
	root := j.Root
	scope, ignored := undoScope(root, j.Argv, j.Cwd)
	skip, skipped, err := u.ignoredSkip(ctx, root, ignored)
	if err != nil {
		return err
	}
	deny := u.env.DenyFor(root)
	t, err := preimage.TakeTree(ctx, preimage.TreeOptions{
		Root: root, Scope: scope, Ignored: ignored, Skip: skip,
		Secret:   func(rel string) bool { _, ok := deny.Match(rel); return ok },
		MaxBytes: u.cfg.MaxBytes, MaxFiles: u.cfg.MaxFiles, Store: u.env.PreImages, Prev: u.cached(root), Now: u.env.Now,
	})
	if err != nil {
		return err
	}
	t.Skipped = skipped
	if err := u.env.PreImages.Sync(); err != nil {
		return err
	}
	if err := preimage.SaveTree(beforeFile(j), t); err != nil {
		return err
	}
	u.remember(root, t)
	return nil
}

// ignoredSkip returns, unless ignored files count, the paths git ignores
// in the checkout (dir/ for a whole directory) and a Skip of them.
func (u *undoer) ignoredSkip(ctx context.Context, root string, ignored bool) (func(string, bool) bool, []string, error) {
	if ignored || u.env.Git == nil {
		return nil, nil, nil
	}
	out, _, err := u.env.Git.Run(ctx, root, 0, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil {
		return nil, nil, errs.Wrap(errs.CodeOf(err), err, "list the checkout's ignored files before the job: %v", errs.From(err).Message)
	}
	var list []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) > 0 {
			list = append(list, string(p))
		}
	}
	sort.Strings(list)
	return skipOf(list), list, nil
}

// skipOf is the Skip of a list of ignored paths (dir/ names a directory).
func skipOf(list []string) func(string, bool) bool {
	set := make(map[string]bool, len(list))
	for _, p := range list {
		set[p] = true
	}
	return func(rel string, dir bool) bool {
		if dir {
			return set[rel+"/"]
		}
		return set[rel]
	}
}

// After stores the receipt of what j changed since Before.
func (u *undoer) After(ctx context.Context, j messages.Job) (string, error) {
	if j.LogDir == "" {
		return "", nil
	}
	if b, err := os.ReadFile(receiptFile(j)); err == nil && len(b) > 0 {
		return string(b), nil // made before a restart
	}
	before, err := preimage.LoadTree(beforeFile(j))
	if errors.Is(err, fs.ErrNotExist) {
		if gs, ok, _ := parseGitState(j.Argv); ok && gs.refsOnly() {
			return u.store(ctx, j, jobReceipt(j, nil), nil) // gitstate.go: its refs
		}
		return "", nil // the job never got to start
	}
	if err != nil {
		return "", errs.Wrap(errs.Internal, err, "read the snapshot taken before the job: %v", err)
	}
	root := j.Root
	var skip func(string, bool) bool
	if !before.Ignored {
		// Left out: what was ignored before or is now, unless the
		// snapshot before has it (a job that edits .gitignore neither
		// hides a file it removed nor shows ignored ones as created).
		now, _, err := u.ignoredSkip(ctx, root, false)
		if err != nil {
			return "", err
		}
		was := skipOf(before.Skipped)
		skip = func(rel string, dir bool) bool {
			if !was(rel, dir) && (now == nil || !now(rel, dir)) {
				return false
			}
			return !before.Has(rel)
		}
	}
	deny := u.env.DenyFor(root)
	after, err := preimage.TakeTree(ctx, preimage.TreeOptions{
		Root: root, Scope: before.Scope, Ignored: before.Ignored, Skip: skip,
		Secret:   func(rel string) bool { _, ok := deny.Match(rel); return ok },
		MaxBytes: -1, MaxFiles: -1, Prev: before, Now: u.env.Now,
	})
	if err != nil {
		return "", err
	}
	after.Skipped = before.Skipped
	return u.store(ctx, j, jobReceipt(j, preimage.Diff(before, after)), after)
}

// store stores r, the receipt of j (with the refs a git-state job moved,
// gitstate.go), unless it changed nothing; after is the tree it left.
func (u *undoer) store(ctx context.Context, j messages.Job, r *op.Receipt, after *preimage.Tree) (string, error) {
	if _, ok, _ := parseGitState(j.Argv); ok {
		if err := u.addGitState(ctx, j, r); err != nil {
			return "", err
		}
		if len(r.Changes) == 0 && len(r.Refs) == 0 {
			return "", nil // it changed nothing (it failed before)
		}
	}
	now := u.env.Now()
	r.ReceiptID = "rcpt_" + strconv.FormatInt(now.UnixNano(), 36) + "_" + j.ID
	r.At = now.UTC()
	if err := u.env.Store.PutSync(persistence.ReceiptKey(j.RepoID, uint64(now.UnixNano())), r); err != nil {
		return "", errs.Wrap(errs.CodeOf(err), err, "store the job's receipt: %v", errs.From(err).Message)
	}
	if err := os.WriteFile(receiptFile(j), []byte(r.ReceiptID), 0o600); err != nil {
		u.env.Logger.Warn("the job's receipt is stored but its marker is not: a restart now would store it again")
	}
	if after != nil {
		u.remember(j.Root, after)
	}
	return r.ReceiptID, nil
}

// jobReceipt is the receipt of a job's changes: per path the digests
// before and after, and the pre-image revert restores (absent for what the
// job created).
func jobReceipt(j messages.Job, deltas []preimage.Delta) *op.Receipt {
	r := &op.Receipt{RequestID: j.RequestID, Operation: "job_start", RepoID: j.RepoID, CheckoutID: j.CheckoutID,
		LeaseID: j.LeaseID, RunID: j.CallerRunID, Changes: []patch.Change{}, Resources: j.Resources}
	for _, d := range deltas {
		ch, refs := deltaChange(d)
		r.Changes = append(r.Changes, ch)
		r.PreImages = append(r.PreImages, refs...)
	}
	return r
}

// deltaChange is the change and pre-images of one path a job changed.
func deltaChange(d preimage.Delta) (patch.Change, []preimage.Ref) {
	b, a := d.Before, d.After
	ch := patch.Change{Path: d.Path}
	ref := preimage.Ref{Path: d.Path}
	isDir := func(e *preimage.Entry) bool { return e != nil && e.Kind == preimage.KindDir }
	switch {
	case isDir(b) && isDir(a):
		ch.Op = "chmod"
		ref.Dir, ref.Mode = true, mode(b.Mode)
		return ch, []preimage.Ref{ref}
	case isDir(b) && a == nil:
		ch.Op = "rmdir"
		ref.Dir, ref.Mode = true, mode(b.Mode)
		return ch, []preimage.Ref{ref}
	case b == nil && isDir(a):
		ch.Op = "mkdir"
		ref.Dir, ref.Absent = true, true
		return ch, []preimage.Ref{ref}
	case isDir(b) || isDir(a):
		// A directory became a file or the reverse: its files are
		// restored one by one, not the kind of the path.
		ch.Op = "write"
		ref.NotKept = "a directory was replaced by a file or the reverse: revert does not restore that"
		if !isDir(b) {
			ch.Before, ref.SHA256 = b.SHA256, b.SHA256
		}
		if !isDir(a) {
			ch.After = a.SHA256
		}
		return ch, []preimage.Ref{ref}
	}
	switch {
	case b == nil:
		ch.Op, ch.After = "create", a.SHA256
		ref.Absent = true
	case a == nil:
		ch.Op, ch.Before = "delete", b.SHA256
	default:
		ch.Op, ch.Before, ch.After = "write", b.SHA256, a.SHA256
	}
	if b != nil {
		ref.SHA256, ref.Mode, ref.Link, ref.NotKept = b.SHA256, mode(b.Mode), b.Kind == preimage.KindLink, b.NotKept
		if ref.Link {
			ref.Mode = ""
		}
	}
	return ch, []preimage.Ref{ref}
}

func mode(m uint32) string { return fmt.Sprintf("%04o", fs.FileMode(m).Perm()) }

// undoScope returns what a job may change, relative to the checkout:
// the operands of rm and find (the subtrees they name, ignored files
// included), else the whole checkout (nil), ignored files included when
// the command is destructive (git clean -x removes them) and left out
// otherwise (build output and dependencies are made again, not undone).
func undoScope(root string, argv []string, cwd string) ([]string, bool) {
	if _, ok, _ := parseGitState(argv); ok {
		return nil, false // git reset --hard changes tracked paths (an ignored one in the way is refused)
	}
	destructive := classify.Argv(argv).Class == classify.Destructive
	ops, ok := operands(argv)
	if !ok {
		return nil, destructive
	}
	var scope []string
	for _, o := range ops {
		p := path.Clean(path.Join(cwd, o))
		if path.IsAbs(o) || p == "." || p == ".." || strings.HasPrefix(p, "../") || throughLink(root, p, strings.HasSuffix(o, "/")) {
			return nil, destructive
		}
		scope = append(scope, p)
	}
	return scope, true
}

// throughLink reports whether a path of the scope goes through a symbolic
// link (or is one, named with a trailing slash): the command may then
// reach what the walk of its operand would not.
func throughLink(root, rel string, slash bool) bool {
	parts := strings.Split(rel, "/")
	for i := range parts {
		if i == len(parts)-1 && !slash {
			break
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(strings.Join(parts[:i+1], "/"))))
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// operands returns the paths an rm or a find (without -exec, -ok or
// output files, not following links) names, or false for any other
// command: only those are known to touch nothing else.
func operands(argv []string) ([]string, bool) {
	if len(argv) < 2 {
		return nil, false
	}
	switch filepath.Base(argv[0]) {
	case "rm":
		var out []string
		flags := true
		for _, a := range argv[1:] {
			switch {
			case flags && a == "--":
				flags = false
			case flags && len(a) > 1 && a[0] == '-':
			case a == "":
				return nil, false
			default:
				out = append(out, a)
			}
		}
		return out, len(out) > 0
	case "find":
		args := argv[1:]
		for len(args) > 0 && (args[0] == "-H" || args[0] == "-P" || strings.HasPrefix(args[0], "-O") || args[0] == "-D") {
			if args[0] == "-D" && len(args) > 1 {
				args = args[1:]
			}
			args = args[1:]
		}
		var out []string
		for len(args) > 0 && args[0] != "" && args[0][0] != '-' && args[0] != "(" && args[0] != "!" {
			out = append(out, args[0])
			args = args[1:]
		}
		for _, a := range args {
			switch a {
			case "-L", "-follow", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls":
				return nil, false
			}
		}
		if len(out) == 0 {
			out = []string{"."}
		}
		return out, true
	}
	return nil, false
}
