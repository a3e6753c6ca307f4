package classify

import (
	"strings"
)

// Focus tells whether a check command is focused (names explicit files, packages or a test filter) and so short enough for the Fast Path.
func Focus(argv []string) (focused bool, reason string) {
	if len(argv) == 0 {
		return false, "empty command"
	}
	prog, _ := programName(argv[0])
	args := argv[1:]
	switch prog {
	case "go":
		if len(args) == 0 {
			return false, "go without a subcommand is not a check"
		}
		switch args[0] {
		case "test", "vet", "build":
			return focusGo(args[0], args[1:])
		}
		return false, "go " + args[0] + " is not a recognised check"
	case "pytest", "py.test":
		return focusPytest(args)
	case "python", "python3":
		if len(args) >= 2 && args[0] == "-m" && args[1] == "pytest" {
			return focusPytest(args[2:])
		}
		return false, prog + " is not a recognised check"
	case "jest", "vitest":
		return focusJest(prog, args)
	case "npx", "bunx":
		if len(args) > 0 && (args[0] == "jest" || args[0] == "vitest") {
			return focusJest(args[0], args[1:])
		}
		return false, prog + " is not a recognised check"
	case "cargo":
		if len(args) > 0 && (args[0] == "test" || args[0] == "t") {
			return focusCargo(args[1:])
		}
		return false, "cargo is only recognised for cargo test"
	case "npm", "yarn", "pnpm":
		test := len(args) > 0 && (args[0] == "test" || args[0] == "t")
		if len(args) > 1 && args[0] == "run" && args[1] == "test" {
			test, args = true, args[1:]
		}
		if !test {
			return false, prog + " is only recognised for " + prog + " test"
		}
		for i, a := range args {
			if a == "--" && i+1 < len(args) {
				return true, prog + " test passes a path or filter to the test runner"
			}
		}
		return false, prog + " test runs the whole test suite"
	case "make", "gmake":
		return false, "make targets run an unknown amount of work"
	}
	return false, prog + " is not a recognised focused check"
}

var goValueFlags = map[string]bool{
	"run": true, "skip": true, "bench": true, "benchtime": true, "count": true, "timeout": true,
	"cpu": true, "parallel": true, "coverprofile": true, "covermode": true, "coverpkg": true,
	"tags": true, "ldflags": true, "gcflags": true, "asmflags": true, "o": true, "exec": true,
	"p": true, "mod": true, "modfile": true, "blockprofile": true, "cpuprofile": true,
	"memprofile": true, "mutexprofile": true, "outputdir": true, "trace": true, "fuzz": true,
	"fuzztime": true, "fuzzminimizetime": true, "list": true, "shuffle": true, "vet": true,
	"C": true, "overlay": true, "pgo": true, "toolexec": true, "memprofilerate": true,
	"blockprofilerate": true, "mutexprofilefraction": true, "buildmode": true, "compiler": true,
	"installsuffix": true, "pkgdir": true, "json": false,
}

func focusGo(sub string, args []string) (bool, string) {
	var pkgs []string
	runFilter := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-args" || a == "--args" {
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			name := strings.TrimLeft(a, "-")
			value, attached := "", false
			if j := strings.IndexByte(name, '='); j >= 0 {
				name, value, attached = name[:j], name[j+1:], true
			}
			if goValueFlags[name] && !attached && i+1 < len(args) {
				i++
				value = args[i]
			}
			switch name {
			case "run":
				runFilter = value
			case "fuzz":
				return false, "go test -fuzz runs until -fuzztime"
			case "bench":
				return false, "go test -bench runs benchmarks"
			}
			continue
		}
		pkgs = append(pkgs, a)
	}
	if sub == "test" && runFilter != "" && runFilter != "." && runFilter != ".*" {
		return true, "go test -run " + runFilter + " selects tests by name"
	}
	for _, p := range pkgs {
		if strings.Contains(p, "...") {
			return false, "go " + sub + " " + p + " covers every package below it"
		}
	}
	if len(pkgs) == 0 {
		return true, "go " + sub + " checks only the current package"
	}
	return true, "go " + sub + " names explicit packages"
}

func focusPytest(args []string) (bool, string) {
	valueFlags := map[string]bool{"-k": true, "-m": true, "-p": true, "-c": true, "-o": true,
		"-W": true, "-n": true, "--rootdir": true, "--basetemp": true, "--confcutdir": true,
		"--junitxml": true, "--maxfail": true, "--deselect": true, "--ignore": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-k" || strings.HasPrefix(a, "-k") && len(a) > 2 && !strings.HasPrefix(a, "--") {
			return true, "pytest -k selects tests by name"
		}
		if strings.HasPrefix(a, "-") {
			if valueFlags[a] {
				i++
			}
			continue
		}
		if strings.Contains(a, "::") {
			return true, "pytest names a test node " + a
		}
		if strings.HasSuffix(a, ".py") {
			return true, "pytest names the test file " + a
		}
	}
	return false, "pytest without a file, node id or -k runs the whole suite"
}

func focusJest(prog string, args []string) (bool, string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-t" || a == "--testNamePattern" || strings.HasPrefix(a, "--testNamePattern=") ||
			strings.HasPrefix(a, "-t="):
			return true, prog + " -t selects tests by name"
		case a == "--findRelatedTests" || a == "--related":
			return true, prog + " --findRelatedTests names files"
		case a == "run" || a == "watch" && prog == "vitest":
			continue
		case strings.HasPrefix(a, "-"):
			continue
		default:
			return true, prog + " names the test path " + a
		}
	}
	return false, prog + " without a path or -t runs the whole suite"
}

func focusCargo(args []string) (bool, string) {
	valueFlags := map[string]bool{"-p": true, "--package": true, "--test": true, "--bench": true,
		"--example": true, "--bin": true, "--features": true, "-F": true, "-j": true, "--jobs": true,
		"--target": true, "--manifest-path": true, "--profile": true, "--target-dir": true,
		"--color": true, "-Z": true, "--exclude": true, "--config": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			for _, b := range args[i+1:] {
				if !strings.HasPrefix(b, "-") {
					return true, "cargo test -- " + b + " filters tests by name"
				}
			}
			break
		}
		if a == "--test" && i+1 < len(args) || strings.HasPrefix(a, "--test=") {
			return true, "cargo test --test selects one test target"
		}
		if strings.HasPrefix(a, "-") {
			if valueFlags[a] {
				i++
			}
			continue
		}
		return true, "cargo test " + a + " filters tests by name"
	}
	return false, "cargo test without a filter runs every test"
}
