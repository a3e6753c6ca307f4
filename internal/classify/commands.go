package classify

import (
	"path"
	"strconv"
	"strings"
)

func init() {
	commands = map[string]command{
		"env":     {fn: classifyEnv, wrapper: true},
		"timeout": {fn: classifyTimeout, wrapper: true},
		"nice":    {fn: classifyNice, wrapper: true},
		"nohup":   {fn: classifyNohup, wrapper: true},
		"time":    {fn: classifyTime, wrapper: true},
		"stdbuf":  {fn: classifyStdbuf, wrapper: true},
		"xargs":   {fn: classifyXargs, wrapper: true},
		"command": {fn: classifyCommandBuiltin, wrapper: true},

		"git":   {fn: classifyGit},
		"go":    {fn: classifyGo},
		"gofmt": {fn: classifyGofmt},
		"find":  {fn: classifyFind, wrapper: true},
		"sed":   {fn: classifySed},
		"rg":    {fn: classifyRg},
		"sort":  {fn: classifySort},
		"uniq":  {fn: classifyUniq},
		"tee":   {fn: classifyTee},
		"file":  {fn: classifyFile},
		"tree":  {fn: classifyTree},
		"date":  {fn: classifyDate},

		"rm":    {fn: classifyRm},
		"mv":    {fn: classifyMv},
		"chmod": {fn: classifyChown},
		"chown": {fn: classifyChown},
		"chgrp": {fn: classifyChown},

		"npm":    {fn: classifyNpm},
		"pnpm":   {fn: classifyNpm},
		"yarn":   {fn: classifyYarn},
		"pip":    {fn: classifyPip},
		"pip3":   {fn: classifyPip},
		"cargo":  {fn: classifyCargo},
		"twine":  {fn: classifyTwine},
		"gh":     {fn: classifyGh},
		"curl":   {fn: classifyCurl},
		"wget":   {fn: classifyWget},
		"rsync":  {fn: classifyRsync},
		"docker": {fn: classifyDocker},
		"podman": {fn: classifyDocker},
	}
	for p := range deployTools {
		commands[p] = command{fn: classifyDeploy}
	}
	for _, p := range []string{
		"cat", "head", "tail", "wc", "ls", "stat", "grep", "egrep", "fgrep", "basename",
		"dirname", "realpath", "readlink", "echo", "printf", "pwd", "true", "false", "uname",
		"which", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "md5sum",
		"b2sum", "cksum", "cmp", "diff", "du", "cut", "nl", "tac", "rev", "jq", "id", "whoami",
		"seq", "sleep", "comm", "paste", "fold", "expand", "unexpand", "od", "strings",
		"base64", "nproc", "tr", "test", "[",
	} {
		commands[p] = command{fn: readonlyProgram}
	}
	for _, p := range []string{
		"touch", "mkdir", "cp", "ln", "rmdir", "unlink", "install", "patch", "make", "gmake",
		"gzip", "gunzip", "unzip", "zip", "bzip2", "xz",
	} {
		commands[p] = command{fn: workspaceProgram}
	}
	destructive := map[string]string{
		"dd":         "dd writes raw data to files and devices",
		"shred":      "shred destroys file contents",
		"wipefs":     "wipefs erases filesystem signatures",
		"fdisk":      "fdisk edits partition tables",
		"sfdisk":     "sfdisk edits partition tables",
		"cfdisk":     "cfdisk edits partition tables",
		"gdisk":      "gdisk edits partition tables",
		"parted":     "parted edits partition tables",
		"mkswap":     "mkswap formats a device",
		"blkdiscard": "blkdiscard discards device blocks",
		"truncate":   "truncate cuts files short",
		"kill":       "kill signals processes",
		"killall":    "killall signals processes",
		"pkill":      "pkill signals processes",
		"shutdown":   "shutdown stops the machine",
		"reboot":     "reboot restarts the machine",
		"halt":       "halt stops the machine",
		"poweroff":   "poweroff stops the machine",
		"sudo":       "sudo runs commands with elevated privileges",
		"su":         "su runs commands as another user",
		"doas":       "doas runs commands with elevated privileges",
		"pkexec":     "pkexec runs commands with elevated privileges",
		"run0":       "run0 runs commands with elevated privileges",
	}
	for p, why := range destructive {
		commands[p] = command{fn: func(string, []string, int) Result { return result(Destructive, why) }}
	}
	network := map[string]string{
		"ssh":     "ssh runs commands on a remote host",
		"scp":     "scp copies files over the network",
		"sftp":    "sftp transfers files over the network",
		"nc":      "nc opens network connections",
		"ncat":    "ncat opens network connections",
		"netcat":  "netcat opens network connections",
		"telnet":  "telnet opens network connections",
		"socat":   "socat opens network connections",
		"ftp":     "ftp transfers files over the network",
		"kubectl": "kubectl talks to a Kubernetes cluster",
		"helm":    "helm talks to a Kubernetes cluster",
		"aws":     "aws talks to a cloud provider",
		"gcloud":  "gcloud talks to a cloud provider",
		"az":      "az talks to a cloud provider",
	}
	for p, why := range network {
		commands[p] = command{fn: func(string, []string, int) Result { return remote(why) }}
	}
	unknown := map[string]string{
		"awk":      "awk can run commands (system()) and write files",
		"gawk":     "gawk can run commands (system()) and write files",
		"mawk":     "mawk can run commands (system()) and write files",
		"nawk":     "nawk can run commands (system()) and write files",
		"printenv": "printenv prints the environment, which may hold secrets",
		"npx":      "npx downloads and runs packages",
	}
	for p, why := range unknown {
		commands[p] = command{fn: func(string, []string, int) Result { return result(Unknown, why) }}
	}
}

func readonlyProgram(prog string, _ []string, _ int) Result {
	return result(Readonly, prog+" only reads")
}

func workspaceProgram(prog string, _ []string, _ int) Result {
	return result(WorkspaceWrite, prog+" writes files in the workspace")
}

func classifyDate(_ string, args []string, _ int) Result {
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--") {
			if name, _ := longName(a); abbrevOf(name, "set", 1) {
				return result(Destructive, "date --set changes the system clock")
			}
			continue
		}
		if isShort(a) {
			if letters, _ := scanShort(a, "dfrsI"); strings.HasSuffix(letters, "s") {
				return result(Destructive, "date -s changes the system clock")
			}
		}
	}
	return result(Readonly, "date only reads")
}

func classifyGofmt(_ string, args []string, _ int) Result {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-w" || a == "--w" {
			return result(WorkspaceWrite, "gofmt -w rewrites files")
		}
		if v, ok := strings.CutPrefix(strings.TrimPrefix(a, "-"), "-w="); ok || strings.HasPrefix(a, "-w=") {
			if !ok {
				v = strings.TrimPrefix(a, "-w=")
			}
			if b, err := strconv.ParseBool(v); err != nil || b {
				return result(WorkspaceWrite, "gofmt -w="+v+" rewrites files")
			}
		}
	}
	return result(Readonly, "gofmt without -w only prints")
}

func classifyRg(_ string, args []string, _ int) Result {
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "--") {
			continue
		}
		switch name, _ := longName(a); name {
		case "pre":
			return result(Unknown, "rg --pre runs a program for every file")
		case "hostname-bin":
			return result(Unknown, "rg --hostname-bin runs a program")
		}
	}
	return result(Readonly, "rg only reads")
}

func classifySort(_ string, args []string, _ int) Result {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, _ := longName(a)
			switch {
			case abbrevOf(name, "output", 1):
				return result(WorkspaceWrite, "sort --output writes a file")
			case abbrevOf(name, "compress-program", 2): // GNU takes "--co"
				return result(Unknown, "sort --compress-program runs a program")
			}
			continue
		}
		if isShort(a) {
			letters, next := scanShort(a, "ktoST")
			if strings.HasSuffix(letters, "o") {
				return result(WorkspaceWrite, "sort -o writes a file")
			}
			if next {
				i++
			}
		}
	}
	return result(Readonly, "sort only reads")
}

func classifyUniq(_ string, args []string, _ int) Result {
	operands := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			operands += len(args) - i - 1
			break
		}
		if strings.HasPrefix(a, "--") {
			continue
		}
		if isShort(a) {
			if _, next := scanShort(a, "fsw"); next {
				i++
			}
			continue
		}
		operands++
	}
	if operands >= 2 {
		return result(WorkspaceWrite, "uniq writes its output file")
	}
	return result(Readonly, "uniq only reads")
}

func harmlessSink(p string) bool {
	return p == "/dev/null" || p == "/dev/stdout" || p == "/dev/stderr"
}

func classifyTee(_ string, args []string, _ int) Result {
	opts := true
	for _, a := range args {
		if opts && a == "--" {
			opts = false
			continue
		}
		if opts && len(a) > 1 && a[0] == '-' {
			continue
		}
		if !harmlessSink(a) {
			return result(WorkspaceWrite, "tee writes "+strconv.Quote(a))
		}
	}
	return result(Readonly, "tee without files only copies its input")
}

func classifyFile(_ string, args []string, _ int) Result {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--compile" || (isShort(a) && strings.Contains(a, "C")) {
			return result(WorkspaceWrite, "file -C writes a compiled magic file")
		}
	}
	return result(Readonly, "file only reads")
}

func classifyTree(_ string, args []string, _ int) Result {
	for _, a := range args {
		if a == "--" {
			break
		}
		if isShort(a) && strings.ContainsAny(a, "oR") {
			return result(WorkspaceWrite, "tree -o/-R writes files")
		}
	}
	return result(Readonly, "tree only reads")
}

func classifyFind(prog string, args []string, depth int) Result {
	r := result(Readonly, "find only reads")
	deletes, execDestroys := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if isDynamic(a) {
			r.raise(Unknown, "argument "+strconv.Itoa(i+1)+" of find is expanded at run time and could add actions")
			continue
		}
		switch a {
		case "-delete":
			r.raise(Destructive, "find -delete deletes files")
			deletes = true
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			r.raise(WorkspaceWrite, "find "+a+" writes a file")
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j] != ";" && args[j] != "+" {
				j++
			}
			if j == i+1 {
				r.raise(Unknown, "find "+a+" without a command")
				i = j
				continue
			}
			if shellSubstitutes(args[i+1:j], "{}") {
				r.raise(Shell, "find "+a+" puts file names into a shell script: a crafted name becomes code")
				i = j
				continue
			}
			inner := classifyArgv(args[i+1:j], depth+1)
			inner.Effect = nil // what -exec runs on is only known at run time
			execDestroys = execDestroys || inner.Class == Destructive
			if inner.Class == Readonly {
				r.addReason("find " + a + " runs " + inner.Program + ", which only reads")
			} else {
				for k, m := range inner.Reasons {
					inner.Reasons[k] = "find " + a + " runs " + inner.Program + ": " + m
				}
				r.merge(inner)
				r.Program = prog
			}
			i = j
		}
	}
	if deletes && !execDestroys && r.Class == Destructive {
		r.Effect = findDeletes(args)
	}
	return r
}

// findDeletes is the effect of find -delete when it is the only
// destructive action (raise cleared the effect otherwise) and its start
// paths are inside the checkout: what it removes is the start paths'
// files the expression selects. "." is allowed here: the expression
// narrows it, and the sandbox keeps .git read-only.
func findDeletes(args []string) *Effect {
	var starts []string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" || a == "," {
			break
		}
		starts = append(starts, a)
	}
	if len(starts) == 0 {
		starts = []string{"."}
	}
	for _, s := range starts {
		if path.Clean(s) == "." {
			continue
		}
		if workspacePath(s) != "" {
			return nil
		}
	}
	var expr []string
	for _, a := range args[i:] {
		if a != "-delete" {
			expr = append(expr, a)
		}
	}
	what := "files under " + strings.Join(starts, ", ")
	if len(expr) > 0 {
		what += " matching " + strings.Join(expr, " ")
	}
	return &Effect{Kind: WorkspaceDelete, Removes: []string{what}}
}

// ---- removal and permissions -------------------------------------------------

func classifyRm(_ string, args []string, _ int) Result {
	recursive := false
	var operands []string
	opts := true
	for _, a := range args {
		switch {
		case opts && a == "--":
			opts = false
		case opts && strings.HasPrefix(a, "--"):
			name, _ := longName(a)
			switch {
			case abbrevOf(name, "recursive", 1):
				recursive = true
			case abbrevOf(name, "no-preserve-root", 3):
				return result(Destructive, "rm --no-preserve-root can delete the whole filesystem")
			}
		case opts && isShort(a):
			if strings.ContainsAny(a, "rR") {
				recursive = true
			}
		default:
			operands = append(operands, a)
		}
	}
	if !recursive {
		return result(WorkspaceWrite, "rm deletes files")
	}
	if len(operands) == 0 {
		return result(Destructive, "rm -r deletes directory trees")
	}
	if why := workspacePaths(operands); why != "" {
		return outsideCheckout("rm -r", why)
	}
	r := result(Destructive, "rm -r deletes directory trees: "+strings.Join(operands, ", "))
	r.Effect = &Effect{Kind: WorkspaceDelete, Removes: operands}
	return r
}

func isRootish(p string) bool {
	switch p {
	case "/", ".", "./", "..", "../", "~", "~/", "*", "/*", "./*", "$HOME":
		return true
	}
	c := path.Clean(p)
	return c == "/" || c == "." || c == ".." || (path.IsAbs(c) && strings.Count(c, "/") == 1)
}

func classifyMv(_ string, args []string, _ int) Result {
	opts := true
	for i := 0; i < len(args); i++ {
		a := args[i]
		if opts && a == "--" {
			opts = false
			continue
		}
		if opts && (a == "-t" || a == "--target-directory") && i+1 < len(args) {
			i++
			if path.Clean(args[i]) == "/" {
				return result(Destructive, "mv onto / replaces system directories")
			}
			continue
		}
		if opts && strings.HasPrefix(a, "--target-directory=") && path.Clean(a[len("--target-directory="):]) == "/" {
			return result(Destructive, "mv onto / replaces system directories")
		}
		if opts && len(a) > 1 && a[0] == '-' {
			continue
		}
		if a != "" && path.Clean(a) == "/" {
			return result(Destructive, "mv onto / replaces system directories")
		}
	}
	return result(WorkspaceWrite, "mv moves files")
}

func classifyChown(prog string, args []string, _ int) Result {
	recursive := false
	var operands []string
	opts := true
	for _, a := range args {
		switch {
		case opts && a == "--":
			opts = false
		case opts && strings.HasPrefix(a, "--"):
			if name, _ := longName(a); abbrevOf(name, "recursive", 3) {
				recursive = true
			}
		case opts && isShort(a) && (prog != "chmod" || strings.Trim(a[1:], "RcfvHLP") == ""):
			if strings.Contains(a, "R") {
				recursive = true
			}
		default:
			operands = append(operands, a)
		}
	}
	if recursive {
		for i, t := range operands {
			if i == 0 {
				continue // the mode or owner
			}
			if isRootish(t) {
				return result(Destructive, prog+" -R on "+strconv.Quote(t)+" changes a whole tree")
			}
		}
	}
	return result(WorkspaceWrite, prog+" changes file permissions")
}

// ---- package managers and network tools -------------------------------------

func firstOperand(args []string) (string, []string) {
	for i, a := range args {
		if a == "--" {
			if i+1 < len(args) {
				return args[i+1], args[i+2:]
			}
			return "", nil
		}
		if !strings.HasPrefix(a, "-") {
			return a, args[i+1:]
		}
	}
	return "", nil
}

func classifyNpm(prog string, args []string, _ int) Result {
	sub, _ := firstOperand(args)
	for _, a := range args {
		if a == "--version" || a == "-v" {
			return result(Readonly, prog+" --version only prints")
		}
	}
	switch sub {
	case "publish", "unpublish", "deprecate":
		target := "the package in the working directory"
		_, rest := firstOperand(args)
		for i := 0; i < len(rest); i++ {
			a := rest[i]
			if strings.HasPrefix(a, "-") {
				switch a {
				case "--registry", "--tag", "--access", "--otp", "--workspace", "-w":
					i++
				}
				continue
			}
			target = a
			break
		}
		return remoteWrite(prog+" "+sub+" writes to the package registry", orWord(optionValue(args, "--registry"), "the default npm registry"), target, args)
	case "dist-tag", "owner", "access", "login", "adduser",
		"logout", "team", "token", "star", "unstar", "org", "hook":
		return remote(prog + " " + sub + " writes to the package registry")
	case "install", "i", "ci", "add", "update", "up", "upgrade", "uninstall", "remove", "rm", "un",
		"prune", "dedupe", "link", "audit":
		r := result(WorkspaceWrite, prog+" "+sub+" installs packages into the workspace")
		r.Network = true
		return r
	case "test", "t", "run", "run-script", "start", "build", "version":
		return result(WorkspaceWrite, prog+" "+sub+" runs package scripts")
	case "view", "info", "show", "search", "outdated", "ping", "whoami":
		return remote(prog + " " + sub + " queries the package registry")
	case "ls", "list", "ll", "la", "root", "prefix", "help", "explain", "why":
		return result(Readonly, prog+" "+sub+" only reads")
	case "exec", "x", "dlx":
		return result(Unknown, prog+" "+sub+" downloads and runs packages")
	}
	return result(Unknown, prog+" "+strconv.Quote(sub)+" is not a known readonly subcommand")
}

func classifyYarn(prog string, args []string, depth int) Result {
	sub, _ := firstOperand(args)
	switch sub {
	case "", "install", "add", "remove", "upgrade", "up":
		r := result(WorkspaceWrite, "yarn "+sub+" installs packages into the workspace")
		r.Network = true
		return r
	case "npm":
		if _, rest := firstOperand(args); len(rest) > 0 {
			if op, _ := firstOperand(rest); op == "publish" {
				return remoteWrite("yarn npm publish writes to the package registry", orWord(optionValue(args, "--registry"), "the default npm registry"), "the package in the working directory", args)
			}
		}
		return remote("yarn npm talks to the package registry")
	}
	return classifyNpm(prog, args, depth)
}

func classifyPip(prog string, args []string, _ int) Result {
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--py") { // --python (and its abbreviations) re-executes pip under another program
			return result(Unknown, prog+" "+a+" runs pip under another interpreter")
		}
	}
	sub, _ := firstOperand(args)
	switch sub {
	case "install", "uninstall", "download", "wheel":
		r := result(WorkspaceWrite, prog+" "+sub+" installs packages")
		r.Network = true
		return r
	case "list", "show", "freeze", "check", "help", "debug", "inspect":
		return result(Readonly, prog+" "+sub+" only reads")
	case "search", "index":
		return remote(prog + " " + sub + " queries the package index")
	}
	return result(Unknown, prog+" "+strconv.Quote(sub)+" is not a known readonly subcommand")
}

func classifyCargo(_ string, args []string, _ int) Result {
	sub, _ := firstOperand(args)
	switch sub {
	case "publish", "yank":
		reg := orWord(optionValue(args, "--registry"), orWord(optionValue(args, "--index"), "crates.io"))
		target := orWord(optionValue(args, "--package", "-p"), "the crate in the working directory")
		if sub == "yank" {
			target = orWord(optionValue(args, "--version", "--vers"), target)
		}
		return remoteWrite("cargo "+sub+" writes to the crate registry", reg, target, args)
	case "login", "logout", "owner":
		return remote("cargo " + sub + " writes to the crate registry")
	case "search":
		return remote("cargo search queries the crate registry")
	case "build", "b", "test", "t", "check", "c", "clippy", "doc", "d", "bench", "fmt", "clean",
		"update", "fetch", "fix", "generate-lockfile", "vendor", "add", "remove", "install", "uninstall":
		return result(WorkspaceWrite, "cargo "+sub+" builds or changes the workspace")
	case "metadata", "tree", "version", "help", "locate-project", "pkgid", "read-manifest", "verify-project":
		return result(Readonly, "cargo "+sub+" only reads")
	case "run", "r":
		return result(Unknown, "cargo run runs the built program")
	}
	for _, a := range args {
		if a == "--version" || a == "-V" {
			return result(Readonly, "cargo --version only prints")
		}
	}
	return result(Unknown, "cargo "+strconv.Quote(sub)+" is not a known subcommand")
}

func classifyTwine(_ string, args []string, _ int) Result {
	sub, _ := firstOperand(args)
	switch sub {
	case "upload":
		repo := orWord(optionValue(args, "--repository-url"), orWord(optionValue(args, "--repository", "-r"), "PyPI"))
		_, files := firstOperand(args)
		return remoteWrite("twine upload uploads to the package index", repo, orWord(strings.Join(files, " "), "the files in dist/"), args)
	case "register":
		return remote("twine " + sub + " uploads to the package index")
	case "check":
		return result(Readonly, "twine check only reads")
	}
	return result(Unknown, "twine "+strconv.Quote(sub)+" is not a known subcommand")
}

func classifyGh(_ string, args []string, _ int) Result {
	group, rest := firstOperand(args)
	action, _ := firstOperand(rest)
	if group == "api" {
		for i, a := range rest {
			switch {
			case a == "-f" || a == "-F" || a == "--field" || a == "--raw-field" || a == "--input" ||
				strings.HasPrefix(a, "--field=") || strings.HasPrefix(a, "--raw-field=") ||
				strings.HasPrefix(a, "--input="):
				return remote("gh api sends data to GitHub")
			case (a == "-X" || a == "--method") && i+1 < len(rest) && !strings.EqualFold(rest[i+1], "GET"):
				return remote("gh api " + rest[i+1] + " writes to GitHub")
			case strings.HasPrefix(a, "--method=") && !strings.EqualFold(a[len("--method="):], "GET"),
				strings.HasPrefix(a, "-X") && len(a) > 2 && !strings.EqualFold(a[2:], "GET"):
				return remote("gh api " + a + " writes to GitHub")
			}
		}
		return remote("gh api reads from GitHub")
	}
	switch action {
	case "list", "view", "status", "diff", "checks", "":
		return remote("gh " + group + " reads from GitHub")
	}
	if ghWrites[group+" "+action] {
		repo := orWord(optionValue(args, "--repo", "-R"), "the checkout's GitHub repository")
		target := group + " " + action
		if _, after := firstOperand(rest); len(after) > 0 {
			if n, _ := firstOperand(after); n != "" {
				target += " " + n
			}
		}
		return remoteWrite("gh "+group+" "+action+" writes to GitHub", repo, target, args)
	}
	return remote("gh " + group + " " + action + " writes to GitHub")
}

// ghWrites are the gh writes a person may approve as a durable job: pull
// requests and releases. Deletions (gh release delete, gh repo delete) and
// gh api calls stay rejected.
var ghWrites = map[string]bool{
	"pr create": true, "pr merge": true, "pr close": true, "pr reopen": true, "pr ready": true,
	"pr comment": true, "pr review": true, "pr edit": true,
	"release create": true, "release upload": true, "release edit": true,
}

func classifyCurl(_ string, args []string, _ int) Result {
	for i, a := range args {
		switch {
		case a == "-d" || a == "-F" || a == "-T" || a == "--json" || a == "--form" ||
			a == "--upload-file" || strings.HasPrefix(a, "--data") || strings.HasPrefix(a, "--form") ||
			strings.HasPrefix(a, "--json") || strings.HasPrefix(a, "--upload-file"):
			return remote("curl upload: " + a + " sends data")
		case a == "-X" || a == "--request":
			if i+1 < len(args) && isWriteMethod(args[i+1]) {
				return remote("curl upload: -X " + args[i+1] + " sends a write request")
			}
		case strings.HasPrefix(a, "--request="):
			if isWriteMethod(a[len("--request="):]) {
				return remote("curl upload: " + a + " sends a write request")
			}
		case isShort(a):
			letters, _ := scanShort(a, "dFTXoHuAeEKrwxybcCmz")
			last := letters[len(letters)-1]
			if last == 'd' || last == 'F' || last == 'T' {
				return remote("curl upload: " + a + " sends data")
			}
			if last == 'X' && len(letters) < len(a)-1 && isWriteMethod(a[len(letters)+1:]) {
				return remote("curl upload: " + a + " sends a write request")
			}
		}
	}
	return remote("curl makes a network request")
}

func isWriteMethod(m string) bool {
	switch strings.ToUpper(m) {
	case "GET", "HEAD", "OPTIONS":
		return false
	}
	return true
}

func classifyWget(_ string, args []string, _ int) Result {
	for _, a := range args {
		if strings.HasPrefix(a, "--post-") || strings.HasPrefix(a, "--body-") ||
			(strings.HasPrefix(a, "--method") && !strings.HasSuffix(strings.ToUpper(a), "=GET")) {
			return remote("wget upload: " + a + " sends data")
		}
	}
	return remote("wget downloads over the network")
}

func classifyRsync(_ string, args []string, _ int) Result {
	del, removeSources := false, false
	var operands []string
	for _, a := range args {
		if strings.HasPrefix(a, "--delete") {
			del = true
		}
		if strings.HasPrefix(a, "--remove-source-files") {
			del, removeSources = true, true
		}
		if strings.HasPrefix(a, "-") {
			if strings.HasPrefix(a, "--rsh") || (isShort(a) && strings.Contains(a, "e")) {
				return remote("rsync over a remote shell uses the network")
			}
			continue
		}
		if strings.Contains(a, "::") || strings.HasPrefix(a, "rsync://") ||
			(strings.Contains(a, ":") && !strings.Contains(a[:strings.IndexByte(a, ':')], "/")) {
			return remote("rsync to or from " + strconv.Quote(a) + " uses the network")
		}
		operands = append(operands, a)
	}
	if !del {
		return result(WorkspaceWrite, "rsync copies files")
	}
	if removeSources || len(operands) < 2 {
		return result(Destructive, "rsync --delete deletes files")
	}
	dest := operands[len(operands)-1]
	if why := workspacePath(dest); why != "" {
		return outsideCheckout("rsync --delete into", why)
	}
	r := result(Destructive, "rsync --delete deletes the files of "+dest+" that are not in the source")
	r.Effect = &Effect{Kind: WorkspaceDelete, Removes: []string{"files in " + dest + " not in " + strings.Join(operands[:len(operands)-1], ", ")}}
	return r
}

func classifyDocker(prog string, args []string, _ int) Result {
	sub, _ := firstOperand(args)
	switch sub {
	case "push":
		_, rest := firstOperand(args)
		image, _ := firstOperand(rest)
		reg := "Docker Hub"
		if host, _, ok := strings.Cut(image, "/"); ok && (strings.ContainsAny(host, ".:") || host == "localhost") {
			reg = host
		}
		return remoteWrite(prog+" push writes to a registry", reg, orWord(image, "an image"), args)
	case "login", "pull":
		return remote(prog + " " + sub + " talks to a registry")
	}
	return result(Unknown, prog+" can run arbitrary containers")
}
