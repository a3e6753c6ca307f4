package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/testutil"
)

func TestMain(m *testing.M) {
	Main() // the test binary is the launcher of the namespace tests
	helperMain()
	if p := os.Getenv("SANDBOX_TEST_DIAL_UNIX"); p != "" {
		// The test binary as an attacker's program: connect to a unix
		// socket by its path and say whether it worked.
		c, err := net.Dial("unix", p)
		if err != nil {
			fmt.Println("dial failed:", err)
			os.Exit(3)
		}
		c.Close()
		fmt.Println("connected")
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// fixture is a checkout with a secret, a data dir with a token and a file
// outside both, as an attacker would find them.
type fixture struct {
	root, data, outside, home string
	sb                        *Sandbox
}

func newFixture(t testing.TB, noNS bool) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{root: filepath.Join(base, "repo"), data: filepath.Join(base, "data"), outside: filepath.Join(base, "outside"), home: filepath.Join(base, "home")}
	for _, d := range []string{f.root + "/src", f.root + "/.git", f.data, f.outside, f.home + "/.cache"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(f.root+"/src/a.txt", "visible\n")
	write(f.root+"/.env", "TOKEN=s3cr3t-value\n")
	write(f.root+"/.git/HEAD", "ref: refs/heads/main\n")
	write(f.data+"/token", "daemon-token\n")
	write(f.outside+"/file", "outside-content\n")
	write(f.home+"/.netrc", "machine x password y\n")
	// A hard link the user left in the checkout's top directory (carved
	// around .env): a Landlock rule on it would bind the outside file's
	// inode, readable then by its own path.
	if err := os.Link(f.outside+"/file", f.root+"/notes.txt"); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home}
	sb, err := New(Config{Hidden: []string{f.data}, TmpRoot: filepath.Join(base, "sbtmp"), Environ: env, NoNamespaces: noNS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	f.sb = sb
	return f
}

func (f *fixture) policy(p Profile) Policy {
	return Policy{Profile: p, Root: f.root, Secrets: []string{".env"}}
}

// run runs a shell script confined by pol and returns its output and exit code.
func (f *fixture) run(t *testing.T, pol Policy, script string) (string, int) {
	t.Helper()
	c, err := f.sb.Prepare(pol)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Done()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = f.root
	cmd.Env = c.Env([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home})
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	exited := make(chan struct{})
	defer close(exited)
	if err := c.Start(cmd, exited); err != nil {
		t.Fatalf("start: %v", err)
	}
	err = cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return out.String(), code
}

func requireLandlock(t *testing.T) {
	t.Helper()
	testutil.NeedSandbox(t, testutil.Landlock, Probe().LandlockABI > 0, "the kernel has no Landlock")
}

// requireNamespaces is for the tests of profile p in namespaces.
func requireNamespaces(t *testing.T, f *fixture, p Profile) {
	t.Helper()
	why := Probe().UserNSReason
	if why == "" && !Linked() {
		why = "TestMain does not call Main: the test binary is no launcher"
	}
	testutil.NeedSandbox(t, testutil.UserNS, f.sb.namespaces(p), why)
}

// requireSeccomp is for the attacks only seccomp stops where no namespace
// hides the target (unix sockets, set-ID modes, the host's name).
func requireSeccomp(t *testing.T) {
	t.Helper()
	testutil.NeedSandbox(t, testutil.Seccomp, Probe().Seccomp, "the kernel cannot load seccomp filters")
}

// The attacks of a confined command, in each mode that can run here.
func TestConfinedCommandsAsAnAttacker(t *testing.T) {
	requireLandlock(t)
	modes := []struct {
		name    string
		noNS    bool
		profile Profile
	}{
		{"landlock read", true, Read},
		{"landlock job", true, Job},
		{"namespaces job", false, Job},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f := newFixture(t, m.noNS)
			if !m.noNS {
				requireNamespaces(t, f, m.profile)
			}
			pol := f.policy(m.profile)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			tests := []struct {
				name, script string
				leak         string // must not be in the output
				marker       string // must not exist afterwards
				okWant       string // when set: must succeed and print this
			}{
				{name: "read the checkout", script: "cat src/a.txt", okWant: "visible"},
				{name: "write the private tmp", script: `echo ok > "$TMPDIR/x" && cat "$TMPDIR/x"`, okWant: "ok"},
				{name: "read a secret of the checkout", script: "cat .env", leak: "s3cr3t"},
				{name: "read a secret through a glob", script: "cat .en?", leak: "s3cr3t"},
				{name: "read the data dir token", script: "cat " + f.data + "/token", leak: "daemon-token"},
				{name: "read outside the checkout", script: "cat " + f.outside + "/file", leak: "outside-content"},
				{name: "read a secret of $HOME", script: "cat " + f.home + "/.netrc", leak: "password"},
				{name: "write the checkout", script: "echo x > src/new.txt", marker: f.root + "/src/new.txt"},
				{name: "write .git", script: "echo x > .git/hooks-marker", marker: f.root + "/.git/hooks-marker"},
				{name: "write outside", script: "echo x > " + f.outside + "/marker", marker: f.outside + "/marker"},
				{name: "write the data dir", script: "echo x > " + f.data + "/marker", marker: f.data + "/marker"},
				{name: "tcp to loopback", script: fmt.Sprintf("echo hi > /dev/tcp/127.0.0.1/%d && echo connected", port), leak: "connected"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					script := tt.script
					if strings.Contains(script, "/dev/tcp") {
						script = "exec bash -c '" + script + "'"
						if _, err := exec.LookPath("bash"); err != nil {
							t.Skip("no bash")
						}
					}
					out, code := f.run(t, pol, script)
					switch {
					case tt.okWant != "":
						if code != 0 || !strings.Contains(out, tt.okWant) {
							t.Fatalf("exit %d, output %q; want success with %q", code, out, tt.okWant)
						}
					case tt.leak != "":
						if strings.Contains(out, tt.leak) {
							t.Fatalf("leaked %q: %q", tt.leak, out)
						}
					}
					if tt.marker != "" {
						if _, err := os.Stat(tt.marker); err == nil {
							t.Fatalf("%s was written", tt.marker)
						}
					}
				})
			}
		})
	}
}

// In namespaces the command sees none of the hidden paths at all, runs
// as pid 2 under the launcher, and its exit status comes back.
func TestNamespacesHideAndReport(t *testing.T) {
	requireLandlock(t)
	f := newFixture(t, false)
	requireNamespaces(t, f, Job)
	pol := f.policy(Job)
	if out, _ := f.run(t, pol, "ls -a "+filepath.Dir(f.data)+"; ls -a "+f.home); strings.Contains(out, "token") || strings.Contains(out, ".netrc") || strings.Contains(out, "outside") {
		t.Fatalf("hidden paths are visible: %q", out)
	}
	if out, _ := f.run(t, pol, "tr '\\0' ' ' < /proc/1/cmdline; echo; cat .env | wc -c"); !strings.Contains(out, LaunchArg) || !strings.HasSuffix(strings.TrimSpace(out), "0") {
		t.Fatalf("pid 1 and masked secret = %q, want the launcher as pid 1 and an empty .env", out)
	}
	if _, code := f.run(t, pol, "exit 7"); code != 7 {
		t.Fatalf("exit code %d, want 7", code)
	}
	// A writable checkout writes, but not .git.
	pol.Writable = []string{f.root}
	if _, code := f.run(t, pol, "echo x > src/w.txt"); code != 0 {
		t.Fatal("writing a writable checkout failed")
	}
	if _, err := os.Stat(f.root + "/src/w.txt"); err != nil {
		t.Fatal("the write did not reach the checkout")
	}
	f.run(t, pol, "echo x > .git/marker")
	if _, err := os.Stat(f.root + "/.git/marker"); err == nil {
		t.Fatal(".git was written in a writable checkout")
	}
	// New top-level files are written; the secret is neither read,
	// overwritten nor removed.
	if out, code := f.run(t, pol, "echo top > top.txt && cat top.txt"); code != 0 || !strings.Contains(out, "top") {
		t.Fatalf("writing a new top-level file: exit %d %q", code, out)
	}
	f.run(t, pol, "echo pwned > .env; rm -f .env; mv .env moved 2>/dev/null; rm -rf .git/HEAD")
	if b, err := os.ReadFile(f.root + "/.env"); err != nil || string(b) != "TOKEN=s3cr3t-value\n" {
		t.Fatalf("the secret was changed through a writable checkout: %q %v", b, err)
	}
	if _, err := os.Stat(f.root + "/.git/HEAD"); err != nil {
		t.Fatalf(".git/HEAD was removed: %v", err)
	}
}

// Without namespaces Landlock cannot keep .git read-only in a writable
// checkout: Prepare refuses it, with the fix in the message.
func TestLandlockOnlyRefusesAWritableCheckoutWithGit(t *testing.T) {
	requireLandlock(t)
	f := newFixture(t, true)
	pol := f.policy(Job)
	pol.Writable = []string{f.root}
	_, err := f.sb.Prepare(pol)
	if errs.CodeOf(err) != errs.Unavailable || !strings.Contains(err.Error(), "isolation=worktree") {
		t.Fatalf("got %v, want UNAVAILABLE naming isolation=worktree", err)
	}
}

// The process-count ceiling of a namespace holds against a fork flood.
func TestNamespacePidsCeiling(t *testing.T) {
	requireLandlock(t)
	f := newFixture(t, false)
	requireNamespaces(t, f, Job)
	pol := f.policy(Job)
	pol.PidsMax = 8
	out, code := f.run(t, pol, "for i in $(seq 50); do sleep 5 & done; wait")
	if code == 0 || !strings.Contains(out, "more than the limit") {
		t.Fatalf("fork flood: exit %d, %q; want it killed past 8 processes", code, out)
	}
}

func TestParseMode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Mode
		ok   bool
	}{{"", Auto, true}, {"auto", Auto, true}, {"require", Require, true}, {"off", Off, true}, {"on", "", false}} {
		got, err := ParseMode(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseMode(%q) = %q, %v", tt.in, got, err)
		}
	}
}

// A job's worktree lives in the hidden data dir: the job works in it, and
// sees nothing else of the data dir (in both modes).
func TestWorktreeInsideTheHiddenDataDir(t *testing.T) {
	requireLandlock(t)
	for _, noNS := range []bool{true, false} {
		t.Run(fmt.Sprintf("namespaces=%v", !noNS), func(t *testing.T) {
			f := newFixture(t, noNS)
			if !noNS {
				requireNamespaces(t, f, Job)
			}
			wt := filepath.Join(f.data, "worktrees", "job_1")
			if err := os.MkdirAll(wt, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(f.data, "worktrees", "job_2-secret"), []byte("other-job\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			pol := Policy{Profile: Job, Root: wt, Writable: []string{wt}}
			c, err := f.sb.Prepare(pol)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Done()
			cmd := exec.Command("/bin/sh", "-c", "echo made > out.txt; cat "+f.data+"/token; cat "+f.data+"/worktrees/job_2-secret; ls "+f.data)
			cmd.Dir = wt
			cmd.Env = c.Env([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home})
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			exited := make(chan struct{})
			defer close(exited)
			if err := c.Start(cmd, exited); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if b, err := os.ReadFile(filepath.Join(wt, "out.txt")); err != nil || string(b) != "made\n" {
				t.Fatalf("the job could not write its worktree: %q %v (output %q)", b, err, out.String())
			}
			if s := out.String(); strings.Contains(s, "daemon-token") || strings.Contains(s, "other-job") || strings.Contains(s, "token\n") {
				t.Fatalf("the data dir leaked: %q", s)
			}
		})
	}
}

// A confined command cannot connect to the daemon's unix socket: in
// namespaces the data dir is not there; without them seccomp denies unix
// sockets (Landlock does not check connect).
func TestConfinedCommandsCannotReachTheDaemonSocket(t *testing.T) {
	requireLandlock(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		name    string
		noNS    bool
		profile Profile
	}{{"read", true, Read}, {"landlock job", true, Job}, {"namespaces job", false, Job}} {
		t.Run(m.name, func(t *testing.T) {
			if m.noNS {
				requireSeccomp(t)
			}
			f := newFixture(t, m.noNS)
			if !m.noNS {
				requireNamespaces(t, f, m.profile)
			}
			sock := filepath.Join(f.data, "d.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan struct{}, 1)
			go func() {
				if c, err := ln.Accept(); err == nil {
					c.Close()
					accepted <- struct{}{}
				}
			}()
			// Control: unconfined, the same program connects.
			ctl := exec.Command(exe)
			ctl.Env = append(os.Environ(), "SANDBOX_TEST_DIAL_UNIX="+sock)
			if out, err := ctl.CombinedOutput(); err != nil || !strings.Contains(string(out), "connected") {
				t.Fatalf("control: %v %q", err, out)
			}
			<-accepted
			go func() {
				if c, err := ln.Accept(); err == nil {
					c.Close()
					accepted <- struct{}{}
				}
			}()
			out, code := f.run(t, f.policy(m.profile), "SANDBOX_TEST_DIAL_UNIX="+sock+" "+exe)
			if code == 0 || strings.Contains(out, "connected") {
				t.Fatalf("a confined command connected to the daemon socket: exit %d %q", code, out)
			}
			select {
			case <-accepted:
				t.Fatal("the socket accepted a connection from a confined command")
			default:
			}
		})
	}
}
