package classify

import (
	"slices"
	"strings"
)

// versionArgs are, per toolchain program, the lone arguments that make it
// print its version and exit (`node --version`, `go version`): nothing of
// the checkout runs, nothing is written. The program must be the one on
// PATH (not ./node) and the argument alone: `node --version x.js` or
// `python3 -V -c ...` are judged as any other command.
var versionArgs = map[string][]string{
	"node": {"--version", "-v"}, "npm": {"--version", "-v"}, "npx": {"--version", "-v"},
	"pnpm": {"--version", "-v"}, "yarn": {"--version", "-v"}, "deno": {"--version", "-V"}, "bun": {"--version"},
	"tsc":    {"--version", "-v"},
	"python": {"--version", "-V", "-VV"}, "python3": {"--version", "-V", "-VV"}, "python2": {"--version", "-V"},
	"pypy3": {"--version", "-V"}, "pip": {"--version", "-V"}, "pip3": {"--version", "-V"},
	"cargo": {"--version", "-V", "version"}, "rustc": {"--version", "-V", "-vV"}, "rustup": {"--version", "-V"},
	"go":   {"version"},
	"java": {"-version", "--version"}, "javac": {"-version", "--version"},
	"ruby": {"--version"}, "gem": {"--version"}, "bundle": {"--version"},
	"gcc": {"--version", "-dumpversion"}, "g++": {"--version", "-dumpversion"}, "cc": {"--version"},
	"c++": {"--version"}, "clang": {"--version"}, "clang++": {"--version"},
	"make": {"--version", "-v"}, "gmake": {"--version", "-v"}, "cmake": {"--version"}, "ninja": {"--version"},
	"perl": {"--version", "-v"}, "php": {"--version", "-v"},
	"git": {"--version", "version"},
}

// versionQuery classifies `prog <version argument>` as readonly.
func versionQuery(prog string, args []string) (Result, bool) {
	if len(args) != 1 || !slices.Contains(versionArgs[prog], args[0]) {
		return Result{}, false
	}
	return result(Readonly, prog+" "+args[0]+" only prints its version"), true
}

// testRunners are programs that run a test suite, whatever their
// arguments.
var testRunners = map[string]bool{
	"pytest": true, "py.test": true, "tox": true, "nox": true, "nosetests": true, "nose2": true, "trial": true,
	"jest": true, "vitest": true, "mocha": true, "ava": true, "tap": true, "karma": true, "jasmine": true,
	"playwright": true, "cypress": true, "phpunit": true, "rspec": true, "ctest": true,
}

// testModules are Python modules that run tests (python -m pytest).
var testModules = map[string]bool{"pytest": true, "unittest": true, "nose2": true, "nose": true, "tox": true, "trial": true}

// IsTest reports whether argv runs tests: a test runner (pytest, jest,
// mocha, ...), a toolchain's test command (go test, cargo test, npm test,
// npm run test:unit, python -m unittest, make test, ...). Tests run the
// code under test, so they belong to run_check, not to run_command.
func IsTest(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	prog, _ := programName(argv[0])
	args := argv[1:]
	sub, rest := firstOperand(args)
	isTestWord := func(w string) bool {
		return w == "test" || w == "tests" || w == "check" || w == "spec" || strings.HasPrefix(w, "test:") || strings.HasPrefix(w, "test-") || strings.HasPrefix(w, "test_")
	}
	switch {
	case testRunners[prog]:
		return true
	case prog == "go":
		return sub == "test"
	case prog == "cargo":
		return sub == "test" || sub == "t" || sub == "nextest"
	case prog == "npm" || prog == "pnpm" || prog == "yarn" || prog == "bun":
		switch sub {
		case "test", "t", "tst":
			return true
		case "run", "run-script":
			script, _ := firstOperand(rest)
			return isTestWord(script)
		case "exec", "x", "dlx":
			runner, _ := firstOperand(rest)
			return testRunners[runner]
		}
		return prog == "yarn" && isTestWord(sub)
	case prog == "npx" || prog == "bunx" || prog == "pnpx":
		return testRunners[sub]
	case strings.HasPrefix(prog, "python") || strings.HasPrefix(prog, "pypy"):
		for i, a := range args {
			if a == "-m" && i+1 < len(args) {
				return testModules[args[i+1]]
			}
			if !strings.HasPrefix(a, "-") {
				return false
			}
		}
		return false
	case prog == "make" || prog == "gmake":
		for _, a := range args {
			if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && isTestWord(a) {
				return true
			}
		}
		return false
	case prog == "bundle":
		if sub != "exec" {
			return false
		}
		return IsTest(rest)
	case prog == "rake":
		return sub == "test" || sub == "spec"
	case prog == "mvn" || prog == "mvnw":
		return sub == "test" || sub == "verify"
	case prog == "gradle" || prog == "gradlew":
		return sub == "test" || sub == "check"
	case prog == "dotnet" || prog == "swift" || prog == "deno" || prog == "mix" || prog == "zig":
		return sub == "test"
	}
	return false
}
