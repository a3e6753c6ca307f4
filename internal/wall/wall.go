package wall

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Layer names one wall of the sandbox.
type Layer string

// The layers a diagnosis names (DESIGN §10).
const (
	MountNamespace   Layer = "mount namespace"
	Landlock         Layer = "landlock"
	Seccomp          Layer = "seccomp"
	NetworkNamespace Layer = "network namespace"
)

// The operations whose options a fix names (Facts.Tool).
const (
	ToolRunCommand = "run_command"
	ToolRunCheck   = "run_check"
	ToolJobStart   = "job_start"
)

// Facts are what the confinement of the failed process allowed, as the
// caller confined it. All paths are absolute and clean unless said
// otherwise.
type Facts struct {
	// Confined is false when no kernel wall stood (the sandbox is off):
	// nothing is diagnosed.
	Confined bool
	// Tool is the operation that started the process (ToolRunCommand,
	// ToolRunCheck, ToolJobStart): its options are the fixes.
	Tool string
	// Namespaces is true when the process ran in namespaces (mount,
	// network, pid); false means Landlock and seccomp alone.
	Namespaces bool
	// Root is the checkout (or worktree) the process worked in.
	Root string
	// Dir is the process's working directory: relative paths in messages
	// resolve against it ("" = Root).
	Dir string
	// Writable are the directories the process could write besides its
	// private tmp: Root when writable, the tool caches of check and job.
	Writable []string
	// ReadOnly are directories the process could read but not write:
	// the tool caches on the Fast Path, git's directories outside Root.
	ReadOnly []string
	// Tmp is the private tmp ($TMPDIR) as the process saw it.
	Tmp string
	// Network is true when outside network was granted.
	Network bool
	// Secrets are the closed secret paths below Root (relative,
	// slash-separated; a directory closes everything below it).
	Secrets []string
	// Hidden are directories no confined process sees (harnessd's data
	// dir, job logs, worktrees).
	Hidden []string
	// Home is the daemon's home directory: the sandbox shows of it only
	// the tool caches and the tools on PATH.
	Home string
	// Visible are the directories the process saw (the system's, the
	// tools' on PATH, the checkout, the caches): a program or path found
	// there outside was there inside too, so its absence is not the
	// sandbox's. nil = unknown.
	Visible []string
	// Exists resolves a program name on the daemon's PATH, or an absolute
	// path on the daemon's file system, to where it is (following
	// symlinks); ok is false when there is nothing. nil = unknown: no
	// missing program or path is diagnosed.
	Exists func(nameOrPath string) (where string, ok bool)
}

// Diagnosis is one wall a failed process ran into.
type Diagnosis struct {
	// Layer is the wall: mount namespace, landlock, seccomp or network
	// namespace.
	Layer Layer `json:"layer"`
	// What is the path, program or syscall it stopped.
	What string `json:"what"`
	// Fix is the legitimate way through: the option, the grant or the
	// approval, or that nothing grants it.
	Fix string `json:"fix"`
	// Line is the output line that shows it.
	Line string `json:"line"`
}

// Limits of a diagnosis.
const (
	// MaxDiagnoses bounds the diagnoses of one process.
	MaxDiagnoses = 5
	maxLine      = 300
	maxLineScan  = 4096
)

// kind is what a message says happened.
type kind int

const (
	kindReadOnly    kind = iota + 1 // EROFS
	kindDenied                      // EACCES on a path (Landlock denies with it; EPERM on a path is chmod's, chown's: never a wall's)
	kindMissing                     // ENOENT on a path
	kindNoProgram                   // a program was not found
	kindSocket                      // socket() denied
	kindBindConnect                 // bind()/connect() denied (EACCES)
	kindUnreachable                 // ENETUNREACH
	kindResolve                     // name resolution failed
)

// finding is one message of the output, before the facts judge it.
type finding struct {
	kind kind
	path string // the path, program or address it names ("" = none)
	call string // the syscall or operation it names, when it does
	line string
}

// Diagnose returns the walls the failed process ran into, at most
// MaxDiagnoses, one per layer and thing, in the order of the output. A
// process that exited 0, or one no wall confined, gets none. output is
// what the process printed (stderr, then stdout: the head and tail
// harnessd keeps).
func Diagnose(exitCode int, output string, f Facts) []Diagnosis {
	if exitCode == 0 || !f.Confined {
		return nil
	}
	var out []Diagnosis
	seen := map[string]bool{}
	for _, fd := range find(output) {
		d, ok := judge(fd, f)
		if !ok {
			continue
		}
		key := string(d.Layer) + "\x00" + d.What
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, d)
		if len(out) == MaxDiagnoses {
			break
		}
	}
	return out
}

// Suspect reports whether output holds any message a wall can cause: a
// cheap test before the caller gathers the facts.
func Suspect(output string) bool { return len(find(output)) > 0 }

// find returns the messages of output that a wall can cause, in order,
// without judging whether one did.
func find(output string) []finding {
	var out []finding
	var npm npmBlock
	for line := range strings.SplitSeq(output, "\n") {
		line = strings.TrimRight(line, "\r")
		if len(line) > maxLineScan {
			line = line[:maxLineScan]
		}
		if npm.startsBlock(line) {
			if fd, ok := npm.flush(); ok {
				out = append(out, fd)
			}
		}
		if !npm.add(line) {
			if fd, ok := npm.flush(); ok {
				out = append(out, fd)
			}
		}
		if !npm.keyLine(line) {
			out = append(out, findLine(line)...)
		}
	}
	if fd, ok := npm.flush(); ok {
		out = append(out, fd)
	}
	return out
}

// Message patterns. Phrases are matched case-insensitively: Go and C
// print them in lower case, Python and coreutils capitalised.
var (
	reNodeErrno = regexp.MustCompile(`\b(EROFS|EACCES|EPERM|ENOENT): [^,]*, (\w+) '([^']*)'`)
	rePyErrno   = regexp.MustCompile(`\[Errno (\d+)\] [^:\]]+: ['"]([^'"]*)['"]`)
	reJavaErrno = regexp.MustCompile(`(\S+) \((?i:read-only file system|permission denied|no such file or directory)\)`)
	reQuoted    = regexp.MustCompile(`['‘"]([^'’"]+)['’"]: (?i:read-only file system|permission denied|operation not permitted|no such file or directory)`)
	reGoPath    = regexp.MustCompile(`\b(open|openat|mkdir|mkdirat|remove|unlinkat|unlink|rmdir|rename|renameat|stat|lstat|chmod|chown|lchown|chtimes|utimes|symlink|link|readlink|truncate|create|mknod|write|readdirent|fork/exec) (\S+): (?i:read-only file system|permission denied|operation not permitted|no such file or directory)`)
	reToken     = regexp.MustCompile(`(\S+): (?i:read-only file system|permission denied|operation not permitted|no such file or directory)`)

	reEROFS  = regexp.MustCompile(`(?i)read-only file system|\bEROFS\b|\[Errno 30\]`)
	reEACCES = regexp.MustCompile(`(?i)permission denied|\bEACCES\b|\[Errno 13\]`)
	reENOENT = regexp.MustCompile(`(?i)no such file or directory|\bENOENT\b|\[Errno 2\]`)

	reSocket      = regexp.MustCompile(`(?i)\bsocket: (operation not permitted|permission denied|address family not supported by protocol)|\[Errno 97\] Address family not supported`)
	reBindConnect = regexp.MustCompile(`\b(bind|connect): (?i:permission denied)|\b(listen|bind|connect) (EACCES|EPERM)\b`)
	reUnreach     = regexp.MustCompile(`(?i)network is unreachable|\bENETUNREACH\b|\[Errno 101\]`)
	reResolve     = regexp.MustCompile(`(?i)temporary failure in name resolution|\bEAI_AGAIN\b|\blookup (\S+?)(?: on \S+)?: .*(?:connection refused|network is unreachable)`)
	reAddr        = regexp.MustCompile(`\b(?:tcp|udp)[46]? (\S*:[0-9]{1,5})\b|\b([0-9]{1,3}(?:\.[0-9]{1,3}){3}:[0-9]{1,5})\b|(\[[0-9a-fA-F:.]+\]:[0-9]{1,5})\b`)
	reHost        = regexp.MustCompile(`(?:getaddrinfo (?:EAI_AGAIN|ENOTFOUND) |lookup |host=['"]?|Failed to resolve ['"]?|request to https?://)([A-Za-z0-9.-]+)`)

	reShNotFound   = regexp.MustCompile(`^\S*sh: (?:\d+: )?(?:exec: )?(\S+): not found$|^\S+: \d+: (?:exec: )?(\S+): not found$`)
	reBashNotFound = regexp.MustCompile(`^\S*sh: (?:line \d+: )?(\S+): command not found$`)
	reZshNotFound  = regexp.MustCompile(`^zsh:\d*:? command not found: (\S+)$`)
	reEnvNotFound  = regexp.MustCompile(`^\S*env: ['‘"]?([^'’":]+)['’"]?: No such file or directory$`)
	reGoExec       = regexp.MustCompile(`exec: "([^"]+)": executable file not found in \$PATH`)
	reSpawn        = regexp.MustCompile(`\bspawn (\S+) ENOENT\b`)
	reMake         = regexp.MustCompile(`^make(?:\[\d+\])?: (\S+): (?:No such file or directory|Command not found)$`)
	reLauncher     = regexp.MustCompile(`^harnessd sandbox: start (\S+): (?:no such file or directory|permission denied)$`)
)

// cues are the words (lower case) without which no pattern matches: a
// line without any is passed over before the patterns run.
func cues() []string {
	return []string{"read-only", "permission denied", "not found", "no such file", "errno", "erofs", "eacces", "eperm", "enoent",
		"unreachable", "name resolution", "eai_again", "socket", "lookup"}
}

// findLine returns the findings of one line.
func findLine(line string) []finding {
	lower := strings.ToLower(line)
	if !slices.ContainsFunc(cues(), func(c string) bool { return strings.Contains(lower, c) }) {
		return nil
	}
	var out []finding
	add := func(k kind, p, call string) {
		out = append(out, finding{kind: k, path: p, call: call, line: clip(line)})
	}

	// Programs first: their "No such file or directory" is not a file's.
	for _, re := range []*regexp.Regexp{reLauncher, reShNotFound, reBashNotFound, reZshNotFound, reEnvNotFound, reGoExec, reSpawn, reMake} {
		if m := re.FindStringSubmatch(line); m != nil {
			name := m[1]
			if name == "" && len(m) > 2 {
				name = m[2]
			}
			add(kindNoProgram, name, "execve")
			return out
		}
	}
	if m := reSocket.FindStringSubmatch(line); m != nil {
		add(kindSocket, address(line), "socket")
		return out
	}
	if m := reBindConnect.FindStringSubmatch(line); m != nil {
		call := m[1]
		if call == "" {
			call = m[2]
		}
		if call == "listen" {
			call = "bind"
		}
		add(kindBindConnect, address(line), call)
		return out
	}
	if reUnreach.MatchString(line) {
		add(kindUnreachable, address(line), "connect")
		return out
	}
	if reResolve.MatchString(line) {
		add(kindResolve, host(line), "getaddrinfo")
		return out
	}
	var k kind
	switch {
	case reEROFS.MatchString(line):
		k = kindReadOnly
	case reEACCES.MatchString(line):
		k = kindDenied
	case reENOENT.MatchString(line):
		k = kindMissing
	default:
		return nil
	}
	p, call := pathOf(line)
	if call == "fork/exec" && k == kindMissing {
		add(kindNoProgram, p, "execve")
		return out
	}
	add(k, p, call)
	return out
}

// pathOf finds the path an errno message names, and the call when it
// says ("" when it names none).
func pathOf(line string) (p, call string) {
	if m := reNodeErrno.FindStringSubmatch(line); m != nil {
		return m[3], m[2]
	}
	if m := rePyErrno.FindStringSubmatch(line); m != nil {
		return m[2], ""
	}
	if m := reGoPath.FindStringSubmatch(line); m != nil {
		return m[2], m[1]
	}
	if m := reQuoted.FindStringSubmatch(line); m != nil {
		return m[1], ""
	}
	if m := reJavaErrno.FindStringSubmatch(line); m != nil && looksLikePath(m[1]) {
		return m[1], ""
	}
	if m := reToken.FindStringSubmatch(line); m != nil && looksLikePath(m[1]) {
		return m[1], ""
	}
	return "", ""
}

// looksLikePath accepts a token that names a file: a slash in it, or a
// dot that is not its end (a file name with an extension, a dotfile).
func looksLikePath(s string) bool {
	s = strings.Trim(s, `'"‘’`)
	if s == "" || strings.HasSuffix(s, ":") {
		return false
	}
	if strings.Contains(s, "/") {
		return true
	}
	i := strings.LastIndexByte(s, '.')
	return i >= 0 && i < len(s)-1
}

// address returns the network address a line names ("" = none): Go's
// "tcp 127.0.0.1:0", an IPv4 or bracketed IPv6 address with its port, or
// a host name.
func address(line string) string {
	if m := reAddr.FindStringSubmatch(line); m != nil {
		for _, g := range m[1:] {
			if g != "" {
				return g
			}
		}
	}
	return host(line)
}

// host returns the host name a resolution failure names.
func host(line string) string {
	if m := reHost.FindStringSubmatch(line); m != nil {
		return strings.TrimSuffix(m[1], ".")
	}
	return ""
}

// port returns the port of an address, 0 when it has none.
func port(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(addr[i+1:])
	if err != nil {
		return 0
	}
	return n
}

// npmBlock gathers npm's error block ("npm ERR! code EROFS", "npm error
// syscall mkdir", "npm error path /x"): one finding for the block.
type npmBlock struct {
	code, syscall, path, host, first string
	active                           bool
}

// npmLine returns the rest of a line of npm's error output.
func npmLine(line string) (string, bool) {
	if rest, ok := strings.CutPrefix(line, "npm ERR! "); ok {
		return rest, true
	}
	return strings.CutPrefix(line, "npm error ")
}

// startsBlock reports whether line opens another block ("code" again).
func (b *npmBlock) startsBlock(line string) bool {
	rest, ok := npmLine(line)
	return ok && b.code != "" && strings.HasPrefix(strings.TrimSpace(rest), "code ")
}

// keyLine reports whether line is one of npm's "code", "errno", "syscall"
// or "path" lines, which only the block as a whole explains.
func (b *npmBlock) keyLine(line string) bool {
	rest, ok := npmLine(line)
	if !ok {
		return false
	}
	key, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
	return key == "code" || key == "errno" || key == "syscall" || key == "path"
}

// add takes a line of the block; false when the line is not npm's.
func (b *npmBlock) add(line string) bool {
	rest, ok := npmLine(line)
	if !ok {
		return false
	}
	key, val, _ := strings.Cut(strings.TrimSpace(rest), " ")
	val = strings.TrimSpace(val)
	if h := host(rest); h != "" && b.host == "" {
		b.host = h
	}
	switch key {
	case "code":
		b.code, b.active = val, true
		if b.first == "" {
			b.first = line
		}
	case "syscall":
		b.syscall, b.active = val, true
	case "path":
		b.path, b.active = val, true
	default:
		if !b.active {
			return false
		}
	}
	return true
}

// flush ends the block and returns its finding, if its code is a wall's.
func (b *npmBlock) flush() (finding, bool) {
	defer func() { *b = npmBlock{} }()
	if !b.active {
		return finding{}, false
	}
	line := clip(b.first)
	switch b.code {
	case "EROFS":
		return finding{kind: kindReadOnly, path: b.path, call: b.syscall, line: line}, true
	case "EACCES", "EPERM":
		if b.syscall == "connect" || b.syscall == "listen" || b.syscall == "bind" {
			return finding{kind: kindBindConnect, path: b.path, call: b.syscall, line: line}, true
		}
		if b.code == "EACCES" {
			return finding{kind: kindDenied, path: b.path, call: b.syscall, line: line}, true
		}
	case "ENETUNREACH":
		return finding{kind: kindUnreachable, path: b.host, call: "connect", line: line}, true
	case "EAI_AGAIN":
		return finding{kind: kindResolve, path: b.host, call: "getaddrinfo", line: line}, true
	}
	return finding{}, false
}

func clip(line string) string {
	line = strings.TrimSpace(line)
	if len(line) > maxLine {
		line = line[:maxLine] + "…"
	}
	return line
}

// judge decides whether a finding is a wall's, given the facts.
func judge(fd finding, f Facts) (Diagnosis, bool) {
	d := Diagnosis{Line: fd.line}
	switch fd.kind {
	case kindNoProgram:
		return judgeProgram(fd, f)
	case kindSocket:
		if f.Network {
			return d, false
		}
		d.Layer, d.What = Seccomp, withAddr("socket()", fd.path)
		d.Fix = "the sandbox denies network sockets to this process. " + networkFix(f.Tool)
		return d, true
	case kindBindConnect:
		if f.Network {
			return d, false
		}
		if p := port(fd.path); p > 0 && p < 1024 && fd.call == "bind" {
			return d, false // a privileged port: denied outside the sandbox too
		}
		layer := Landlock
		if f.Namespaces {
			layer = NetworkNamespace
		}
		d.Layer, d.What = layer, withAddr(fd.call+"()", fd.path)
		d.Fix = "the sandbox denies this " + fd.call + ". " + networkFix(f.Tool)
		return d, true
	case kindUnreachable:
		if f.Network || !f.Namespaces {
			return d, false
		}
		d.Layer, d.What = NetworkNamespace, withAddr("connect()", fd.path)
		d.Fix = "the process's network namespace has no route out. " + networkFix(f.Tool)
		return d, true
	case kindResolve:
		if f.Network || !f.Namespaces {
			return d, false
		}
		what := "name resolution"
		if fd.path != "" {
			what += " of " + fd.path
		}
		d.Layer, d.What = NetworkNamespace, what
		d.Fix = "the process's network namespace has no route to a DNS server. " + networkFix(f.Tool)
		return d, true
	}
	return judgePath(fd, f)
}

func withAddr(call, addr string) string {
	if addr == "" {
		return call
	}
	return call + " " + addr
}

// judgePath decides a finding about a file.
func judgePath(fd finding, f Facts) (Diagnosis, bool) {
	d := Diagnosis{Line: fd.line}
	named := strings.Trim(strings.TrimSpace(fd.path), `'"‘’`)
	p := f.abs(named)
	layer := Landlock
	if f.Namespaces {
		layer = MountNamespace
	}
	if p != "" {
		if rel, ok := f.secret(p); ok {
			d.Layer, d.What = layer, p
			d.Fix = "harnessd's denylist closes " + rel + " as a secret path: the sandbox shows it empty or not at all. " +
				"If it is a test fixture and not a secret, a person can allow it for this repository with a denylist exception (secret_exceptions in the daemon's policy); an agent cannot."
			return d, true
		}
		if under(p, f.Hidden...) && !under(p, f.Root) && !under(p, f.Writable...) {
			// (A job's worktree lies in the data dir, and is its own.)
			d.Layer, d.What = layer, p
			d.Fix = "this is harnessd's own data (store, sockets, job logs, worktrees): no confined process sees it and nothing grants it; use harnessd's operations (job_logs, read_file) instead."
			return d, true
		}
	}
	switch fd.kind {
	case kindReadOnly:
		if !f.Namespaces || (p != "" && under(p, f.writable()...)) {
			return d, false // Landlock denies with EACCES; a writable dir is writable
		}
		d.Layer, d.What = MountNamespace, p
		switch {
		case p == "":
			d.What = "a write (the message names no path)"
			d.Fix = "the sandbox mounts the checkout and the system read-only. " + f.writeFix()
		case under(p, f.Root):
			d.Fix = "the sandbox mounts the checkout read-only. " + f.writeFix()
		case under(p, f.ReadOnly...):
			d.Fix = f.readOnlyFix(p)
		default:
			d.Fix = "the sandbox mounts " + p + " read-only: only the private tmp ($TMPDIR)" + f.alsoWritable() + " can be written; write there."
		}
		return d, true
	case kindDenied:
		if p == "" || f.Namespaces {
			return d, false // in namespaces a write meets EROFS, a hidden path ENOENT
		}
		switch {
		case under(p, f.writable()...):
			return d, false
		case under(p, f.Root):
			d.Layer, d.What = Landlock, p
			d.Fix = "Landlock keeps the checkout read-only for this process. " + f.writeFix()
			return d, true
		case under(p, f.ReadOnly...):
			d.Layer, d.What = Landlock, p
			d.Fix = f.readOnlyFix(p)
			return d, true
		case f.Home != "" && under(p, f.Home):
			d.Layer, d.What = Landlock, p
			d.Fix = homeFix
			return d, true
		}
		return d, false
	case kindMissing:
		// Only an absolute path outside the checkout can be proved to
		// exist outside and be unmounted inside.
		if p == "" || !f.Namespaces || f.Exists == nil || !(path.IsAbs(named) || strings.HasPrefix(named, "~")) {
			return d, false
		}
		// The checkout and the writable dirs are mounted: their ENOENT is
		// real. /tmp is the process's own: a host file there is hidden.
		if under(p, f.Root) || under(p, f.Writable...) {
			return d, false
		}
		where, ok := f.Exists(p)
		if !ok || under(where, f.Visible...) {
			return d, false
		}
		d.Layer, d.What = MountNamespace, p
		if f.Home != "" && under(p, f.Home) {
			d.Fix = homeFix
		} else {
			d.Fix = "the sandbox does not mount " + where + " (it shows the system directories, the tools on the daemon's PATH, the checkout and the tool caches; its /tmp is private): nothing an agent passes grants more; keep the file in the checkout."
		}
		return d, true
	}
	return d, false
}

// readOnlyFix explains a write to a directory the process may only read.
func (f Facts) readOnlyFix(p string) string {
	if f.Tool == ToolRunCommand {
		return p + " is read-only on the Fast Path (the tool caches are writable for run_check and job_start): run it as run_check or as a job."
	}
	return p + " is read-only in the sandbox (the tools on PATH, git's directories): write under the private tmp ($TMPDIR)" + f.alsoWritable() + " instead."
}

// homeFix says what the sandbox shows of $HOME.
const homeFix = "the sandbox shows of the daemon's $HOME only the tool caches (Go, cargo, rustup, npm, pip, ...) and the tools on its PATH; the process's own HOME is private. Keep the file in the checkout, or ask a person to put the tool's directory on the daemon's PATH."

// judgeProgram decides a program that was not found.
func judgeProgram(fd finding, f Facts) (Diagnosis, bool) {
	d := Diagnosis{Line: fd.line}
	if !f.Namespaces || f.Exists == nil || fd.path == "" {
		return d, false // without a mount namespace the view is the daemon's
	}
	name := fd.path
	if strings.Contains(name, "/") && !path.IsAbs(name) {
		return d, false // relative to the process's directory: inside the checkout
	}
	where, ok := f.Exists(name)
	if !ok || under(where, f.Visible...) {
		return d, false // missing outside the sandbox too, or shown inside
	}
	d.Layer, d.What = MountNamespace, name
	if where != name {
		d.What += " (" + where + " outside the sandbox)"
	}
	if path.IsAbs(name) {
		d.Fix = where + " exists outside the sandbox, but the sandbox does not mount its directory (it shows the system directories, the tools on the daemon's PATH, the checkout and the caches; its /tmp is private): " +
			"run a program from one of those, or ask a person to put its directory on the daemon's PATH."
		return d, true
	}
	d.Fix = "the daemon's PATH has it at " + where + ", but the sandbox does not mount that directory (a symlink or shim into a directory that is not on the daemon's PATH?): " +
		"ask a person to put the directory that holds the real program on the daemon's PATH, or install the tool under a system directory."
	return d, true
}

// networkFix names the grant of outside network for tool.
func networkFix(tool string) string {
	switch tool {
	case ToolRunCheck:
		return `Declare effects: ["network"] on run_check; outside network then needs a policy rule that allows it or a person's approval (APPROVAL_REQUIRED names it). Loopback (127.0.0.1, ::1) needs no grant.`
	case ToolJobStart:
		return "Start the job with network: true; it then needs a policy rule that allows it or a person's approval (APPROVAL_REQUIRED names it). Loopback (127.0.0.1, ::1) needs no grant."
	}
	return `run_command never has network: run it as run_check with effects: ["network"] (loopback needs no grant) or as job_start with network: true; outside network needs a policy rule that allows it or a person's approval.`
}

// writeFix names the option that lets the process write the checkout.
func (f Facts) writeFix() string {
	switch f.Tool {
	case ToolRunCheck:
		return `Declare effects: ["workspace_write"] on run_check: the check may then write the checkout (and its evidence is never shared with other checkouts).`
	case ToolJobStart:
		return `Start the job with writes: true (it holds the workspace lease while it runs) or isolation: "worktree" (it writes a throw-away worktree).`
	}
	return `run_command is read-only: run it as run_check with effects: ["workspace_write"], or as job_start with writes: true or isolation: "worktree".`
}

// alsoWritable lists the writable directories besides the private tmp.
func (f Facts) alsoWritable() string {
	if len(f.Writable) == 0 {
		return ""
	}
	return ", " + strings.Join(f.Writable, ", ")
}

// writable is every directory the process could write.
func (f Facts) writable() []string {
	if f.Tmp == "" {
		return f.Writable
	}
	return append(append([]string(nil), f.Writable...), f.Tmp)
}

// abs makes a message's path absolute: relative to Dir (or Root), ~ the
// daemon's home.
func (f Facts) abs(p string) string {
	p = strings.Trim(strings.TrimSpace(p), `'"‘’`)
	if p == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(p, "~"); ok && (rest == "" || rest[0] == '/') {
		if f.Home == "" {
			return ""
		}
		return path.Join(f.Home, rest)
	}
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	dir := f.Dir
	if dir == "" {
		dir = f.Root
	}
	if dir == "" {
		return ""
	}
	return path.Join(dir, p)
}

// secret reports whether p is (below) a closed secret path, and which.
func (f Facts) secret(p string) (string, bool) {
	if f.Root == "" || !under(p, f.Root) {
		return "", false
	}
	for _, s := range f.Secrets {
		if s != "" && under(p, path.Join(f.Root, s)) {
			return s, true
		}
	}
	return "", false
}

// under reports whether p is one of dirs or below one.
func under(p string, dirs ...string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if d == "/" || p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}
