package job

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/runtime"
	"github.com/harnessd/harnessd/internal/classify"
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

// wallFacts are the facts of policy p of profile as wall judges them, as
// the sandbox says it confines (what it shows, whether in namespaces,
// where the private tmp lies).
func wallFacts(env *op.Env, tool string, profile sandbox.Profile, p sandbox.Policy, dir string) wall.Facts {
	ns := env.Sandbox.Namespaced(profile)
	f := wall.Facts{
		Confined: true, Tool: tool, Namespaces: ns,
		Root: p.Root, Dir: dir, Network: p.Network, Secrets: p.Secrets, Hidden: env.Hidden,
		Home: os.Getenv("HOME"), Exists: exists, Visible: env.Sandbox.Visible(p),
	}
	f.Writable = append(f.Writable, p.Writable...)
	f.ReadOnly = append(append(f.ReadOnly, p.GitDirs...), p.ReadOnly...)
	if ns {
		// Copy-on-write layers: the caches take writes (dropped later).
		f.Writable = append(f.Writable, p.Caches...)
	} else {
		f.ReadOnly = append(f.ReadOnly, p.Caches...)
	}
	f.Tmp = "/tmp"
	if !ns {
		// The private tmp of a command confined by Landlock alone lies
		// in the sandbox's tmp root.
		f.Tmp = env.Sandbox.TmpRoot()
	}
	return f
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
		if e := classify.Argv(j.Argv).Effect; j.Network && e != nil && e.Kind == classify.RemoteWrite {
			// A remote write connects to its registry's ports only.
			p.ConnectPorts = e.Ports
		}
		if j.Worktree != "" || j.Writes {
			p.Writable = []string{root}
		}
	}
}

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
	if strings.HasPrefix(j.RequestID, op.CheckJobPrefix) {
		tool = wall.ToolRunCheck // an unfocused check: its fixes are run_check's
	}
	return Walls(ctx, env, tool, sandbox.Job, e, policyOf(j, root), dir, *j.ExitCode, text.String())
}
