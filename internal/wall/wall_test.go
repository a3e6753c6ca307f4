package wall

import (
	"strings"
	"testing"
)

// exists is the daemon's side of the fixtures: what its PATH and file
// system have.
func exists(p string) (string, bool) {
	m := map[string]string{
		"node":                              "/home/u/.nvm/versions/node/v20.11.0/bin/node",
		"python3":                           "/usr/bin/python3",
		"/home/u/.config/app/settings.json": "/home/u/.config/app/settings.json",
		"/home/u/.nvm/versions/node/v20.11.0/bin/node": "/home/u/.nvm/versions/node/v20.11.0/bin/node",
		"/srv/fixtures/big.bin":                        "/srv/fixtures/big.bin",
	}
	w, ok := m[p]
	return w, ok
}

// The confinements of the fixtures.
var (
	// landlockRead is run_command on the Fast Path: Landlock and seccomp.
	landlockRead = Facts{Confined: true, Tool: ToolRunCommand, Root: "/src/app", Dir: "/src/app",
		Tmp: "/tmp/harnessd-sandbox-1000/read-123", ReadOnly: []string{"/home/u/go/pkg/mod", "/home/u/.npm"},
		Secrets: []string{"test/sample_key", ".env", "secrets"}, Hidden: []string{"/home/u/.local/state/harnessd"},
		Home: "/home/u", Exists: exists}
	// landlockJob is a job where namespaces are missing.
	landlockJob = with(landlockRead, func(f *Facts) { f.Tool = ToolJobStart; f.ReadOnly = nil })
	// nsCheck is a check in namespaces, its working directory pkg.
	nsCheck = Facts{Confined: true, Tool: ToolRunCheck, Namespaces: true, Root: "/src/app", Dir: "/src/app/pkg",
		Tmp: "/tmp", Writable: []string{"/home/u/go/pkg/mod", "/home/u/.cache/go-build"},
		Secrets: []string{"test/sample_key", ".env", "secrets"}, Hidden: []string{"/home/u/.local/state/harnessd"},
		Home: "/home/u", Exists: exists, Visible: []string{"/usr", "/bin", "/src/app", "/home/u/go/bin"}}
	nsJob    = with(nsCheck, func(f *Facts) { f.Tool = ToolJobStart; f.Dir = "" })
	nsJobNet = with(nsJob, func(f *Facts) { f.Network = true })
	// nsWriting is a job with writes: true (the checkout writable).
	nsWriting = with(nsJob, func(f *Facts) { f.Writable = append([]string{"/src/app"}, f.Writable...) })
	off       = with(nsJob, func(f *Facts) { f.Confined = false })
)

func with(f Facts, edit func(*Facts)) Facts {
	edit(&f)
	return f
}

type want struct {
	layer Layer
	what  string // equal
	fix   string // a substring of the fix
}

func TestDiagnose(t *testing.T) {
	tests := []struct {
		name   string
		exit   int
		output string
		facts  Facts
		want   []want
	}{
		// EROFS: the mount namespace's read-only binds.
		{"go golden file in the checkout", 1,
			"--- FAIL: TestGolden (0.00s)\n    golden_test.go:31: open testdata/out.golden: read-only file system\nFAIL\n", nsCheck,
			[]want{{MountNamespace, "/src/app/pkg/testdata/out.golden", `effects: ["workspace_write"]`}}},
		{"go mkdir in a job", 1, "mkdir /src/app/build: read-only file system\n", nsJob,
			[]want{{MountNamespace, "/src/app/build", `writes: true`}}},
		{"node snapshot", 1,
			"Error: EROFS: read-only file system, open '/src/app/__snapshots__/a.test.js.snap'\n    at Object.openSync (node:fs:573:18)\n", nsJob,
			[]want{{MountNamespace, "/src/app/__snapshots__/a.test.js.snap", `isolation: "worktree"`}}},
		{"python errno 30", 1,
			"Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\nOSError: [Errno 30] Read-only file system: 'tests/output.json'\n", nsCheck,
			[]want{{MountNamespace, "/src/app/pkg/tests/output.json", "workspace_write"}}},
		{"rust names no path", 101,
			"thread 'main' panicked at src/main.rs:4:10:\ncalled `Result::unwrap()` on an `Err` value: Os { code: 30, kind: ReadOnlyFilesystem, message: \"Read-only file system\" }\n", nsCheck,
			[]want{{MountNamespace, "a write (the message names no path)", "workspace_write"}}},
		{"touch", 1, "touch: cannot touch 'x.txt': Read-only file system\n", nsJob,
			[]want{{MountNamespace, "/src/app/x.txt", "writes: true"}}},
		{"sh redirection", 2, "sh: 1: cannot create /src/app/out.log: Read-only file system\n", nsJob,
			[]want{{MountNamespace, "/src/app/out.log", "writes: true"}}},
		{"a tool dir outside the checkout", 1, "open /usr/local/lib/node_modules/.cache/x: read-only file system\n", nsJob,
			[]want{{MountNamespace, "/usr/local/lib/node_modules/.cache/x", "private tmp ($TMPDIR)"}}},

		// Sockets: seccomp and Landlock without namespaces, the network
		// namespace with them.
		{"go listen on the fast path", 1,
			"--- FAIL: TestServer (0.00s)\n    server_test.go:18: listen tcp 127.0.0.1:0: socket: operation not permitted\n", landlockRead,
			[]want{{Seccomp, "socket() 127.0.0.1:0", `run_check with effects: ["network"]`}}},
		{"go httptest in a check", 1,
			"panic: httptest: failed to listen on a port: listen tcp6 [::1]:0: socket: operation not permitted\n", nsCheck,
			[]want{{Seccomp, "socket() [::1]:0", `Declare effects: ["network"]`}}},
		{"python socket family", 1, "OSError: [Errno 97] Address family not supported by protocol\n", nsJob,
			[]want{{Seccomp, "socket()", "network: true"}}},
		{"node listen EACCES under landlock", 1,
			"Error: listen EACCES: permission denied 127.0.0.1:3000\n    at Server.setupListenHandle [as _listen2] (node:net:1855:21)\n", landlockJob,
			[]want{{Landlock, "bind() 127.0.0.1:3000", "network: true"}}},
		{"go connect unreachable", 1, "Get \"https://api.github.com/\": dial tcp 140.82.112.3:443: connect: network is unreachable\n", nsJob,
			[]want{{NetworkNamespace, "connect() 140.82.112.3:443", "network: true"}}},
		{"python unreachable", 1,
			"pip._vendor.urllib3.exceptions.NewConnectionError: <pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno 101] Network is unreachable\n", nsJob,
			[]want{{NetworkNamespace, "connect()", "network: true"}}},
		{"go module download", 1,
			"go: downloading github.com/x/y v1.0.0\ngo: github.com/x/y@v1.0.0: Get \"https://proxy.golang.org/github.com/x/y/@v/v1.0.0.mod\": dial tcp: lookup proxy.golang.org on 127.0.0.53:53: read udp 127.0.0.1:40516->127.0.0.53:53: read: connection refused\n", nsCheck,
			[]want{{NetworkNamespace, "name resolution of proxy.golang.org", `effects: ["network"]`}}},
		{"python name resolution", 1, "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>\n", nsJob,
			[]want{{NetworkNamespace, "name resolution", "network: true"}}},
		{"npm offline", 1,
			"npm error code EAI_AGAIN\nnpm error syscall getaddrinfo\nnpm error errno EAI_AGAIN\nnpm error request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\nnpm error A complete log of this run can be found in: /tmp/.npm/_logs/x.log\n", nsJob,
			[]want{{NetworkNamespace, "name resolution of registry.npmjs.org", "network: true"}}},

		// EACCES/EPERM: closed and hidden paths, Landlock's read-only
		// checkout and $HOME.
		{"python secret fixture", 1, "PermissionError: [Errno 13] Permission denied: 'test/sample_key'\n", landlockRead,
			[]want{{Landlock, "/src/app/test/sample_key", "denylist exception"}}},
		{"go secret dir in namespaces", 1, "open /src/app/secrets/db.pem: permission denied\n", nsJob,
			[]want{{MountNamespace, "/src/app/secrets/db.pem", "denylist exception"}}},
		{"cat a secret", 1, "cat: .env: Permission denied\n", landlockRead,
			[]want{{Landlock, "/src/app/.env", "closes .env"}}},
		{"harnessd's data dir", 1, "open /home/u/.local/state/harnessd/store/MANIFEST: permission denied\n", landlockRead,
			[]want{{Landlock, "/home/u/.local/state/harnessd/store/MANIFEST", "nothing grants it"}}},
		{"landlock keeps the checkout read-only", 1, "    cover_test.go:9: open /src/app/coverage.out: permission denied\n", landlockRead,
			[]want{{Landlock, "/src/app/coverage.out", `run_check with effects: ["workspace_write"]`}}},
		{"node reads home", 1, "Error: EACCES: permission denied, open '/home/u/.config/app/settings.json'\n", landlockRead,
			[]want{{Landlock, "/home/u/.config/app/settings.json", "tool caches"}}},
		{"npm cache on the fast path", 1,
			"npm ERR! code EACCES\nnpm ERR! syscall mkdir\nnpm ERR! path /home/u/.npm/_cacache\nnpm ERR! errno -13\nnpm ERR! Your cache folder contains root-owned files\n", landlockRead,
			[]want{{Landlock, "/home/u/.npm/_cacache", "read-only on the Fast Path"}}},

		// ENOENT and programs outside the sandbox's view.
		{"sh: node not found", 127, "sh: 1: node: not found\n", nsCheck,
			[]want{{MountNamespace, "node (/home/u/.nvm/versions/node/v20.11.0/bin/node outside the sandbox)", "daemon's PATH"}}},
		{"dash running a script", 127, "/tmp/bin/go: 5: exec: /srv/fixtures/big.bin: not found\n", nsCheck,
			[]want{{MountNamespace, "/srv/fixtures/big.bin", "exists outside the sandbox"}}},
		{"bash: command not found", 127, "bash: line 1: node: command not found\n", nsJob,
			[]want{{MountNamespace, "node (/home/u/.nvm/versions/node/v20.11.0/bin/node outside the sandbox)", "daemon's PATH"}}},
		{"env shebang", 127, "/usr/bin/env: 'node': No such file or directory\n", nsJob,
			[]want{{MountNamespace, "node (/home/u/.nvm/versions/node/v20.11.0/bin/node outside the sandbox)", "daemon's PATH"}}},
		{"npm script", 1, "> demo@1.0.0 test\n> node test.js\n\nsh: 1: node: not found\nnpm error code 127\nnpm error path /src/app\nnpm error command failed\nnpm error command sh -c node test.js\n", nsJob,
			[]want{{MountNamespace, "node (/home/u/.nvm/versions/node/v20.11.0/bin/node outside the sandbox)", "daemon's PATH"}}},
		{"the launcher's exec", 127, "harnessd sandbox: start /home/u/.nvm/versions/node/v20.11.0/bin/node: no such file or directory\n", nsJob,
			[]want{{MountNamespace, "/home/u/.nvm/versions/node/v20.11.0/bin/node", "daemon's PATH"}}},
		{"a file of home not mounted", 1, "open /home/u/.config/app/settings.json: no such file or directory\n", nsCheck,
			[]want{{MountNamespace, "/home/u/.config/app/settings.json", "tool caches"}}},
		{"a system path not mounted", 1, "open /srv/fixtures/big.bin: no such file or directory\n", nsCheck,
			[]want{{MountNamespace, "/srv/fixtures/big.bin", "does not mount /srv/fixtures/big.bin"}}},

		// One diagnosis per wall and thing.
		{"repeated", 1, strings.Repeat("listen tcp 127.0.0.1:0: socket: operation not permitted\n", 50), nsCheck,
			[]want{{Seccomp, "socket() 127.0.0.1:0", "network"}}},

		// Not the sandbox: no diagnosis.
		{"exit 0", 0, "open testdata/out.golden: read-only file system\n", nsCheck, nil},
		{"sandbox off", 1, "open testdata/out.golden: read-only file system\n", off, nil},
		{"an ordinary go test failure", 1,
			"--- FAIL: TestAdd (0.00s)\n    add_test.go:9: Add(1, 2) = 4, want 3\nFAIL\nFAIL\texample.com/calc\t0.003s\n", nsCheck, nil},
		{"a pytest assertion about permissions", 1,
			"E       AssertionError: assert 'permission denied' == 'ok'\nFAILED tests/test_x.py::test_perm - AssertionError\n", landlockRead, nil},
		{"a jest failure", 1,
			"FAIL src/sum.test.js\n  ● adds 1 + 2 to equal 3\n    expect(received).toBe(expected) // Object.is equality\n    Expected: 3\n    Received: 4\n", nsJob, nil},
		{"network granted", 1, "dial tcp 140.82.112.3:443: connect: network is unreachable\n", nsJobNet, nil},
		{"socket with network granted", 1, "listen tcp 127.0.0.1:0: socket: operation not permitted\n", nsJobNet, nil},
		{"name resolution with network granted", 1, "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>\n", nsJobNet, nil},
		{"a privileged port", 1, "listen tcp :80: bind: permission denied\n", landlockJob, nil},
		{"a tool that is missing outside too", 127, "sh: 1: jest: not found\n", nsCheck, nil},
		{"bash without namespaces", 127, "bash: node: command not found\n", landlockRead, nil},
		{"a relative program", 127, "sh: 1: ./gradlew: not found\n", nsJob, nil},
		{"a missing golden file", 1, "    x_test.go:12: open testdata/golden.json: no such file or directory\n", nsCheck, nil},
		{"a missing file outside too", 1, "open /srv/nothing/here: no such file or directory\n", nsCheck, nil},
		{"EROFS without a mount namespace", 1, "open /src/app/x: read-only file system\n", landlockRead, nil},
		{"EROFS in a writable checkout", 1, "open /src/app/x: read-only file system\n", nsWriting, nil},
		{"EACCES in the private tmp", 1,
			"    perm_test.go:20: open /tmp/harnessd-sandbox-1000/read-123/TestPerm123/001/f: permission denied\n", landlockRead, nil},
		{"EACCES under the checkout in namespaces", 1, "open /src/app/readonly.txt: permission denied\n", nsCheck, nil},
		{"a system file", 1, "open /etc/shadow: permission denied\n", landlockRead, nil},
		{"a worktree job in the data dir", 1, "open /home/u/.local/state/harnessd/worktrees/job_1/testdata/x.golden: read-only file system\n",
			with(nsJob, func(f *Facts) {
				f.Root = "/home/u/.local/state/harnessd/worktrees/job_1"
				f.Writable = []string{f.Root}
			}), nil},
		{"chmod's EPERM", 1, "chmod /src/app/x: operation not permitted\n", landlockRead, nil},
		{"python EPERM", 1, "PermissionError: [Errno 1] Operation not permitted: '/src/app/x'\n", landlockRead, nil},
		{"loopback refused", 1, "dial tcp 127.0.0.1:8080: connect: connection refused\n", nsCheck, nil},
		{"no such host", 1, "dial tcp: lookup nonexistent.invalid: no such host\n", nsCheck, nil},
		{"rust ENOENT without a path", 1, "Error: No such file or directory (os error 2)\n", nsCheck, nil},
		{"a program the sandbox shows", 127, "sh: 1: python3: not found\n", with(nsCheck, func(f *Facts) { f.Visible = []string{"/usr", "/bin"} }), nil},
		{"a shim's target the sandbox shows", 127, "sh: 1: node: not found\n", with(nsCheck, func(f *Facts) { f.Visible = []string{"/usr", "/home/u/.nvm"} }), nil},
		{"a host file in /tmp", 1, "open /tmp/fixture.bin: no such file or directory\n", with(nsCheck, func(f *Facts) {
			f.Exists = func(p string) (string, bool) { return p, p == "/tmp/fixture.bin" }
		}), []want{{MountNamespace, "/tmp/fixture.bin", "its /tmp is private"}}},
		{"a path the sandbox shows", 1, "open /srv/fixtures/big.bin: no such file or directory\n", with(nsCheck, func(f *Facts) { f.Visible = []string{"/srv"} }), nil},
		{"unknown Exists", 127, "sh: 1: node: not found\n", with(nsCheck, func(f *Facts) { f.Exists = nil }), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diagnose(tt.exit, tt.output, tt.facts)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d diagnoses %+v, want %d %+v", len(got), got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Layer != w.layer || g.What != w.what || !strings.Contains(g.Fix, w.fix) {
					t.Errorf("diagnosis %d: got {%s %q fix %q}, want {%s %q fix containing %q}", i, g.Layer, g.What, g.Fix, w.layer, w.what, w.fix)
				}
				if g.Line == "" || !strings.Contains(tt.output, strings.TrimSuffix(g.Line, "…")) {
					t.Errorf("diagnosis %d: line %q is not a line of the output", i, g.Line)
				}
			}
			if s := Suspect(tt.output); len(tt.want) > 0 && !s {
				t.Errorf("Suspect = false for an output with a diagnosis")
			}
		})
	}
}

func TestDiagnoseBounds(t *testing.T) {
	var b strings.Builder
	for _, p := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		b.WriteString("open /src/app/" + p + ": read-only file system\n")
	}
	b.WriteString("x: " + strings.Repeat("y", 10000) + ": read-only file system\n")
	got := Diagnose(1, b.String(), nsJob)
	if len(got) != MaxDiagnoses {
		t.Fatalf("got %d diagnoses, want %d", len(got), MaxDiagnoses)
	}
	long := Diagnose(1, "open /src/app/"+strings.Repeat("y", 1000)+": read-only file system\n", nsJob)
	if len(long) != 1 || len(long[0].Line) > maxLine+len("…") {
		t.Fatalf("got %+v, want one diagnosis with a clipped line", long)
	}
}

func TestSuspect(t *testing.T) {
	if Suspect("ok  \texample.com/pkg\t0.01s\nPASS\n") {
		t.Error("Suspect of a passing run: got true, want false")
	}
	if !Suspect("sh: 1: node: not found") {
		t.Error("Suspect of a missing program: got false, want true")
	}
}
