package op

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/redact"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/secrets"
)

// Secrets are the secret paths and values of checkouts (the secrets
// cache): what the sandbox closes and what redaction knows.
type Secrets interface {
	Get(ctx context.Context, root string) (secrets.Set, error)
}

// secretSet returns the secret set of root; a nil Secrets knows none.
// Within one call (see withSecretMemo) the set is revalidated once.
func (e *Env) secretSet(ctx context.Context, root string) (secrets.Set, error) {
	return e.secretSetOf(ctx, root, false)
}

// freshSecrets is a Secrets that can walk the tree at once (secrets.Cache).
type freshSecrets interface {
	Fresh(ctx context.Context, root string) (secrets.Set, error)
}

// secretSetOf is secretSet; fresh walks the tree first (a root no watcher
// follows: a secret file created a moment ago is closed to the next
// command, not to one a background walk sees seconds later).
func (e *Env) secretSetOf(ctx context.Context, root string, fresh bool) (secrets.Set, error) {
	if e.Secrets == nil {
		return secrets.Set{}, nil
	}
	m, _ := ctx.Value(secretMemoKey{}).(*secretMemo)
	if m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		if s, ok := m.sets[root]; ok {
			return s, nil
		}
	}
	var s secrets.Set
	var err error
	if f, ok := e.Secrets.(freshSecrets); ok && fresh {
		s, err = f.Fresh(ctx, root)
	} else {
		s, err = e.Secrets.Get(ctx, root)
	}
	if err == nil && m != nil {
		m.sets[root] = s
	}
	return s, err
}

// secretMemo holds the secret sets one call has looked up.
type secretMemo struct {
	mu   sync.Mutex // protects sets (a batch's lanes share the call's context)
	sets map[string]secrets.Set
}

type secretMemoKey struct{}

// withSecretMemo returns ctx with a memo of secret sets, unless it has one.
func withSecretMemo(ctx context.Context) context.Context {
	if _, ok := ctx.Value(secretMemoKey{}).(*secretMemo); ok {
		return ctx
	}
	return context.WithValue(ctx, secretMemoKey{}, &secretMemo{sets: map[string]secrets.Set{}})
}

// RedactorFor returns the redactor of a checkout: the rules and the exact
// values of its secret files (and their base64 and hex forms).
func (e *Env) RedactorFor(ctx context.Context, root string) *redact.Redactor {
	set, err := e.secretSet(ctx, root)
	if err != nil || set.Known == nil {
		return e.Redactor
	}
	return e.Redactor.WithKnown(set.Known)
}

// KnownFor returns a redactor of only the known secret values of a checkout
// (read_file shows code as it is, but never a value of a secret file).
func (e *Env) KnownFor(ctx context.Context, root string) *redact.Redactor {
	set, err := e.secretSet(ctx, root)
	if err != nil || set.Known == nil {
		return nil
	}
	e.knownOnce.Do(func() { e.knownBase = redact.New(nil) })
	return e.knownBase.WithKnown(set.Known)
}

// currentSecrets is a Secrets that can answer before the history of a
// checkout is learned (secrets.Cache).
type currentSecrets interface {
	Current(ctx context.Context, root string) (secrets.Set, <-chan struct{}, error)
}

// KnownNow is KnownFor without the wait for the first learning of a
// checkout's history: the redactor knows the values of the work tree, the
// index and HEAD, and while the history is learned pending is a channel
// closed when it is (then KnownFor knows its values too). Only for reads
// of the work tree (read_file): what can print history takes KnownFor or
// RedactorFor.
func (e *Env) KnownNow(ctx context.Context, root string) (k *redact.Redactor, pending <-chan struct{}) {
	cur, ok := e.Secrets.(currentSecrets)
	if m, _ := ctx.Value(secretMemoKey{}).(*secretMemo); !ok || m != nil {
		return e.KnownFor(ctx, root), nil
	}
	set, pending, err := cur.Current(ctx, root)
	if err != nil || set.Known == nil {
		return nil, nil
	}
	e.knownOnce.Do(func() { e.knownBase = redact.New(nil) })
	return e.knownBase.WithKnown(set.Known), pending
}

// Policy returns the sandbox policy of profile in repository r: the
// checkout with its secret paths closed, git's directories outside it, the
// tool caches.
func (e *Env) Policy(ctx context.Context, profile sandbox.Profile, r runtime.RepoEntry) (sandbox.Policy, error) {
	root := r.Repo.Root
	p := sandbox.Policy{Profile: profile, Root: root}
	p.GitDirs = append(p.GitDirs, gitDirsOutside(root, r.Repo.CommonDir)...)
	// A target has no watcher telling the secrets cache what appeared:
	// its tree is walked for every command (targets are small by nature;
	// a repository's watcher marks its set stale instead).
	set, err := e.secretSetOf(ctx, root, profile == sandbox.Target)
	if err != nil {
		return p, errs.Wrap(errs.Internal, err, "find the secret files of %s: %v", root, err)
	}
	if set.HistoryPending {
		// An old blob of a secret file would come back through git
		// cat-file or git log -p, unredacted.
		return p, errs.New(errs.Unavailable, "still learning the secret values in the history of %s; retry in a few seconds", root)
	}
	p.Secrets = append(append(append(p.Secrets, set.Files...), set.Dirs...), set.Links...)
	p.Secrets = append(p.Secrets, looseObjects(root, set.Blobs)...)
	p.Caches = sandbox.CacheDirs(os.Getenv("HOME"), os.Environ())
	return p, nil
}

// looseObjects returns the loose objects of blobs in the checkout's own
// .git (relative paths): the contents of secret files, which a confined
// process reading .git/objects would otherwise get past the work tree's
// closed file. Packed objects cannot be closed one by one.
func looseObjects(root string, blobs []string) []string {
	if fi, err := os.Lstat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		return nil
	}
	var out []string
	for _, oid := range blobs {
		if len(oid) < 4 {
			continue
		}
		rel := ".git/objects/" + oid[:2] + "/" + oid[2:]
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
			out = append(out, rel)
		}
	}
	return out
}

// gitDirsOutside returns the git directories of a work tree that lie outside
// it: the common dir, and a linked worktree's own git dir.
func gitDirsOutside(root, common string) []string {
	var out []string
	add := func(d string) {
		if d == "" {
			return
		}
		d = filepath.Clean(d)
		if d == root || strings.HasPrefix(d, root+"/") {
			return
		}
		for _, o := range out {
			if o == d {
				return
			}
		}
		out = append(out, d)
	}
	add(common)
	if b, err := os.ReadFile(filepath.Join(root, ".git")); err == nil {
		if gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
			gd = strings.TrimSpace(gd)
			if !filepath.IsAbs(gd) {
				gd = filepath.Join(root, gd)
			}
			add(gd)
		}
	}
	return out
}

// Confine prepares the confinement of one command of profile in r (tweak
// adjusts the policy: writable dirs, network). It returns nil when the
// sandbox is off.
func (e *Env) Confine(ctx context.Context, profile sandbox.Profile, r runtime.RepoEntry, tweak func(*sandbox.Policy)) (*sandbox.Prepared, error) {
	if e.Sandbox == nil || e.Sandbox.Mode() == sandbox.Off {
		return nil, nil
	}
	p, err := e.Policy(ctx, profile, r)
	if err != nil {
		return nil, err
	}
	if tweak != nil {
		tweak(&p)
	}
	return e.Sandbox.Prepare(p)
}

// Confines reports whether processes of profile are confined by the kernel.
func (e *Env) Confines(profile sandbox.Profile) bool {
	return e.Sandbox != nil && e.Sandbox.Confines(profile)
}

// CommandEnv is the environment of a command that runs in dir: the
// daemon's, scrubbed of secret-looking variables and of every variable
// that changes what git reads or runs, with git's repository-defined
// programs neutralised for any git the command runs, through any wrapper.
func CommandEnv(dir string) ([]string, error) {
	env := gitx.StripGitEnv(proc.ScrubEnv(os.Environ(), nil))
	ge, err := gitx.ConfigEnv(dir)
	if err != nil {
		return nil, err
	}
	return append(env, ge...), nil
}

// ApplyConfinement sets the confinement of prep on spec: the runner's hook,
// the pids ceiling and the environment (HOME, TMPDIR in the private tmp).
func ApplyConfinement(spec *proc.Spec, prep *sandbox.Prepared) {
	if prep == nil {
		return
	}
	spec.Confine = prep
	spec.PidsMax = prep.PidsMax()
	spec.Env = prep.Env(spec.Env)
}

// ConfineGit confines every git call of harnessd's own in dir with the
// read profile (gitx.Git.Confine): the checkout that holds dir, its git
// directories and the user's ignore files readable (harnessd reads the
// user's git configuration itself: gitx passes its allowlisted variables
// on), nothing writable but a private tmp and writable (the git dirs of a
// stage or commit, a new worktree's place), no network. The secret files
// stay open to it (git hashes tracked ones to tell whether they changed):
// harnessd filters and redacts what it returns. git keeps the hardened
// environment gitx gives it.
func (e *Env) ConfineGit(ctx context.Context, dir string, writable []string) (func(*exec.Cmd) error, func(), error) {
	none := func() {}
	if !e.Confines(sandbox.Read) {
		return func(cmd *exec.Cmd) error { return cmd.Start() }, none, nil
	}
	root := worktreeTop(dir)
	return e.confined(sandbox.Policy{Profile: sandbox.Read, Root: root, GitDirs: gitDirsOutside(root, commonDir(root)), ReadOnly: gitx.UserConfigFiles(),
		Writable: writable, Metadata: len(writable) > 0, OwnGit: true})
}

// confined prepares p and returns how to start a command under it and
// what to call once it ended (harnessd's own processes: git, rg).
func (e *Env) confined(p sandbox.Policy) (func(*exec.Cmd) error, func(), error) {
	prep, err := e.Sandbox.Prepare(p)
	if err != nil || prep == nil {
		return func(cmd *exec.Cmd) error { return cmd.Start() }, func() {}, err
	}
	exited := make(chan struct{})
	var once sync.Once
	done := func() {
		once.Do(func() { close(exited); prep.Done() })
	}
	return func(cmd *exec.Cmd) error { return prep.Start(cmd, exited) }, done, nil
}

// worktreeTop returns the nearest directory at or above dir that holds a
// .git entry (dir itself when there is none).
func worktreeTop(dir string) string {
	dir = filepath.Clean(dir)
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// commonDir returns the common git directory of a linked worktree at root
// ("" for a main checkout, whose .git is inside it).
func commonDir(root string) string {
	b, err := os.ReadFile(filepath.Join(root, ".git"))
	if err != nil {
		return ""
	}
	gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(root, gd)
	}
	c, err := os.ReadFile(filepath.Join(gd, "commondir"))
	if err != nil {
		return ""
	}
	cd := strings.TrimSpace(string(c))
	if !filepath.IsAbs(cd) {
		cd = filepath.Join(gd, cd)
	}
	return filepath.Clean(cd)
}

// StartSearch starts cmd (harnessd's own rg, or the git that lists a
// search's files) in dir under the read profile, as an agent's command
// would run: dir's secret paths closed, its git directories and the
// user's ignore files readable, nothing writable but a private tmp, no
// network (search.Searcher.Start). It returns the wait that ends cmd and
// releases the confinement.
func (e *Env) StartSearch(ctx context.Context, dir string, cmd *exec.Cmd) (func() error, error) {
	if !e.Confines(sandbox.Read) {
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return cmd.Wait, nil
	}
	root := worktreeTop(dir)
	set, err := e.secretSet(ctx, root)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "find the secret files of %s: %v", root, err)
	}
	p := sandbox.Policy{Profile: sandbox.Read, Root: root, GitDirs: gitDirsOutside(root, commonDir(root)), ReadOnly: gitx.UserConfigFiles()}
	p.Secrets = append(append(append(p.Secrets, set.Files...), set.Dirs...), set.Links...)
	start, done, err := e.confined(p)
	if err != nil {
		return nil, err
	}
	if err := start(cmd); err != nil {
		done()
		return nil, err
	}
	return func() error {
		defer done()
		return cmd.Wait()
	}, nil
}
