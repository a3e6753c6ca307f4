package classify

import (
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
)

// EffectKind names destructive or remote work whose effect the classifier
// can state exactly, so a person can approve it (see [Effect]).
type EffectKind string

// The effect kinds.
const (
	// WorkspaceDelete removes or overwrites files, branches or tags of the
	// checkout, and only those the command names (rm -r of relative
	// paths, git clean -f, git reset --hard, find -delete, ...).
	WorkspaceDelete EffectKind = "workspace_delete"
	// RemoteWrite writes to a registry or service the command names
	// (npm publish, cargo publish, twine upload, gh pr merge, a deploy).
	RemoteWrite EffectKind = "remote_write"
	// GitPush is a git push in argv: harnessd's typed git_push does it,
	// with the user's credential the job never holds.
	GitPush EffectKind = "git_push"
)

// RemotePorts are the TCP ports a remote write may connect to besides a
// port its arguments name: HTTPS, HTTP and SSH (registries, git hosts).
var RemotePorts = []int{443, 80, 22}

// Effect is what a destructive or remote command does, when the classifier
// can state it exactly: the Durable Path may run such a command behind a
// person's approval. A destructive or remote [Result] without an Effect
// (a catastrophic command, a path outside the checkout, an implicit remote
// write, anything inside a shell script) is never run.
type Effect struct {
	Kind EffectKind `json:"kind"`
	// Removes lists what a workspace delete removes or overwrites, as the
	// command names it ("pkg", "untracked files in .", "branch topic").
	Removes []string `json:"removes,omitempty"`
	// Remote is the registry, service, repository or remote written to
	// ("the default npm registry" when the command names none).
	Remote string `json:"remote,omitempty"`
	// Target is what is written there: the package, the pull request, the
	// release, the image, the refspecs.
	Target string `json:"target,omitempty"`
	// Force says a git push may overwrite remote history.
	Force bool `json:"force,omitempty"`
	// Ports are the TCP ports a remote write connects to: RemotePorts and
	// any port a URL in its arguments names.
	Ports []int `json:"ports,omitempty"`
}

// Describe says in one line what the effect does, for a person.
func (e *Effect) Describe() string {
	if e == nil {
		return ""
	}
	switch e.Kind {
	case WorkspaceDelete:
		return "removes " + strings.Join(e.Removes, ", ")
	case GitPush:
		s := "pushes " + orWord(e.Target, "the current branch") + " to " + orWord(e.Remote, "the default remote")
		if e.Force {
			s += " (force)"
		}
		return s
	}
	s := "writes to " + orWord(e.Remote, "a remote service")
	if e.Target != "" {
		s += ": " + e.Target
	}
	return s
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// workspacePath says why p is not a path inside the checkout a command may
// delete ("" when it is one): relative, no "..", not the whole tree, not a
// git directory, nothing expanded at run time.
func workspacePath(p string) string {
	switch {
	case p == "":
		return "an empty path"
	case isDynamic(p) || strings.ContainsAny(p, "$`") || strings.HasPrefix(p, "~"):
		return strconv.Quote(p) + " is expanded at run time"
	case path.IsAbs(p):
		return strconv.Quote(p) + " is an absolute path: name paths relative to the checkout"
	case slices.Contains(strings.Split(p, "/"), ".."):
		return strconv.Quote(p) + " leaves its directory with \"..\""
	case isRootish(p) || path.Clean(p) == "." || strings.ContainsAny(p, "*?["):
		return strconv.Quote(p) + " names the whole tree or a pattern"
	}
	for _, seg := range strings.Split(path.Clean(p), "/") {
		if seg == ".git" {
			return strconv.Quote(p) + " is inside the git directory"
		}
	}
	return ""
}

// workspacePaths checks every path; it returns the first refusal, or "".
func workspacePaths(ps []string) string {
	for _, p := range ps {
		if why := workspacePath(p); why != "" {
			return why
		}
	}
	return ""
}

// outside is the reason of a destructive command that names something
// outside the checkout: it stays rejected.
func outsideCheckout(prog, why string) Result {
	return result(Destructive, prog+" of "+why+"; only named paths inside the checkout may be removed (a durable job a person approves)")
}

// remoteWrite is an explicit remote write.
func remoteWrite(reason, where, target string, args []string) Result {
	r := remote(reason)
	r.Effect = &Effect{Kind: RemoteWrite, Remote: where, Target: target, Ports: portsOf(args)}
	return r
}

// portsOf returns RemotePorts and the port of every URL in args, sorted.
func portsOf(args []string) []int {
	ports := append([]int(nil), RemotePorts...)
	for _, a := range args {
		if i := strings.IndexByte(a, '='); i >= 0 && strings.HasPrefix(a, "--") {
			a = a[i+1:]
		}
		u, err := url.Parse(a)
		if err != nil || u.Host == "" || u.Port() == "" {
			continue
		}
		if n, err := strconv.Atoi(u.Port()); err == nil && n > 0 && n < 65536 && !slices.Contains(ports, n) {
			ports = append(ports, n)
		}
	}
	slices.Sort(ports)
	return ports
}

// optionValue returns the value of a long option (--name VALUE or
// --name=VALUE) or of one of the short ones (-x VALUE), "" when absent.
func optionValue(args []string, long string, short ...string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, long+"="); ok {
			return v
		}
		if (a == long || slices.Contains(short, a)) && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// deployTools are deploy CLIs the classifier knows: program, the
// subcommands that deploy, and the service they deploy to.
var deployTools = map[string]struct {
	subs    []string
	service string
}{
	"vercel":   {subs: []string{"deploy", "--prod"}, service: "Vercel"},
	"netlify":  {subs: []string{"deploy"}, service: "Netlify"},
	"firebase": {subs: []string{"deploy"}, service: "Firebase"},
	"fly":      {subs: []string{"deploy"}, service: "Fly.io"},
	"flyctl":   {subs: []string{"deploy"}, service: "Fly.io"},
	"wrangler": {subs: []string{"deploy", "publish"}, service: "Cloudflare Workers"},
}

func classifyDeploy(prog string, args []string, _ int) Result {
	t := deployTools[prog]
	for _, a := range args {
		if a == "--version" || a == "-v" || a == "--help" || a == "-h" {
			return result(Readonly, prog+" "+a+" only prints")
		}
	}
	sub, _ := firstOperand(args)
	if slices.Contains(t.subs, sub) || (slices.Contains(t.subs, "--prod") && slices.Contains(args, "--prod")) {
		what := sub
		if what == "" {
			what = "--prod"
		}
		return remoteWrite(prog+" "+what+" deploys to "+t.service, t.service, "a deployment of this checkout", args)
	}
	return result(Unknown, prog+" "+strconv.Quote(sub)+" is not a known deploy subcommand")
}

// gitOperandList returns the non-option arguments of a git subcommand
// (everything after "--" included); withArg lists the short options that
// take the next argument.
func gitOperandList(args []string, withArg string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i+1:]...)
		case isShort(a):
			if _, next := scanShort(a, withArg); next {
				i++
			}
		case strings.HasPrefix(a, "--"):
		default:
			out = append(out, a)
		}
	}
	return out
}

// gitPathspecsInside reports whether every pathspec stays in the checkout
// (no absolute path, no "..", nothing expanded at run time).
func gitPathspecsInside(specs []string) bool {
	for _, p := range specs {
		if isDynamic(p) || path.IsAbs(p) || slices.Contains(strings.Split(p, "/"), "..") || strings.HasPrefix(p, "~") {
			return false
		}
	}
	return true
}

// gitWorkspaceEffect states what a destructive git subcommand removes or
// overwrites in the checkout, for the ones a person may approve as a
// durable job; nil for the rest (history rewrites, reflog and object
// pruning, stash drops), which stay rejected.
func gitWorkspaceEffect(sub string, rest []string) *Effect {
	del := func(what ...string) *Effect { return &Effect{Kind: WorkspaceDelete, Removes: what} }
	in := func(specs []string, whole string) string {
		if len(specs) == 0 {
			return whole
		}
		return strings.Join(specs, ", ")
	}
	switch sub {
	case "clean":
		specs := gitOperandList(rest, "e")
		if !gitPathspecsInside(specs) {
			return nil
		}
		what := "untracked files"
		switch {
		case gitFlag(rest, 'X', ""):
			what = "ignored files"
		case gitFlag(rest, 'x', ""):
			what = "untracked and ignored files"
		}
		if gitFlag(rest, 'd', "") {
			what += " and directories"
		}
		return del(what + " in " + in(specs, "the whole checkout"))
	case "reset":
		specs := gitOperandList(rest, "")
		if !gitPathspecsInside(specs) {
			return nil
		}
		what := "uncommitted changes to tracked files"
		if len(specs) > 0 {
			what += " (HEAD moves to " + specs[0] + ")"
		}
		return del(what)
	case "checkout", "restore", "switch":
		specs := gitOperandList(rest, "bBs")
		if !gitPathspecsInside(specs) {
			return nil
		}
		return del("uncommitted changes in " + in(specs, "the working tree"))
	case "branch":
		names := gitOperandList(rest, "u")
		if len(names) == 0 || !gitPathspecsInside(names) {
			return nil
		}
		if gitFlag(rest, 'D', "") || gitFlag(rest, 'd', "--delete") {
			return del("branch " + strings.Join(names, ", ") + " (unmerged commits too)")
		}
		return del("branch " + names[0] + " (overwritten)")
	case "tag":
		names := gitOperandList(rest, "mFu")
		if len(names) == 0 || !gitPathspecsInside(names) {
			return nil
		}
		return del("tag " + names[0] + " (overwritten)")
	}
	return nil
}

// gitFlag reports whether a short-option cluster before "--" holds letter,
// or an argument is long.
func gitFlag(args []string, letter byte, long string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if (long != "" && a == long) || (isShort(a) && strings.IndexByte(a[1:], letter) >= 0) {
			return true
		}
	}
	return false
}

// gitRemoteWriteKey reports whether a configuration key makes a later push
// write more, or elsewhere, than the push names: an implicit remote write.
func gitRemoteWriteKey(key string) bool {
	k := strings.ToLower(key)
	last := k
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		last = k[i+1:]
	}
	switch {
	case strings.HasPrefix(k, "remote.") && (last == "mirror" || last == "pushurl" || last == "push" || last == "receivepack"),
		strings.HasPrefix(k, "url.") && last == "pushinsteadof",
		strings.HasPrefix(k, "branch.") && last == "pushremote",
		k == "remote.pushdefault", strings.HasPrefix(k, "push."):
		return true
	}
	return false
}

// gitPushOptions are the git push options git_push can stand for; any
// other makes the push do more than it names (--mirror, --all, --tags,
// --follow-tags, --prune, --delete, --repo, --receive-pack, --exec,
// --push-option, --signed): it stays rejected.
var gitPushOptions = []string{"set-upstream", "force", "force-with-lease", "force-if-includes", "quiet", "verbose",
	"progress", "no-verify", "atomic", "dry-run", "porcelain", "no-progress"}

// gitPushEffect parses a git push: the remote, the refspecs and whether it
// may overwrite remote history. ok is false with the reason when the push
// would write more than it names.
func gitPushEffect(args []string) (e *Effect, why string) {
	var operands []string
	force := false
	for i, a := range args {
		if a == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		switch {
		case strings.HasPrefix(a, "--"):
			name, _ := longName(a)
			full := ""
			for _, o := range gitPushOptions {
				if abbrevOf(name, o, 3) || name == o {
					full = o
					break
				}
			}
			if full == "" || (strings.HasPrefix(full, "force") && len(name) < 3) {
				return nil, "git push --" + name + " writes more than it names"
			}
			force = force || strings.HasPrefix(full, "force")
		case isShort(a):
			for _, c := range a[1:] {
				switch c {
				case 'u', 'q', 'v', 'n':
				case 'f':
					force = true
				default:
					return nil, "git push -" + string(c) + " writes more than it names"
				}
			}
		default:
			operands = append(operands, a)
		}
	}
	e = &Effect{Kind: GitPush, Ports: portsOf(args)}
	if len(operands) > 0 {
		e.Remote = operands[0]
	}
	for _, r := range operands[min(1, len(operands)):] {
		switch {
		case strings.HasPrefix(r, ":") || r == "":
			return nil, "git push refspec " + strconv.Quote(r) + " deletes a remote branch"
		case strings.HasPrefix(r, "+"):
			force = true
		}
	}
	if len(operands) > 1 {
		e.Target = strings.Join(operands[1:], " ")
	}
	e.Force = force
	return e, ""
}
