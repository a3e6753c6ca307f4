package checkid

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// fakeTool writes an executable shell script called name into dir whose
// every run appends a line to dir/name.count and then runs body.
func fakeTool(t testing.TB, dir, name, body string) {
	t.Helper()
	script := "#!/bin/sh\necho run >> '" + filepath.Join(dir, name+".count") + "'\n" + body + "\n"
	p := filepath.Join(dir, name)
	// Write a new file and rename it over the old one: rewriting a script
	// in place while an earlier run still has it open can fail (ETXTBSY).
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

func runs(t testing.TB, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".count"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

func fingerprint(t testing.TB, p *EnvProbe, argv, environ []string) Env {
	t.Helper()
	env, err := p.Fingerprint(testCtx(t), argv, environ)
	if err != nil {
		t.Fatalf("Fingerprint(%q): %v", argv, err)
	}
	if env.Digest != env.ComputeDigest() {
		t.Fatalf("Digest = %s, want ComputeDigest() = %s", env.Digest, env.ComputeDigest())
	}
	return env
}

func TestFingerprintVars(t *testing.T) {
	bin := t.TempDir()
	fakeTool(t, bin, "go", `echo "go version go9.9.9 fake/arch"`)
	environ := []string{
		"PATH=" + bin, "GOFLAGS=-mod=mod", "SECRET_TOKEN=hunter2", "GOFLAGS=-race",
		"CGO_ENABLED=", "HOME=/nowhere", "NOEQUALS",
	}
	tests := []struct {
		name  string
		allow []string
		want  map[string]string
	}{
		{"default allowlist, last wins, empty kept", nil, map[string]string{"PATH": bin, "GOFLAGS": "-race", "CGO_ENABLED": ""}},
		{"custom", []string{"HOME", "MISSING"}, map[string]string{"HOME": "/nowhere"}},
		{"none", []string{}, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fingerprint(t, NewEnvProbe(tt.allow), []string{"go", "test"}, environ)
			if !maps.Equal(env.Vars, tt.want) {
				t.Fatalf("Vars = %v, want %v", env.Vars, tt.want)
			}
		})
	}
	if _, err := NewEnvProbe(nil).Fingerprint(testCtx(t), nil, environ); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("empty argv: got %v, want INVALID_ARGUMENT", err)
	}
	if _, err := NewEnvProbe(nil).Fingerprint(testCtx(t), []string{""}, environ); errs.CodeOf(err) != errs.InvalidArgument {
		t.Fatalf("empty program: got %v, want INVALID_ARGUMENT", err)
	}
}

func TestFingerprintCachesProbes(t *testing.T) {
	bin := t.TempDir()
	fakeTool(t, bin, "go", `echo "go version go9.9.9 fake/arch"`)
	environ := []string{"PATH=" + bin}
	p := NewEnvProbe(nil)

	// Many concurrent callers share one probe.
	var wg sync.WaitGroup
	envs := make([]Env, 16)
	for i := range envs {
		wg.Go(func() {
			e, err := p.Fingerprint(testCtx(t), []string{"go", "test", "./..."}, environ)
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
			}
			envs[i] = e
		})
	}
	wg.Wait()
	for i, e := range envs {
		if got := e.Tools["go"]; got != "go version go9.9.9 fake/arch" {
			t.Fatalf("caller %d: Tools[go] = %q, want the fake version", i, got)
		}
	}
	if n := runs(t, bin, "go"); n != 1 {
		t.Fatalf("probe ran %d times for 16 callers, want 1", n)
	}
	// gofmt shares go's probe.
	fingerprint(t, p, []string{"gofmt", "-l", "."}, environ)
	if n := runs(t, bin, "go"); n != 1 {
		t.Fatalf("probe ran %d times after gofmt, want 1", n)
	}

	// Another PATH is another cache entry.
	bin2 := t.TempDir()
	fakeTool(t, bin2, "go", `echo "go version go8.8.8 other/arch"`)
	if got := fingerprint(t, p, []string{"go"}, []string{"PATH=" + bin2}).Tools["go"]; got != "go version go8.8.8 other/arch" {
		t.Fatalf("second PATH: Tools[go] = %q, want go8.8.8", got)
	}
	if n := runs(t, bin2, "go"); n != 1 {
		t.Fatalf("second PATH: probe ran %d times, want 1", n)
	}

	// A replaced executable (new size/mtime) is probed again.
	fakeTool(t, bin, "go", `echo "go version go9.9.10 upgraded/arch"`)
	if got := fingerprint(t, p, []string{"go"}, environ).Tools["go"]; got != "go version go9.9.10 upgraded/arch" {
		t.Fatalf("after upgrade: Tools[go] = %q, want go9.9.10", got)
	}
	fingerprint(t, p, []string{"go"}, environ)
	if n := runs(t, bin, "go"); n != 2 {
		t.Fatalf("after upgrade: probe ran %d times, want 2", n)
	}

	// A fresh EnvProbe has its own cache.
	fingerprint(t, NewEnvProbe(nil), []string{"go"}, environ)
	if n := runs(t, bin, "go"); n != 3 {
		t.Fatalf("new probe: ran %d times, want 3", n)
	}
}

func TestFingerprintTools(t *testing.T) {
	bin := t.TempDir()
	fakeTool(t, bin, "go", `echo "go version go9.9.9 fake/arch"`)
	fakeTool(t, bin, "node", `echo "v99.0.0"`)
	fakeTool(t, bin, "python3", `echo "Python 3.99.0" >&2`)
	fakeTool(t, bin, "cargo", `echo "cargo 9.99.0 (abc 2099-01-01)"`)
	fakeTool(t, bin, "rustc", `echo "rustc 9.99.0 (def 2099-01-01)"`)
	fakeTool(t, bin, "make", `printf 'GNU Make 9.9\nBuilt for fake\nCopyright\n'`)
	fakeTool(t, bin, "mytool", `exit 0`)
	fakeTool(t, bin, "python3.99", `echo "Python 3.99.1"`)
	other := t.TempDir()
	fakeTool(t, other, "go", `echo "go version go7.7.7 abs/arch"`)
	fakeTool(t, other, "failing", `exit 0`)
	environ := []string{"PATH=" + bin}

	tests := []struct {
		name string
		argv []string
		want map[string]string
	}{
		{"go", []string{"go", "test"}, map[string]string{"go": "go version go9.9.9 fake/arch"}},
		{"absolute go is probed itself", []string{filepath.Join(other, "go"), "test"}, map[string]string{"go": "go version go7.7.7 abs/arch"}},
		{"npm", []string{"npm", "test"}, map[string]string{"node": "v99.0.0"}},
		{"npx", []string{"npx", "jest"}, map[string]string{"node": "v99.0.0"}},
		{"jest", []string{"jest"}, map[string]string{"node": "v99.0.0"}},
		{"vitest", []string{"vitest", "run"}, map[string]string{"node": "v99.0.0"}},
		{"pytest, version on stderr", []string{"pytest", "-q"}, map[string]string{"python3": "Python 3.99.0"}},
		{"python", []string{"python", "-m", "pytest"}, map[string]string{"python3": "Python 3.99.0"}},
		{"versioned python", []string{"python3.99"}, map[string]string{"python3.99": "Python 3.99.1"}},
		{"cargo and rustc", []string{"cargo", "test"}, map[string]string{"cargo": "cargo 9.99.0 (abc 2099-01-01)", "rustc": "rustc 9.99.0 (def 2099-01-01)"}},
		{"make first line", []string{"make", "check"}, map[string]string{"make": "GNU Make 9.9"}},
		{"relative script", []string{"./scripts/test.sh"}, map[string]string{"./scripts/test.sh": "relative:./scripts/test.sh"}},
	}
	p := NewEnvProbe(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fingerprint(t, p, tt.argv, environ)
			if !maps.Equal(env.Tools, tt.want) {
				t.Fatalf("Tools = %v, want %v", env.Tools, tt.want)
			}
		})
	}

	// Unknown programs: a stamp, no probe run; it changes with the file.
	env := fingerprint(t, p, []string{"mytool", "--check"}, environ)
	stamp := env.Tools["mytool"]
	if !strings.HasPrefix(stamp, "sha256:") || len(env.Tools) != 1 {
		t.Fatalf("Tools = %v, want one sha256 stamp for mytool", env.Tools)
	}
	if n := runs(t, bin, "mytool"); n != 0 {
		t.Fatalf("unknown program was run %d times, want 0", n)
	}
	abs := fingerprint(t, p, []string{filepath.Join(other, "failing")}, environ)
	if v := abs.Tools[filepath.Join(other, "failing")]; !strings.HasPrefix(v, "sha256:") {
		t.Fatalf("absolute unknown program: got %q, want a sha256 stamp", v)
	}
	fakeTool(t, bin, "mytool", `exit 1 # now longer`)
	if got := fingerprint(t, p, []string{"mytool"}, environ).Tools["mytool"]; got == stamp {
		t.Fatal("stamp unchanged after the executable changed")
	}
}

func TestFingerprintUnavailable(t *testing.T) {
	bin := t.TempDir()
	fakeTool(t, bin, "node", `echo "broken install" >&2; exit 3`)
	fakeTool(t, bin, "cargo", `exit 0`)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	fakeTool(t, bin, "make", "exec "+sleep+" 30")
	notExec := filepath.Join(bin, "go")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := []string{"PATH=" + bin + ":relative/dir:"}
	p := NewEnvProbe(nil)
	p.timeout = 300 * time.Millisecond

	tests := []struct {
		name, tool string
		argv       []string
		contains   string
	}{
		{"failing probe", "node", []string{"npm", "test"}, "exit status 3: broken install"},
		{"silent probe", "cargo", []string{"cargo", "build"}, "printed no version"},
		{"missing rustc", "rustc", []string{"cargo", "build"}, "rustc not found in PATH"},
		{"not executable", "go", []string{"go", "test"}, "go not found in PATH"},
		{"hanging probe", "make", []string{"make"}, "did not answer within 300ms"},
		{"unknown and missing", "nothere", []string{"nothere"}, "nothere not found in PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fingerprint(t, p, tt.argv, environ)
			got := env.Tools[tt.tool]
			if !strings.HasPrefix(got, Unavailable) || !strings.Contains(got, tt.contains) {
				t.Fatalf("Tools[%s] = %q, want %q...%q", tt.tool, got, Unavailable, tt.contains)
			}
		})
	}
	if _, err := p.Fingerprint(testCtx(t), []string{"go"}, []string{}); err != nil {
		t.Fatalf("empty environment: got %v, want unavailable tools, no error", err)
	}
}

func TestFingerprintProbeEnvironment(t *testing.T) {
	bin := t.TempDir()
	fakeTool(t, bin, "go", `echo "go version x GOTOOLCHAIN=$GOTOOLCHAIN NODE_OPTIONS=$NODE_OPTIONS SECRET=$SECRET pwd=$(pwd)"`)
	environ := []string{"PATH=" + bin, "GOTOOLCHAIN=go1.99.0", "NODE_OPTIONS=--inspect", "SECRET=s3cr3t"}
	env := fingerprint(t, NewEnvProbe(nil), []string{"go", "test"}, environ)
	if got, want := env.Tools["go"], "go version x GOTOOLCHAIN=local NODE_OPTIONS= SECRET= pwd=/"; got != want {
		t.Fatalf("probe saw %q, want %q", got, want)
	}
	if env.Vars["GOTOOLCHAIN"] != "go1.99.0" {
		t.Fatalf("Vars[GOTOOLCHAIN] = %q, want go1.99.0", env.Vars["GOTOOLCHAIN"])
	}
}

func TestFingerprintCancelledWhileProbing(t *testing.T) {
	bin := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	fakeTool(t, bin, "go", "exec "+sleep+" 30")
	p := NewEnvProbe(nil)
	p.timeout = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = p.Fingerprint(ctx, []string{"go"}, []string{"PATH=" + bin})
	if errs.CodeOf(err) != errs.Timeout {
		t.Fatalf("got %v, want TIMEOUT", err)
	}
	// The probe itself was not cancelled with the caller: it ends at its
	// own timeout and the result is shared with later callers.
	env := fingerprint(t, p, []string{"go"}, []string{"PATH=" + bin})
	if got := env.Tools["go"]; !strings.Contains(got, "did not answer") {
		t.Fatalf("Tools[go] = %q, want a timeout", got)
	}
	if n := runs(t, bin, "go"); n != 1 {
		t.Fatalf("probe ran %d times, want 1", n)
	}
}

func TestVersionLine(t *testing.T) {
	long := strings.Repeat("é", 150)
	tests := []struct {
		name, in, want string
	}{
		{"simple", "v20.1.0\n", "v20.1.0"},
		{"leading blank lines", "\n\n  go version go1.26 linux/amd64  \nmore\n", "go version go1.26 linux/amd64"},
		{"crlf", "Python 3.12.1\r\n", "Python 3.12.1"},
		{"empty", "", ""},
		{"invalid utf-8", "v1\xff\n", "v1\uFFFD"},
		{"long", long, long[:200] + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionLine([]byte(tt.in)); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
