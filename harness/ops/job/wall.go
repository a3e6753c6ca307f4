package job

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/proc"
	"github.com/harnessd/harnessd/internal/sandbox"
	"github.com/harnessd/harnessd/internal/wall"
	"github.com/harnessd/harnessd/messages"
)

// Walls returns what the sandbox did to a failed confined process
// (wall.Diagnose): the layer, the path or syscall and the fix, judged
// against the policy the process was confined with, rebuilt here as
// tool's operation built it: profile in the checkout e, adjusted by tweak.
// dir is the process's working directory, output its stderr and stdout
// (head and tail). None when the process exited 0, the sandbox confines
// nothing for profile, or no line of the output is a wall's message; a
// policy that cannot be rebuilt gives none either (the answer stays as
// it was).
func Walls(ctx context.Context, env *op.Env, tool string, profile sandbox.Profile, e runtime.RepoEntry, tweak func(*sandbox.Policy),
	dir string, exitCode int, output string) []wall.Diagnosis {
	if exitCode == 0 || !env.Confines(profile) || !wall.Suspect(output) {
		return nil
	}
	p, err := env.Policy(ctx, profile, e)
	if err != nil {
		return nil
	}
	if tweak != nil {
		tweak(&p)
	}
	return wall.Diagnose(exitCode, output, wallFacts(env, tool, profile, p, dir))
}

// wallFacts are the facts of policy p of profile as wall judges them.
func wallFacts(env *op.Env, tool string, profile sandbox.Profile, p sandbox.Policy, dir string) wall.Facts {
	fast := profile == sandbox.Read || profile == sandbox.Target
	f := wall.Facts{
		Confined: true, Tool: tool, Namespaces: namespaced(env.Sandbox, profile),
		Root: p.Root, Dir: dir, Network: p.Network, Secrets: p.Secrets, Hidden: env.Hidden,
		Home: os.Getenv("HOME"), Exists: exists,
	}
	f.Writable = append(f.Writable, p.Writable...)
	f.ReadOnly = append(append(f.ReadOnly, p.GitDirs...), p.ReadOnly...)
	if fast {
		f.ReadOnly = append(f.ReadOnly, p.Caches...)
	} else {
		f.Writable = append(f.Writable, p.Caches...)
	}
	f.Visible = visible(p, f.Home)
	f.Tmp = "/tmp"
	if !f.Namespaces {
		// The private tmp of a command confined by Landlock alone lies
		// in the sandbox's tmp root (the default one: a configured root
		// only narrows what is claimed).
		f.Tmp = filepath.Join(os.TempDir(), "harnessd-sandbox-"+strconv.Itoa(os.Getuid()))
	}
	return f
}

// namespaced reports whether the sandbox confines profile with namespaces.
func namespaced(s *sandbox.Sandbox, profile sandbox.Profile) bool {
	for _, l := range s.Status() {
		if l.Profile == profile {
			return l.Mode == "namespaces"
		}
	}
	return false
}

// systemDirs are the system directories the sandbox shows every profile
// (sandbox.systemReadDirs).
func systemDirs() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc", "/nix", "/snap", "/var/lib/snapd/snap"}
}

// visible returns the directories a confined process sees: the system
// directories, the directories on the daemon's PATH (one under $HOME
// brings its first component under $HOME, as the sandbox mounts it), the
// checkout, its git directories and the caches.
func visible(p sandbox.Policy, home string) []string {
	out := systemDirs()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		if home != "" && strings.HasPrefix(d, home+"/") {
			d = filepath.Join(home, strings.SplitN(strings.TrimPrefix(d, home+"/"), "/", 2)[0])
		}
		out = append(out, d)
	}
	out = append(out, p.Root)
	out = append(out, p.GitDirs...)
	out = append(out, p.Caches...)
	out = append(out, p.ReadOnly...)
	return append(out, p.Writable...)
}

// exists resolves a program on the daemon's PATH, or an absolute path on
// its file system, following symlinks (wall.Facts.Exists).
func exists(p string) (string, bool) {
	if strings.Contains(p, "/") {
		if !filepath.IsAbs(p) {
			return "", false
		}
		if _, err := os.Stat(p); err != nil {
			return "", false
		}
	} else {
		lp, err := exec.LookPath(p)
		if err != nil || !filepath.IsAbs(lp) {
			return "", false
		}
		p = lp
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, true
	}
	return p, true
}

// policyOf adjusts a job's policy as Confiner does: the network when
// allowed, its worktree (or the checkout under its durable lease)
// writable.
func policyOf(j messages.Job, root string) func(*sandbox.Policy) {
	return func(p *sandbox.Policy) {
		p.Network = j.Network
		if j.Worktree != "" || j.Writes {
			p.Writable = []string{root}
		}
	}
}

// CheckRequestPrefix starts the request id of the job of an unfocused
// check (run_check's durable path).
const CheckRequestPrefix = "check-"

// jobWalls returns the walls a failed job ran into, from the head and
// tail of its logs.
func jobWalls(ctx context.Context, env *op.Env, j messages.Job, stdout, stderr *proc.Output) []wall.Diagnosis {
	if !Final(j.State) || j.State == messages.JobSucceeded || j.ExitCode == nil || (stdout == nil && stderr == nil) {
		return nil
	}
	e, err := env.Repo(j.RepoID)
	if err != nil {
		return nil
	}
	root := j.Root
	if j.Worktree != "" {
		root = j.Worktree
		e.Repo.Root = j.Worktree
	}
	dir := root
	if j.Cwd != "" {
		dir = filepath.Join(root, filepath.FromSlash(j.Cwd))
	}
	var text strings.Builder
	for _, o := range []*proc.Output{stderr, stdout} {
		if o != nil {
			text.WriteString(o.Text)
			text.WriteByte('\n')
		}
	}
	tool := wall.ToolJobStart
	if strings.HasPrefix(j.RequestID, CheckRequestPrefix) {
		tool = wall.ToolRunCheck // an unfocused check: its fixes are run_check's
	}
	return Walls(ctx, env, tool, sandbox.Job, e, policyOf(j, root), dir, *j.ExitCode, text.String())
}
