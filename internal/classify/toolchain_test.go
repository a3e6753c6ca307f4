package classify

import (
	"path"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestToolchainCommands: routine read-only toolchain commands are readonly
// (they run on the Fast Path); every flag that runs a program or writes
// outside the build cache, /tmp and /dev/null keeps them off it.
func TestToolchainCommands(t *testing.T) {
	tests := []struct {
		argv   []string
		want   Class
		reason string
	}{
		// version queries
		{argv: []string{"node", "--version"}, want: Readonly, reason: "only prints its version"},
		{argv: []string{"node", "-v"}, want: Readonly},
		{argv: []string{"npm", "--version"}, want: Readonly},
		{argv: []string{"python3", "--version"}, want: Readonly},
		{argv: []string{"python3", "-V"}, want: Readonly},
		{argv: []string{"python", "--version"}, want: Readonly},
		{argv: []string{"pip", "--version"}, want: Readonly},
		{argv: []string{"pip3", "-V"}, want: Readonly},
		{argv: []string{"cargo", "--version"}, want: Readonly},
		{argv: []string{"cargo", "-V"}, want: Readonly},
		{argv: []string{"rustc", "--version"}, want: Readonly},
		{argv: []string{"rustc", "-vV"}, want: Readonly},
		{argv: []string{"go", "version"}, want: Readonly},
		{argv: []string{"java", "-version"}, want: Readonly},
		{argv: []string{"javac", "--version"}, want: Readonly},
		{argv: []string{"ruby", "--version"}, want: Readonly},
		{argv: []string{"gcc", "--version"}, want: Readonly},
		{argv: []string{"clang", "--version"}, want: Readonly},
		{argv: []string{"make", "--version"}, want: Readonly},
		{argv: []string{"make", "-v"}, want: Readonly},
		{argv: []string{"cmake", "--version"}, want: Readonly},
		{argv: []string{"/usr/bin/node", "--version"}, want: Readonly},
		{argv: []string{"./node", "--version"}, want: Unknown, reason: "by path"},
		{argv: []string{"node", "--version", "x.js"}, want: Unknown},
		{argv: []string{"node", "version"}, want: Unknown},
		{argv: []string{"node", "x.js"}, want: Unknown},
		{argv: []string{"python3", "-V", "-c", "import os"}, want: Unknown},
		{argv: []string{"python3", "-v"}, want: Unknown}, // verbose, then the REPL
		{argv: []string{"ruby", "-v"}, want: Unknown},    // verbose, then a script from stdin
		{argv: []string{"make", "version"}, want: WorkspaceWrite},
		{argv: []string{"npm", "version", "patch"}, want: WorkspaceWrite},
		{argv: []string{"gcc", "-o", "x", "x.c"}, want: Unknown},
		{argv: []string{"env", "JAVA_TOOL_OPTIONS=-javaagent:a.jar", "java", "-version"}, want: Unknown, reason: "JAVA_TOOL_OPTIONS"},
		{argv: []string{"env", "RUSTUP_TOOLCHAIN=/tmp/evil", "cargo", "--version"}, want: Unknown},
		{argv: []string{"env", "CGO_CFLAGS=-fplugin=./x.so", "go", "vet", "."}, want: Unknown},
		{argv: []string{"env", "npm_config_script_shell=./x", "npm", "ls"}, want: Unknown},
		{argv: []string{"env", "LC_ALL=C", "node", "--version"}, want: Readonly},

		// go env, list, doc
		{argv: []string{"go", "env"}, want: Readonly},
		{argv: []string{"go", "env", "-json", "GOMODCACHE"}, want: Readonly},
		{argv: []string{"go", "env", "-w", "GOFLAGS=-toolexec=./x"}, want: WorkspaceWrite},
		{argv: []string{"go", "env", "-u", "GOFLAGS"}, want: WorkspaceWrite},
		{argv: []string{"go", "list", "-m", "all"}, want: Readonly},
		{argv: []string{"go", "list", "-f", "{{.Dir}}", "./..."}, want: Readonly},
		{argv: []string{"go", "list", "-json", "-deps", "-test", "."}, want: Readonly},
		{argv: []string{"go", "list", "-export", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "list", "-toolexec", "./x", "."}, want: Unknown, reason: "-toolexec"},
		{argv: []string{"go", "list", "-overlay=o.json", "."}, want: Unknown},
		{argv: []string{"go", "list", "-modfile=alt.mod", "."}, want: Unknown},
		{argv: []string{"go", "list", "-mod=mod", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "list", "-m", "-u", "all"}, want: Remote},
		{argv: []string{"go", "doc", "fmt.Println"}, want: Readonly},
		{argv: []string{"go", "doc", "-all", "-u", "./x"}, want: Readonly},
		{argv: []string{"go", "doc", "-http"}, want: Unknown},

		// go vet
		{argv: []string{"go", "vet", "./..."}, want: Readonly},
		{argv: []string{"go", "vet", "-printf=false", "-shadow", "./pkg"}, want: Readonly},
		{argv: []string{"go", "vet", "-json", "-c", "2", "-tags", "integration", "."}, want: Readonly},
		{argv: []string{"go", "vet", "-printf.funcs=Logf", "."}, want: Readonly},
		{argv: []string{"go", "vet", "-race", "-mod=vendor", "."}, want: Readonly},
		{argv: []string{"go", "vet", "-vettool=./x", "."}, want: Unknown, reason: "-vettool"},
		{argv: []string{"go", "vet", "-vettool", "./x", "."}, want: Unknown},
		{argv: []string{"go", "vet", "--vettool=./x", "."}, want: Unknown},
		// rapid: a switch vet may not know (-f) could take the next word
		// as its value, and -toolexec be a flag.
		{argv: []string{"go", "vet", "-f", "--", "-toolexec"}, want: Unknown, reason: "-toolexec"},
		{argv: []string{"go", "vet", "-f", "-tags", "-toolexec"}, want: Unknown, reason: "-toolexec"},
		{argv: []string{"go", "vet", "-printf", "-json", "--", "./..."}, want: Readonly},
		{argv: []string{"go", "vet", "-toolexec=./x", "."}, want: Unknown},
		{argv: []string{"go", "vet", "-fix", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "vet", "-overlay", "o.json", "."}, want: Unknown},
		{argv: []string{"go", "vet", "-o", "x", "."}, want: WorkspaceWrite},

		// go build
		{argv: []string{"go", "build", "-o", "/dev/null", "./..."}, want: Readonly},
		{argv: []string{"go", "build", "-o=/dev/null", "."}, want: Readonly},
		{argv: []string{"go", "build", "-o", "/tmp/x", "./cmd/x"}, want: Readonly},
		{argv: []string{"go", "build", "-o", "/tmp/", "./..."}, want: Readonly},
		{argv: []string{"go", "build", "-race", "-trimpath", "-tags", "x", "-o", "/dev/null", "."}, want: Readonly},
		{argv: []string{"go", "build", "-gcflags=all=-N -l", "-o", "/dev/null", "."}, want: Readonly},
		{argv: []string{"go", "build", "-ldflags", "-s -w -X main.version=1.2", "-o", "/dev/null", "."}, want: Readonly},
		{argv: []string{"go", "build", "./a", "./b"}, want: Readonly, reason: "several packages"},
		{argv: []string{"go", "build", "./..."}, want: WorkspaceWrite, reason: "-o /dev/null"},
		{argv: []string{"go", "build"}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "./a", "./a/"}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "a.go", "b.go"}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "example.com/a", "./a"}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "-o", "bin/x", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "-o", "/tmp/../home/x", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "-o", "tmp/x", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "-toolexec", "./x", "-o", "/dev/null", "."}, want: Unknown, reason: "-toolexec"},
		{argv: []string{"go", "build", "-toolexec=./x", "./a", "./b"}, want: Unknown},
		{argv: []string{"go", "build", "--toolexec=./x", "-o", "/dev/null", "."}, want: Unknown},
		{argv: []string{"go", "build", "-exec", "./x", "-o", "/dev/null", "."}, want: Unknown},
		{argv: []string{"go", "build", "-overlay=o.json", "-o", "/dev/null", "."}, want: Unknown},
		{argv: []string{"go", "build", "-modfile", "x.mod", "-o", "/dev/null", "."}, want: Unknown},
		{argv: []string{"go", "build", "-pkgdir", "/tmp/p", "-o", "/dev/null", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "-mod=mod", "-o", "/dev/null", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "-buildmode=plugin", "-o", "/tmp/p.so", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "-compiler", "gccgo", "-o", "/dev/null", "."}, want: Unknown},
		{argv: []string{"go", "build", "-ldflags=-extld=./x", "-o", "/dev/null", "."}, want: Unknown, reason: "linker"},
		{argv: []string{"go", "build", "-ldflags", "-linkmode external -extld ./x", "-o", "/dev/null", "."}, want: Unknown},
		{argv: []string{"go", "build", "-gcflags=-o=/tmp/x", "-o", "/dev/null", "."}, want: Unknown},
		{argv: []string{"go", "build", "-asmflags=-o=x", "-o", "/dev/null", "."}, want: Unknown},
		{argv: []string{"go", "build", "-debug-trace=t.json", "-o", "/dev/null", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "build", "-C", "..", "-o", "/dev/null", "."}, want: Unknown},
		{argv: []string{"go", "build", "-frobnicate", "-o", "/dev/null", "."}, want: Unknown, reason: "not a flag known"},
		{argv: []string{"go", "build", "-o", "/dev/null", "-o", "out", "."}, want: WorkspaceWrite},

		// tests and code generation stay off the Fast Path
		{argv: []string{"go", "test", "./..."}, want: WorkspaceWrite},
		{argv: []string{"go", "test", "-exec", "./x", "."}, want: WorkspaceWrite},
		{argv: []string{"go", "generate", "./..."}, want: WorkspaceWrite},
		{argv: []string{"go", "run", "."}, want: Unknown},
		{argv: []string{"go", "tool", "x"}, want: Unknown},
		{argv: []string{"cargo", "build"}, want: WorkspaceWrite},
		{argv: []string{"cargo", "check"}, want: WorkspaceWrite},
		{argv: []string{"npm", "run", "build"}, want: WorkspaceWrite},
		{argv: []string{"npm", "exec", "x"}, want: Unknown},
		{argv: []string{"npm", "install"}, want: WorkspaceWrite},
		{argv: []string{"npm", "ls"}, want: Readonly},
		{argv: []string{"npm", "ls", "--all"}, want: Readonly},
		{argv: []string{"pip", "list"}, want: Readonly},
		{argv: []string{"pip", "show", "requests"}, want: Readonly},
		{argv: []string{"pip", "--python=./x", "list"}, want: Unknown},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			got := Argv(tt.argv)
			if got.Class != tt.want {
				t.Fatalf("Argv(%q).Class = %v (reasons %q), want %v", tt.argv, got.Class, got.Reasons, tt.want)
			}
			if tt.reason != "" && !strings.Contains(strings.Join(got.Reasons, "\n"), tt.reason) {
				t.Errorf("Argv(%q).Reasons = %q, want one containing %q", tt.argv, got.Reasons, tt.reason)
			}
		})
	}
}

func TestToolchainScripts(t *testing.T) {
	tests := []struct {
		script string
		want   Class
	}{
		{"go vet ./... && go build -o /dev/null ./...", Readonly},
		{"node --version; python3 --version", Readonly},
		{"go build -o \"$TMPDIR/x\" .", Unknown}, // $TMPDIR is unset outside the sandbox: "/x"
		{"go vet -vettool=$(pwd)/x .", Shell},
		{"GOFLAGS=-toolexec=./x go vet .", Unknown},
	}
	for _, tt := range tests {
		if got := Script(tt.script); got.Class != tt.want {
			t.Errorf("Script(%q).Class = %v (reasons %q), want %v", tt.script, got.Class, got.Reasons, tt.want)
		}
	}
}

func TestIsTest(t *testing.T) {
	tests := []struct {
		argv []string
		want bool
	}{
		{[]string{"go", "test", "./..."}, true},
		{[]string{"go", "test", "-run", "TestX", "."}, true},
		{[]string{"go", "vet", "./..."}, false},
		{[]string{"go", "build"}, false},
		{[]string{"npm", "test"}, true},
		{[]string{"npm", "t"}, true},
		{[]string{"npm", "run", "test"}, true},
		{[]string{"npm", "run", "test:unit"}, true},
		{[]string{"npm", "run", "build"}, false},
		{[]string{"pnpm", "test"}, true},
		{[]string{"yarn", "test"}, true},
		{[]string{"yarn", "test:e2e"}, true},
		{[]string{"npm", "exec", "jest"}, true},
		{[]string{"npx", "jest", "src"}, true},
		{[]string{"npx", "vitest", "run"}, true},
		{[]string{"npx", "prettier"}, false},
		{[]string{"pytest"}, true},
		{[]string{"pytest", "-k", "x"}, true},
		{[]string{"py.test"}, true},
		{[]string{"python", "-m", "pytest"}, true},
		{[]string{"python3", "-m", "unittest", "discover"}, true},
		{[]string{"python3", "-B", "-m", "unittest"}, true},
		{[]string{"python3", "-m", "http.server"}, false},
		{[]string{"python3", "x.py"}, false},
		{[]string{"cargo", "test"}, true},
		{[]string{"cargo", "nextest", "run"}, true},
		{[]string{"cargo", "build"}, false},
		{[]string{"make", "test"}, true},
		{[]string{"make", "-j4", "check"}, true},
		{[]string{"make", "test-unit"}, true},
		{[]string{"make", "build"}, false},
		{[]string{"make"}, false},
		{[]string{"jest"}, true},
		{[]string{"mocha", "test/"}, true},
		{[]string{"vitest"}, true},
		{[]string{"tox", "-e", "py311"}, true},
		{[]string{"rspec"}, true},
		{[]string{"bundle", "exec", "rspec"}, true},
		{[]string{"bundle", "exec", "rake", "test"}, true},
		{[]string{"mvn", "test"}, true},
		{[]string{"./gradlew", "test"}, true},
		{[]string{"dotnet", "test"}, true},
		{[]string{"deno", "test"}, true},
		{[]string{"ls"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := IsTest(tt.argv); got != tt.want {
			t.Errorf("IsTest(%q) = %v, want %v", tt.argv, got, tt.want)
		}
	}
}

// TestGoReadonlyProperty: whatever flags go build, vet or list get, a
// readonly answer never carries a flag that runs a program or writes
// outside /tmp, /dev/null and the build cache.
func TestGoReadonlyProperty(t *testing.T) {
	words := []string{"-o", "/dev/null", "/tmp/x", "bin/x", "-toolexec", "-toolexec=./x", "--toolexec", "-exec", "-vettool=./x",
		"-vettool", "./x", "-overlay", "o.json", "-modfile=a.mod", "-pkgdir", "-mod=mod", "-mod", "vendor", "-race", "-v",
		"-tags", "x", "-gcflags", "-ldflags", "all=-N -l", "-extld=./x", "-s -w", "-fix", "-json", "-printf", "./...", ".", "./a", "./b",
		"--", "-C", "-a", "-buildmode=plugin", "-debug-trace=x", "-o=/tmp/../x", "-c", "2", "-e", "-f", "{{.Dir}}"}
	rapid.Check(t, func(t *rapid.T) {
		sub := rapid.SampledFrom([]string{"build", "vet", "list"}).Draw(t, "sub")
		args := rapid.SliceOfN(rapid.SampledFrom(words), 0, 8).Draw(t, "args")
		argv := append([]string{"go", sub}, args...)
		r := Argv(argv)
		if r.Class != Readonly {
			return
		}
		// Walk the words as Go's flag package reads flags: a flag that
		// takes a value consumes the next word when none is attached (even
		// one that starts with a dash). Operands don't end the walk: a
		// readonly answer must hold however the line is read, so every -o
		// and -mod counts, not only the last.
		valued := map[string]bool{"o": true, "mod": true, "ldflags": true, "gcflags": true, "tags": true, "f": true,
			"toolexec": true, "exec": true, "vettool": true, "overlay": true, "modfile": true, "pkgdir": true,
			"C": true, "buildmode": true, "debug-trace": true, "c": true}
		for i := 0; i < len(args); i++ {
			a := args[i]
			if a == "--" {
				break
			}
			if !strings.HasPrefix(a, "-") {
				continue
			}
			name, value, attached := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if valued[name] && !attached && i+1 < len(args) {
				i++
				value = args[i]
			}
			switch name {
			case "toolexec", "exec", "vettool", "overlay", "modfile", "pkgdir", "fix", "C", "buildmode", "debug-trace":
				if name != "buildmode" || value == "plugin" {
					t.Fatalf("Argv(%q) is readonly with %s", argv, a)
				}
			case "ldflags", "gcflags":
				if strings.Contains(value, "extld") {
					t.Fatalf("Argv(%q) is readonly with %s %s", argv, a, value)
				}
			case "o":
				if value != "/dev/null" && !strings.HasPrefix(path.Clean(value), "/tmp") {
					t.Fatalf("Argv(%q) is readonly with -o %s", argv, value)
				}
			case "mod":
				if value == "mod" {
					t.Fatalf("Argv(%q) is readonly with -mod=mod", argv)
				}
			}
		}
	})
}
