package sandbox

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// helperMain runs the test binary as an attacker's (or a test suite's)
// program when SANDBOX_TEST_DO says so, and exits.
func helperMain() {
	do := os.Getenv("SANDBOX_TEST_DO")
	if do == "" {
		return
	}
	arg := os.Getenv("SANDBOX_TEST_ARG")
	switch do {
	case "loopback":
		// What an httptest server does: listen on loopback, dial it.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Println("listen:", err)
			os.Exit(3)
		}
		go func() {
			if c, err := ln.Accept(); err == nil {
				_, _ = c.Write([]byte("hello"))
				c.Close()
			}
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(3)
		}
		b := make([]byte, 5)
		n, _ := c.Read(b)
		c.Close()
		u, err := net.ListenPacket("udp", "[::1]:0")
		if err != nil {
			u, err = net.ListenPacket("udp", "127.0.0.1:0")
		}
		if err != nil {
			fmt.Println("udp:", err)
			os.Exit(3)
		}
		u.Close()
		fmt.Println("loopback", string(b[:n]))
	case "setid":
		// Try to leave a set-ID program behind in arg (a writable dir).
		f := filepath.Join(arg, "suid-chmod")
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			fmt.Println("write:", err)
		}
		fmt.Println("chmod 4755:", unix.Chmod(f, 0o4755))
		fmt.Println("chmod 2755:", unix.Fchmodat(unix.AT_FDCWD, f, 0o2755, 0))
		fd, err := unix.Open(filepath.Join(arg, "suid-open"), unix.O_CREAT|unix.O_WRONLY, 0o4755)
		fmt.Println("open 4755:", err)
		if err == nil {
			unix.Close(fd)
		}
		fd, err = unix.Openat(unix.AT_FDCWD, filepath.Join(arg, "suid-openat"), unix.O_CREAT|unix.O_WRONLY, 0o6755)
		fmt.Println("openat 6755:", err)
		if err == nil {
			unix.Close(fd)
		}
		if h, err := os.Open(f); err == nil {
			fmt.Println("fchmod 700:", h.Chmod(0o700)) // fd-based: every profile
			h.Close()
		}
		fmt.Println("fchmod 4700:", fchmodSetID(f))
	case "host":
		// Reach the daemon (pid arg) and the host outside the policy.
		pid, _ := strconv.Atoi(arg)
		var rl unix.Rlimit
		fmt.Println("prlimit other:", unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &rl))
		fmt.Println("prlimit self:", unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, &rl))
		fmt.Println("setpriority other:", unix.Setpriority(unix.PRIO_PROCESS, pid, 5))
		fmt.Println("sethostname:", unix.Sethostname([]byte("pwned")))
		if f := os.Getenv("SANDBOX_TEST_FILE"); f != "" {
			fmt.Println("chmod file:", unix.Chmod(f, 0o644))
			fmt.Println("chown file:", unix.Lchown(f, os.Getuid(), os.Getgid()))
			fmt.Println("utimes file:", unix.UtimesNano(f, []unix.Timespec{{Sec: 1}, {Sec: 1}}))
		}
		b, err := os.ReadFile("/proc/" + arg + "/environ")
		fmt.Printf("environ: %d bytes %v\n", len(b), err)
		st, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "CapEff:") {
				fmt.Println(l)
			}
		}
	default:
		fmt.Println("unknown SANDBOX_TEST_DO", do)
		os.Exit(2)
	}
	os.Exit(0)
}

func fchmodSetID(f string) error {
	h, err := os.Open(f)
	if err != nil {
		return err
	}
	defer h.Close()
	return unix.Fchmod(int(h.Fd()), 0o4700)
}

// runHelper runs the test binary confined by pol as helper do.
func (f *fixture) runHelper(t *testing.T, pol Policy, do, arg string, env ...string) (string, int) {
	t.Helper()
	exe := helperCopy(t, f.root)
	vars := "SANDBOX_TEST_DO=" + shq(do) + " SANDBOX_TEST_ARG=" + shq(arg)
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		vars += " " + k + "=" + shq(v)
	}
	return f.run(t, pol, vars+" "+shq(exe))
}

// helperCopy copies the test binary into dir (the checkout: a confined
// process may run what it reads there; the build's tmp is not visible).
func helperCopy(t *testing.T, dir string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "helper.test")
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// modes are the ways a profile can run here.
func confinedModes(t *testing.T, profiles ...Profile) []struct {
	name    string
	noNS    bool
	profile Profile
} {
	var out []struct {
		name    string
		noNS    bool
		profile Profile
	}
	for _, p := range profiles {
		if p == Read || p == Target {
			out = append(out, struct {
				name    string
				noNS    bool
				profile Profile
			}{"landlock " + string(p), true, p})
			continue
		}
		out = append(out, struct {
			name    string
			noNS    bool
			profile Profile
		}{"landlock " + string(p), true, p}, struct {
			name    string
			noNS    bool
			profile Profile
		}{"namespaces " + string(p), false, p})
	}
	return out
}

// A check or a job has loopback (a test suite's httptest server) and no
// way out: the host's own loopback listener is another network's.
func TestLoopbackInNamespaces(t *testing.T) {
	requireLandlock(t)
	for _, p := range []Profile{Check, Job} {
		t.Run(string(p), func(t *testing.T) {
			f := newFixture(t, false)
			requireNamespaces(t, f, p)
			out, code := f.runHelper(t, f.policy(p), "loopback", "")
			if code != 0 || !strings.Contains(out, "loopback hello") {
				t.Fatalf("loopback in the sandbox: exit %d %q, want it to work", code, out)
			}
		})
	}
}

// No confined process leaves a set-ID file behind, in any profile; an
// ordinary chmod still works.
func TestNoSetIDFiles(t *testing.T) {
	requireLandlock(t)
	requireSeccomp(t)
	for _, m := range confinedModes(t, Read, Job) {
		t.Run(m.name, func(t *testing.T) {
			f := newFixture(t, m.noNS)
			if !m.noNS {
				requireNamespaces(t, f, m.profile)
			}
			pol := f.policy(m.profile)
			dir := filepath.Join(f.outside, "w")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			pol.Writable = []string{dir}
			out, _ := f.runHelper(t, pol, "setid", dir)
			if !strings.Contains(out, "fchmod 700: <nil>") {
				t.Fatalf("control: an ordinary chmod failed: %q", out)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) == 0 {
				t.Fatalf("the helper wrote nothing: %q", out)
			}
			for _, e := range ents {
				fi, err := os.Lstat(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
					t.Errorf("%s has mode %v: a confined process made a set-ID file (%q)", e.Name(), fi.Mode(), out)
				}
			}
		})
	}
}

// A Fast Path command keeps no capability, and can neither change the
// daemon's limits or priority, the host's name, nor the mode, owner or
// times of a file it cannot open (the daemon's token), nor read the
// daemon's environment.
func TestFastPathCannotReachTheHost(t *testing.T) {
	requireLandlock(t)
	requireSeccomp(t)
	for _, p := range []Profile{Read, Target} {
		t.Run(string(p), func(t *testing.T) {
			f := newFixture(t, true)
			tok := filepath.Join(f.data, "token")
			if err := os.Chmod(tok, 0o600); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Stat(tok)
			host, _ := os.Hostname()
			out, code := f.runHelper(t, f.policy(p), "host", strconv.Itoa(os.Getpid()), "SANDBOX_TEST_FILE="+tok)
			if code != 0 {
				t.Fatalf("helper: exit %d %q", code, out)
			}
			for _, want := range []string{"prlimit self: <nil>", "CapEff:\t0000000000000000"} {
				if !strings.Contains(out, want) {
					t.Errorf("control %q missing: %q", want, out)
				}
			}
			for _, bad := range []string{"prlimit other: <nil>", "setpriority other: <nil>", "sethostname: <nil>", "chmod file: <nil>", "chown file: <nil>", "utimes file: <nil>"} {
				if strings.Contains(out, bad) {
					t.Errorf("%s: %q", bad, out)
				}
			}
			if !strings.Contains(out, "environ: 0 bytes") {
				t.Errorf("the daemon's environment was read: %q", out)
			}
			after, _ := os.Stat(tok)
			if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
				t.Errorf("token changed: mode %v→%v, mtime %v→%v", before.Mode(), after.Mode(), before.ModTime(), after.ModTime())
			}
			if h, _ := os.Hostname(); h != host {
				t.Errorf("hostname changed to %q", h)
			}
			var prio int
			if prio, _ = unix.Getpriority(unix.PRIO_PROCESS, 0); prio != 20 && prio != 0 {
				t.Logf("priority %d", prio)
			}
		})
	}
}

// A checkout below /dev/shm is visible to checks and jobs (the private
// /dev/shm of the sandbox is made first, the checkout bound on top).
func TestCheckoutUnderDevShm(t *testing.T) {
	requireLandlock(t)
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		t.Skip("no /dev/shm")
	}
	shm, err := os.MkdirTemp("/dev/shm", "harnessd-sandbox-test-")
	if err != nil {
		t.Skip("cannot write /dev/shm: ", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	if err := os.WriteFile(filepath.Join(shm, "a.txt"), []byte("in shm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range confinedModes(t, Read, Check) {
		t.Run(m.name, func(t *testing.T) {
			f := newFixture(t, m.noNS)
			if !m.noNS {
				requireNamespaces(t, f, m.profile)
			}
			pol := Policy{Profile: m.profile, Root: shm}
			c, err := f.sb.Prepare(pol)
			if err != nil {
				t.Fatal(err)
			}
			c.Done()
			f.root = shm
			out, code := f.run(t, pol, "cat a.txt")
			if code != 0 || !strings.Contains(out, "in shm") {
				t.Fatalf("exit %d %q, want the checkout's file", code, out)
			}
		})
	}
}

// Checks and read-only jobs in namespaces see the checkout through a
// copy-on-write layer: a test writes its golden file and reads it back,
// nothing reaches the checkout, and secrets and .git stay what they were.
func TestCopyOnWriteCheckout(t *testing.T) {
	requireLandlock(t)
	for _, p := range []Profile{Check, Job} {
		t.Run(string(p), func(t *testing.T) {
			f := newFixture(t, false)
			requireNamespaces(t, f, p)
			out, code := f.run(t, f.policy(p), "mkdir -p src/testdata && echo golden > src/testdata/out.golden && cat src/testdata/out.golden && "+
				"echo changed > src/a.txt && cat src/a.txt && echo x > .git/marker; cat .env | wc -c; rm -f .env; echo done")
			if code != 0 || !strings.Contains(out, "golden") || !strings.Contains(out, "changed") || !strings.Contains(out, "done") {
				t.Fatalf("writing through the layer: exit %d %q", code, out)
			}
			if strings.Contains(out, "s3cr3t") {
				t.Fatalf("the secret leaked: %q", out)
			}
			if _, err := os.Stat(filepath.Join(f.root, "src", "testdata")); err == nil {
				t.Fatal("a write of the check reached the checkout")
			}
			if b, _ := os.ReadFile(filepath.Join(f.root, "src", "a.txt")); string(b) != "visible\n" {
				t.Fatalf("src/a.txt = %q, want it untouched", b)
			}
			if _, err := os.Stat(filepath.Join(f.root, ".git", "marker")); err == nil {
				t.Fatal(".git was written")
			}
			if b, _ := os.ReadFile(filepath.Join(f.root, ".env")); string(b) != "TOKEN=s3cr3t-value\n" {
				t.Fatalf(".env = %q, want it untouched", b)
			}
		})
	}
}

// Caches are caches: a job reads the user's, writes only a layer of its
// own, and never sees a credential file a cache dir holds.
func TestCachesWithoutCredentials(t *testing.T) {
	requireLandlock(t)
	for _, m := range confinedModes(t, Read, Job) {
		t.Run(m.name, func(t *testing.T) {
			f := newFixture(t, m.noNS)
			if !m.noNS {
				requireNamespaces(t, f, m.profile)
			}
			cargo := filepath.Join(f.home, ".cargo")
			for _, d := range []string{cargo + "/bin", cargo + "/registry"} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for name, body := range map[string]string{"bin/cargo": "#!/bin/sh\necho real cargo\n", "registry/index": "crates\n", "credentials.toml": "[registry]\ntoken = \"cio-secret-token\"\n"} {
				if err := os.WriteFile(filepath.Join(cargo, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// The sandbox reads the credential list of its home at New.
			f.sb.env.creds = append(f.sb.env.creds, filepath.Join(cargo, "credentials.toml"))
			pol := f.policy(m.profile)
			pol.Caches = []string{cargo}
			out, _ := f.run(t, pol, "cat "+cargo+"/registry/index; cat "+cargo+"/credentials.toml; echo pwned > "+cargo+"/bin/cargo; echo new > "+cargo+"/registry/new; cat "+cargo+"/bin/cargo")
			if !strings.Contains(out, "crates") {
				t.Fatalf("control: the cache is not readable: %q", out)
			}
			if strings.Contains(out, "cio-secret-token") {
				t.Fatalf("a credential in a cache dir leaked: %q", out)
			}
			if b, _ := os.ReadFile(filepath.Join(cargo, "bin", "cargo")); !strings.Contains(string(b), "real cargo") {
				t.Fatalf("the user's cargo was overwritten: %q", b)
			}
			if _, err := os.Stat(filepath.Join(cargo, "registry", "new")); err == nil {
				t.Fatal("a write reached the user's cache")
			}
		})
	}
}
