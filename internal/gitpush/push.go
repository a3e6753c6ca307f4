package gitpush

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/gitx"
)

// MakeScratch makes the scratch bare repository the push runs from in
// dir (an empty directory of harnessd's): its objects are the checkout's
// (objects/info/alternates names objectsDir), its config holds nothing
// but the object format. Nothing of the checkout's config or hooks is in
// it.
func MakeScratch(dir, objectsDir, objectFormat string) error {
	cfg := "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
	if objectFormat != "" && objectFormat != "sha1" {
		cfg = "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = " + objectFormat + "\n"
	}
	for _, d := range []string{"objects/info", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	files := map[string]string{
		"HEAD":                    "ref: refs/heads/main\n",
		"config":                  cfg,
		"objects/info/alternates": objectsDir + "\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Credential is what the remote is told: never printed, logged, stored
// or put in an argument or the environment of a process.
type Credential struct {
	Username, Password string
}

// empty reports whether c holds nothing to send.
func (c *Credential) empty() bool { return c == nil || c.Password == "" && c.Username == "" }

// Redact replaces the credential's values in s (and the URLs' user
// information): what leaves a push (its output, its errors).
func (c *Credential) Redact(s string) string {
	s = RedactURLs(s)
	if c == nil {
		return s
	}
	for _, v := range []string{c.Password, c.Username} {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[REDACTED]")
		}
	}
	return s
}

// credentialEnv is the environment of `git credential fill`: the daemon's
// (the user's helpers may need it: a keyring's session bus, a token
// variable of gh), without git's variables but those naming the user's
// own configuration files, never prompting.
func credentialEnv(environ []string, gitDir string) []string {
	out := make([]string, 0, len(environ)+4)
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "GIT_CONFIG_GLOBAL" || k == "GIT_CONFIG_SYSTEM" || k == "GIT_CONFIG_NOSYSTEM":
			if v == "" {
				continue
			}
		case strings.HasPrefix(k, "GIT_"), k == "SSH_ASKPASS":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_DIR="+gitDir, "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=")
}

// FillCredential asks the user's credential helpers for r's credential
// the way the user's git does (`git credential fill` with the user's
// global and system configuration), run from the scratch repository
// gitDir, never from the checkout, whose config could name a helper. A
// password written into the remote's URL is the credential itself.
// Without a helper that knows one the answer is nil (the push then tries
// without; a remote that wants one answers REMOTE_AUTH_FAILED). Only
// http(s) remotes take one.
func FillCredential(ctx context.Context, gitBin, gitDir string, r Remote) *Credential {
	if r.Scheme != "https" && r.Scheme != "http" {
		return nil
	}
	if r.password != "" {
		return &Credential{Username: r.Username, Password: r.password}
	}
	var in bytes.Buffer
	in.WriteString("protocol=" + r.Scheme + "\nhost=" + r.Host + "\npath=" + r.Path + "\n")
	if r.Username != "" {
		in.WriteString("username=" + r.Username + "\n")
	}
	in.WriteString("\n")
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gitBin, "-c", "core.askPass=", "credential", "fill")
	cmd.Dir = gitDir
	cmd.Env = credentialEnv(os.Environ(), gitDir)
	cmd.Stdin = &in
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		return nil
	}
	c := &Credential{}
	for _, line := range strings.Split(out.String(), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "username":
			c.Username = v
		case "password":
			c.Password = v
		}
	}
	if c.empty() {
		return nil
	}
	return c
}

// helper is the credential helper of the pushing git: it answers "get"
// with what harnessd wrote into the pipe on descriptor 3 (once; the pipe
// is then empty), and ignores "store" and "erase".
const helper = `!f() { test "$1" = get && exec cat <&3; }; f`

// Request is one push.
type Request struct {
	// Git is the git binary.
	Git string
	// Scratch is the scratch repository (MakeScratch).
	Scratch string
	Remote  Remote
	// Commit is the local commit pushed; RemoteRef the ref it goes to.
	Commit, RemoteRef string
	Force             bool
	Cred              *Credential
	// Run starts cmd and waits for it (confined where harnessd confines
	// it); nil = cmd.Run.
	Run func(cmd *exec.Cmd) error
}

// Result is what the remote answered for the ref.
type Result struct {
	// Flag is git's porcelain flag: " " fast-forward, "+" forced, "*" new,
	// "=" up to date.
	Flag string `json:"flag"`
	// Old and New are the remote ref's commit before and after ("" for
	// a new ref).
	Old string `json:"old,omitempty"`
	New string `json:"new"`
	// Summary is git's summary of the ref ("[new branch]", "a..b").
	Summary string `json:"summary"`
}

// Args returns the pushing git's arguments: the scratch repository, no
// hooks, only the remote's own transport allowed, the credential helper
// list reset to the pipe's helper, no redirects (the push goes to the
// approved URL), then `push --porcelain -- url [+]commit:ref`.
func (q Request) Args() []string {
	ssh := "false"
	if q.Remote.Scheme == "ssh" {
		ssh = "ssh -o BatchMode=yes"
	}
	args := []string{"--git-dir=" + q.Scratch,
		"-c", "core.hooksPath=/dev/null",
		"-c", "core.fsmonitor=false",
		"-c", "core.askPass=",
		"-c", "core.sshCommand=" + ssh,
		"-c", "core.abbrev=no",
		"-c", "protocol.allow=never",
		"-c", "protocol." + q.Remote.Scheme + ".allow=always",
		"-c", "credential.helper=",
		"-c", "http.followRedirects=false",
		"-c", "push.followTags=false",
		"-c", "push.recurseSubmodules=no",
		"-c", "push.gpgSign=false",
		"-c", "submodule.recurse=false",
	}
	if !q.Cred.empty() {
		args = append(args, "-c", "credential.helper="+helper)
	}
	spec := q.Commit + ":" + q.RemoteRef
	if q.Force {
		spec = "+" + spec
	}
	return append(args, "push", "--porcelain", "--no-verify", "--", q.Remote.URL, spec)
}

// passEnv are the daemon's variables the pushing git keeps beside gitx's
// hardened set: proxies and trust stores (and ssh's agent for ssh).
var passEnv = []string{"http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH"}

// Env returns the pushing git's environment from environ.
func (q Request) Env(environ []string) []string {
	env := gitx.HardenedEnv(environ)
	keep := passEnv
	if q.Remote.Scheme == "ssh" {
		keep = append(append([]string(nil), passEnv...), "SSH_AUTH_SOCK")
	}
	for _, name := range keep {
		for i := len(environ) - 1; i >= 0; i-- {
			if k, _, _ := strings.Cut(environ[i], "="); k == name {
				env = append(env, environ[i])
				break
			}
		}
	}
	return env
}

// maxOutput bounds what is kept of each of the push's streams.
const maxOutput = 64 << 10

// Push runs the push and returns the remote's answer for the ref. Errors:
// PUSH_REJECTED (details reason: non-fast-forward, fetch first, already
// exists, or the remote's own reason), REMOTE_AUTH_FAILED, CANCELLED or
// TIMEOUT, UNAVAILABLE with git's message. Every message has the
// credential and URLs' user information redacted.
func Push(ctx context.Context, q Request) (Result, error) {
	cmd := exec.CommandContext(ctx, q.Git, q.Args()...)
	cmd.Dir = q.Scratch
	cmd.Env = q.Env(os.Environ())
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limited{b: &stdout}, &limited{b: &stderr}
	if !q.Cred.empty() {
		r, w, err := os.Pipe()
		if err != nil {
			return Result{}, errs.Wrap(errs.Internal, err, "push: pipe: %v", err)
		}
		body := "username=" + q.Cred.Username + "\npassword=" + q.Cred.Password + "\n"
		// A credential is far below a pipe's buffer: written whole now,
		// the helper reads it when git asks.
		_, werr := w.WriteString(body)
		_ = w.Close()
		if werr != nil {
			_ = r.Close()
			return Result{}, errs.Wrap(errs.Internal, werr, "push: write the credential pipe: %v", werr)
		}
		defer r.Close()
		cmd.ExtraFiles = []*os.File{r}
	}
	run := q.Run
	if run == nil {
		run = (*exec.Cmd).Run
	}
	err := run(cmd)
	res, found, perr := ParsePorcelain(stdout.String(), q.RemoteRef)
	redact := q.Cred.Redact
	if perr != nil {
		e := errs.From(perr).With("remote_ref", q.RemoteRef)
		if o := strings.TrimSpace(stderr.String()); o != "" {
			e = e.With("output", clip(redact(o)))
		}
		return Result{}, e
	}
	if err == nil && found {
		return res, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return Result{}, errs.Wrap(errs.CodeOf(ctxErr), ctxErr, "push to %s: %v", q.Remote.URL, ctxErr)
	}
	msg := redact(strings.TrimSpace(stderr.String()))
	if authFailure(msg) {
		how := "configure a credential helper in your global git config (git config --global credential.helper ...) and store one (git credential approve), see git help credential"
		if q.Remote.Scheme == "ssh" {
			how = "set up an ssh key the remote accepts, loaded in ssh-agent (SSH_AUTH_SOCK of the daemon)"
		}
		return Result{}, errs.New(errs.RemoteAuthFailed, "push to %s: the remote refused the credential or got none: %s; %s", q.Remote.URL, clip(msg), how).
			With("url", q.Remote.URL)
	}
	if err == nil {
		msg = "git did not report the ref " + q.RemoteRef + ": " + clip(redact(stdout.String()))
	}
	return Result{}, errs.New(errs.Unavailable, "push to %s failed: %s", q.Remote.URL, clip(msg)).With("url", q.Remote.URL)
}

// authFailure reports whether git's message says the remote wanted a
// credential it did not get or refused the one it got.
func authFailure(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"authentication failed", "could not read username", "could not read password",
		"terminal prompts disabled", "returned error: 401", "returned error: 403", "permission denied (publickey", "http 401", "http 403"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) > 2000 {
		return strings.ToValidUTF8(s[:2000], "") + "…"
	}
	return s
}

// limited is a writer that keeps the first maxOutput bytes.
type limited struct{ b *bytes.Buffer }

func (l *limited) Write(p []byte) (int, error) {
	if room := maxOutput - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// zeroCommit reports whether s is all zeros (a ref that did not exist).
func zeroCommit(s string) bool { return strings.Trim(s, "0") == "" }

// ParsePorcelain finds ref's line in `git push --porcelain` output
// (flag TAB from:to TAB summary) and returns the remote's answer: found
// false when no line names it; a PUSH_REJECTED error (details reason)
// when the remote or git refused it ("!").
func ParsePorcelain(out, ref string) (Result, bool, error) {
	for _, line := range strings.Split(out, "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 || len(parts[0]) != 1 {
			continue
		}
		_, to, ok := strings.Cut(parts[1], ":")
		if !ok || to != ref {
			continue
		}
		flag, summary := parts[0], parts[2]
		res := Result{Flag: flag, Summary: summary}
		switch flag {
		case "!":
			reason := summary
			if i := strings.IndexByte(summary, '('); i >= 0 && strings.HasSuffix(summary, ")") {
				reason = summary[i+1 : len(summary)-1]
			}
			fix := "the remote refused it"
			switch reason {
			case "non-fast-forward", "fetch first":
				fix = "the remote's " + ref + " has commits the pushed commit does not contain: integrate them first (fetch and rebase or merge), or push with force: true (which needs its own approval)"
			case "already exists":
				fix = "the remote already has " + ref + ": push with force: true to replace it (which needs its own approval)"
			case "stale info":
				fix = "the remote changed while pushing; retry"
			}
			return Result{}, true, errs.New(errs.PushRejected, "push of %s rejected (%s): %s", ref, reason, fix).With("reason", reason)
		case " ", "+":
			from, to, ok := strings.Cut(strings.Fields(summary)[0], "..")
			if ok {
				res.Old, res.New = from, strings.TrimPrefix(to, ".")
			}
		case "=", "*":
		default:
			continue
		}
		if res.New == "" {
			src, _, _ := strings.Cut(parts[1], ":")
			res.New = src
			if flag == "=" {
				res.Old = src
			}
		}
		if zeroCommit(res.Old) {
			res.Old = ""
		}
		return res, true, nil
	}
	return Result{}, false, nil
}

// Lookup returns the git binary bin names ("" = git on PATH).
func Lookup(bin string) (string, error) {
	if bin == "" {
		bin = "git"
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "git executable %q not found: %v", bin, err)
	}
	return p, nil
}
