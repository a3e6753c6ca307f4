package classify

import (
	"path"
	"strconv"
	"strings"
)

func classifyGo(_ string, args []string, _ int) Result {
	if len(args) > 0 && (args[0] == "-C" || strings.HasPrefix(args[0], "-C=")) {
		return result(Unknown, "go -C runs in another directory")
	}
	sub, rest := firstOperand(args)
	has := func(names ...string) bool {
		for _, a := range rest {
			if a == "--" {
				return false
			}
			for _, n := range names {
				if a == n || a == "-"+n || strings.HasPrefix(a, n+"=") || strings.HasPrefix(a, "-"+n+"=") {
					return true
				}
			}
		}
		return false
	}
	switch sub {
	case "version", "help":
		return result(Readonly, "go "+sub+" only reads")
	case "doc":
		if has("-http") {
			return result(Unknown, "go doc -http downloads and runs a documentation server")
		}
		return result(Readonly, "go doc only reads")
	case "env":
		if has("-w", "-u") {
			return result(WorkspaceWrite, "go env -w changes the Go configuration")
		}
		return result(Readonly, "go env only reads")
	case "list":
		if has("-export", "-compiled") {
			return result(WorkspaceWrite, "go list -export builds packages")
		}
		if has("-m") && has("-u", "-versions", "-retracted") {
			return remote("go list -m -u queries the module proxy")
		}
		if r, ok := goFlags("list", rest); !ok {
			return r
		}
		return result(Readonly, "go list only reads")
	case "vet":
		if r, ok := goFlags("vet", rest); !ok {
			return r
		}
		return result(Readonly, "go vet only reads: it type-checks the packages and runs no code of theirs")
	case "build":
		return classifyGoBuild(rest)
	case "test":
		return result(WorkspaceWrite, "go test builds and runs the package's tests")
	case "generate", "install", "fmt", "fix", "clean", "work":
		return result(WorkspaceWrite, "go "+sub+" writes build outputs or files")
	case "get":
		r := result(WorkspaceWrite, "go get downloads modules and edits go.mod")
		r.Network = true
		return r
	case "mod":
		op, opArgs := firstOperand(rest)
		switch op {
		case "graph", "why", "verify":
			return result(Readonly, "go mod "+op+" only reads")
		case "edit":
			for _, a := range opArgs {
				if a != "-json" && a != "-print" && a != "--json" && a != "--print" && strings.HasPrefix(a, "-") {
					return result(WorkspaceWrite, "go mod edit changes go.mod")
				}
			}
			return result(Readonly, "go mod edit -json only prints")
		case "download", "tidy":
			r := result(WorkspaceWrite, "go mod "+op+" downloads modules and edits go.mod")
			r.Network = true
			return r
		}
		return result(WorkspaceWrite, "go mod "+op+" changes the module")
	case "run", "tool":
		return result(Unknown, "go "+sub+" runs a program")
	}
	return result(Unknown, "go "+strconv.Quote(sub)+" is not a known readonly subcommand")
}

// classifyGoBuild: go build writes nothing but its cache when it builds
// several packages or names its output in /tmp or /dev/null; one main
// package without -o becomes a binary in the current directory.
func classifyGoBuild(args []string) Result {
	r, ok := goFlags("build", args)
	if !ok {
		return r
	}
	// Every -o counts, not only the last: where Go's flag parsing stops
	// (at the first operand) is its business, the answer must hold for
	// any reading of the line.
	if outs := goFlagValues(args, "o"); len(outs) > 0 {
		for _, out := range outs {
			if !tmpOutput(out) {
				return result(WorkspaceWrite, "go build -o "+strconv.Quote(out)+" writes outside /tmp and /dev/null")
			}
		}
		return result(Readonly, "go build -o "+outs[len(outs)-1]+" writes only there and the build cache")
	}
	pkgs := goPackages(args)
	seen := map[string]bool{}
	for _, p := range pkgs {
		local := p == "." || p == ".." || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../")
		if !local || strings.Contains(p, "...") || strings.HasSuffix(p, ".go") {
			seen = nil
			break
		}
		seen[path.Clean(p)] = true
	}
	if len(seen) >= 2 {
		return result(Readonly, "go build of several packages discards the results (writes only the build cache)")
	}
	return result(WorkspaceWrite, "go build of one main package (which "+strings.Join(append([]string{"go", "build"}, pkgs...), " ")+
		" may be) writes its binary into the current directory: add -o /dev/null to build without writing")
}

// tmpOutput reports whether go build -o p writes only to /dev/null or
// below /tmp.
func tmpOutput(p string) bool {
	if p == "/dev/null" {
		return true
	}
	c := path.Clean(p)
	return path.IsAbs(p) && (c == "/tmp" || strings.HasPrefix(c, "/tmp/")) && !isDynamic(p)
}

// goBool are the go build flags that take no value (-name=value is still
// allowed for them).
var goBool = map[string]bool{
	"a": true, "n": true, "x": true, "v": true, "race": true, "msan": true, "asan": true, "cover": true,
	"work": true, "json": true, "trimpath": true, "buildvcs": true, "linkshared": true, "modcacherw": true,
	"e": true, "m": true, "deps": true, "test": true, "find": true, "u": true, "versions": true,
	"retracted": true, "export": true, "compiled": true, "V": true, "flags": true, "diff": true,
	"source": true, "all": true, "fix": true,
}

// goSafe are the flags of go build, vet and list that neither run a
// program nor write outside the build cache (the values of -mod, -buildmode,
// -gcflags and -ldflags are checked apart).
var goSafe = map[string]bool{
	"a": true, "n": true, "x": true, "v": true, "p": true, "race": true, "msan": true, "asan": true,
	"cover": true, "covermode": true, "coverpkg": true, "work": true, "json": true, "tags": true,
	"trimpath": true, "buildvcs": true, "pgo": true, "mod": true, "buildmode": true, "gcflags": true,
	"ldflags": true,
}

// goListSafe are go list's own flags.
var goListSafe = map[string]bool{
	"e": true, "f": true, "m": true, "deps": true, "test": true, "find": true, "reuse": true,
	"u": true, "versions": true, "retracted": true,
}

// goUnsafe says why a flag of go build, vet or list is refused.
var goUnsafe = map[string]string{
	"toolexec":            "runs a program for every tool the build invokes",
	"exec":                "runs the built program through another program",
	"vettool":             "runs another program as the vet tool",
	"overlay":             "replaces source files with files named in a JSON file",
	"modfile":             "reads and may write another go.mod",
	"pkgdir":              "writes packages to another directory",
	"installsuffix":       "writes packages to another directory",
	"compiler":            "runs another compiler",
	"gccgoflags":          "passes flags to gccgo",
	"asmflags":            "passes flags to the assembler, which can write files",
	"linkshared":          "links against shared libraries built elsewhere",
	"modcacherw":          "leaves the module cache writable",
	"o":                   "writes its output file",
	"fix":                 "applies the suggested fixes to the source files",
	"debug-actiongraph":   "writes a file",
	"debug-trace":         "writes a file",
	"debug-runtime-trace": "writes a file",
	"C":                   "runs in another directory",
}

// goFlags checks the flags of go build, vet or list: every flag is known
// to run nothing and write nothing but the build cache (and -o, checked
// by the caller). It returns the refusal when one is not.
func goFlags(sub string, args []string) (Result, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if isDynamic(a) {
			return result(Unknown, "an argument of go "+sub+" is expanded at run time and could add flags"), false
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name, value, attached := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		takesValue := !goBool[name] && !(sub == "vet" && vetAnalyzerFlag(name))
		if !attached && !takesValue && sub == "vet" && i+1 < len(args) && strings.HasPrefix(args[i+1], "-") {
			// A switch vet may not know (-f) could take the next word as
			// its value ("--", "-tags"): the line read that way must pass too.
			if r, ok := goFlags(sub, args[i+2:]); !ok {
				return r, false
			}
		}
		if !attached && takesValue {
			if i+1 < len(args) {
				i++
				value = args[i]
			}
		}
		if isDynamic(value) {
			return result(Unknown, "the value of go "+sub+" -"+name+" is expanded at run time"), false
		}
		if name == "o" && sub == "build" {
			continue
		}
		if why, bad := goUnsafe[name]; bad {
			c := Unknown
			if strings.Contains(why, "writes") || name == "fix" {
				c = WorkspaceWrite
			}
			return result(c, "go "+sub+" -"+name+" "+why), false
		}
		switch {
		case name == "mod":
			if value != "readonly" && value != "vendor" {
				r := result(WorkspaceWrite, "go "+sub+" -mod="+value+" may edit go.mod and go.sum and download modules")
				r.Network = true
				return r, false
			}
		case name == "buildmode":
			switch value {
			case "default", "exe", "pie", "archive":
			default:
				return result(WorkspaceWrite, "go "+sub+" -buildmode="+value+" writes more than a binary"), false
			}
		case name == "gcflags" || name == "ldflags":
			if tok, ok := compilerFlagsSafe(name, value); !ok {
				return result(Unknown, "go "+sub+" -"+name+" passes "+strconv.Quote(tok)+" to the "+map[string]string{"gcflags": "compiler", "ldflags": "linker"}[name]+
					", which may write files or run programs (only -N -l -m -S -B -C for the compiler and -s -w -X for the linker are known to be harmless)"), false
			}
		case goSafe[name], sub == "list" && goListSafe[name], sub == "vet" && (vetAnalyzerFlag(name) || vetValueFlag(name)):
		default:
			return result(Unknown, "go "+sub+" -"+name+" is not a flag known to run nothing and write nothing"), false
		}
	}
	return Result{}, true
}

// vetAnalyzerFlag reports whether name is one of go vet's analyzer
// switches (-printf, -shadow=false, ...): a lowercase word, or the
// informational -V, -flags, -json, -diff, -source.
func vetAnalyzerFlag(name string) bool {
	if name == "" || name == "c" || goUnsafe[name] != "" || goSafe[name] {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 'a' || name[i] > 'z' {
			return name == "V"
		}
	}
	return true
}

// vetValueFlag reports whether name is a vet flag that takes a value and
// only tunes a report (-c N, -printf.funcs=..., -unusedresult.funcs=...).
func vetValueFlag(name string) bool {
	if name == "c" {
		return true
	}
	a, b, ok := strings.Cut(name, ".")
	return ok && vetAnalyzerFlag(a) && vetAnalyzerFlag(b)
}

// compilerFlagsSafe checks the tokens of -gcflags or -ldflags (after an
// optional "pattern=") against the short list of harmless ones; it returns
// the first other token.
func compilerFlagsSafe(flag, v string) (string, bool) {
	if i := strings.IndexByte(v, '='); i >= 0 && !strings.HasPrefix(v, "-") {
		v = v[i+1:] // all=-N -l
	}
	if strings.ContainsAny(v, `'"\`) {
		return v, false
	}
	toks := strings.Fields(v)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch flag {
		case "gcflags":
			switch {
			case t == "-N", t == "-l", t == "-m", t == "-S", t == "-B", t == "-C",
				len(t) == 4 && strings.HasPrefix(t, "-m=") && t[3] >= '0' && t[3] <= '3':
			default:
				return t, false
			}
		case "ldflags":
			switch {
			case t == "-s", t == "-w":
			case t == "-X" && i+1 < len(toks) && strings.Contains(toks[i+1], "="):
				i++
			case strings.HasPrefix(t, "-X=") && strings.Count(t, "=") >= 2:
			default:
				return t, false
			}
		}
	}
	return "", true
}

// goFlagValues returns every value of flag name in args, in order.
func goFlagValues(args []string, name string) []string {
	var vs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		n, val, attached := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		if n == name {
			if !attached && i+1 < len(args) {
				i++
				val = args[i]
			}
			vs = append(vs, val)
			continue
		}
		if !attached && !goBool[n] && i+1 < len(args) {
			i++
		}
	}
	return vs
}

// goPackages returns the operands of go build (the arguments that are no
// flag or flag value).
func goPackages(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if len(a) >= 2 && a[0] == '-' {
			if _, _, attached := strings.Cut(a, "="); !attached && !goBool[strings.TrimLeft(a, "-")] {
				i++
			}
			continue
		}
		out = append(out, a)
	}
	return out
}
