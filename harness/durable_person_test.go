package harness_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// registry is a loopback "package registry" outside every sandbox: it
// counts the connections that reach it and the PUBLISH lines they send.
type registry struct {
	ln        net.Listener
	mu        sync.Mutex // protects conns, published
	conns     int
	published int
	done      chan struct{}
}

func startRegistry(t *testing.T) *registry {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &registry{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.conns++
			r.mu.Unlock()
			line, _ := bufio.NewReader(c).ReadString('\n')
			if strings.TrimSpace(line) == "PUBLISH" {
				r.mu.Lock()
				r.published++
				r.mu.Unlock()
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-r.done })
	return r
}

func (r *registry) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns, r.published
}

func (r *registry) url() string { return "http://" + r.ln.Addr().String() + "/" }

// fakeTools puts stand-ins of the user's tools first on PATH: an npm whose
// publish connects to the registry its --registry names and sends
// PUBLISH, and a "dial" that connects to a host and port. They are what a
// real npm does on the wire, without a real registry.
func fakeTools(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	npm := `#!/bin/bash
reg=""
while [ $# -gt 0 ]; do case "$1" in --registry) reg="$2"; shift;; esac; shift; done
hp=${reg#http://}; hp=${hp%%/*}
exec 3<>/dev/tcp/${hp%:*}/${hp#*:} || { echo "npm: cannot reach $reg" >&2; exit 7; }
echo PUBLISH >&3
echo "published to $reg"
`
	dial := `#!/bin/bash
exec 3<>/dev/tcp/$1/$2 || { echo "dial: cannot reach $1:$2" >&2; exit 7; }
echo PUBLISH >&3
echo connected
`
	for name, src := range map[string]string{"npm": npm, "dial": dial} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// personApproves answers the APPROVAL_REQUIRED of a call with a person's yes and
// returns the approval id; the reason must name every want.
func personApproves(t *testing.T, h *harness.Harness, err error, want ...string) string {
	t.Helper()
	e := errs.From(err)
	id, _ := e.Details["approval_id"].(string)
	if e.Code != errs.ApprovalRequired || id == "" {
		t.Fatalf("got %v (%+v), want APPROVAL_REQUIRED with an approval_id", err, e.Details)
	}
	for _, w := range want {
		if !strings.Contains(e.Message, w) {
			t.Errorf("approval reason %q, want it to name %q", e.Message, w)
		}
	}
	if _, err := h.DecideApproval(context.Background(), id, true, "tester", ""); err != nil {
		t.Fatal(err)
	}
	return id
}

// Destructive work in the checkout and explicit remote writes run on the
// Durable Path behind a person: rm -rf pkg asks (naming pkg), then runs
// once approved; npm publish asks (naming the command and the registry),
// reaches nothing before the approval and the registry after it, with the
// network for that job only; the attacker rows stay ROUTE_REJECTED and a
// sentinel outside the checkout survives them.
func TestDurableWorkBehindAPerson(t *testing.T) {
	fakeTools(t)
	reg := startRegistry(t)
	h := open(t)
	ctx := context.Background()
	root := testutil.Repo(t, map[string]string{"pkg/a.go": "package pkg\n", "pkg/sub/b.txt": "b\n", "keep.txt": "keep\n"})
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	sentinel := filepath.Join(outside, "sentinel")
	if err := os.WriteFile(sentinel, []byte("must survive\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("rm -rf pkg asks, then runs approved", func(t *testing.T) {
		args := harness.JobStartArgs{RepoID: r.ID, Argv: []string{"rm", "-rf", "pkg"}, RequestID: "rm-pkg"}
		_, err := h.JobStart(ctx, args)
		if _, serr := os.Stat(filepath.Join(root, "pkg", "a.go")); serr != nil {
			t.Fatalf("pkg changed before the approval: %v", serr)
		}
		args.ApprovalID = personApproves(t, h, err, "rm -rf pkg", "removes pkg")
		j, err := h.JobStart(ctx, args)
		if err != nil {
			t.Fatalf("approved job_start: %v", err)
		}
		if got := waitJob(t, h, j.JobID); got.State != "succeeded" {
			t.Fatalf("job %s %s: %+v", j.JobID, got.State, got.Summary)
		}
		if _, err := os.Stat(filepath.Join(root, "pkg")); !os.IsNotExist(err) {
			t.Errorf("pkg still there after the approved rm -rf: %v", err)
		}
		if b, err := os.ReadFile(filepath.Join(root, "keep.txt")); err != nil || string(b) != "keep\n" {
			t.Errorf("keep.txt = %q, %v; the job removed more than pkg", b, err)
		}
	})

	t.Run("attackers stay rejected", func(t *testing.T) {
		for i, argv := range [][]string{
			{"rm", "-rf", "/"},
			{"rm", "-rf", outside},
			{"rm", "-rf", "../" + filepath.Base(outside)},
			{"rm", "-rf", "--no-preserve-root", "/"},
			{"git", "-c", "alias.p=push", "p", outside},
			{"sh", "-c", "git push " + outside + " HEAD"},
			{"git", "config", "remote.origin.mirror", "true"},
			{"find", outside, "-delete"},
		} {
			_, err := h.JobStart(ctx, harness.JobStartArgs{RepoID: r.ID, Argv: argv, RequestID: "attack-" + strconv.Itoa(i)})
			if errs.CodeOf(err) != errs.RouteRejected {
				t.Errorf("job_start %q: %v, want ROUTE_REJECTED", argv, err)
			}
		}
		if b, err := os.ReadFile(sentinel); err != nil || string(b) != "must survive\n" {
			t.Fatalf("sentinel outside the checkout: %q, %v", b, err)
		}
	})

	t.Run("publish elsewhere is pointed to job_start", func(t *testing.T) {
		_, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: r.ID, Argv: []string{"npm", "publish", "--registry", reg.url()}})
		if e := errs.From(err); e.Code != errs.RouteDurableRequired || e.Details["suggested_operation"] != "job_start" {
			t.Fatalf("run_command npm publish: %v %+v, want ROUTE_DURABLE_REQUIRED to job_start", err, e.Details)
		}
		_, err = h.RunCommand(ctx, harness.RunCommandArgs{RepoID: r.ID, Argv: []string{"git", "push", "origin", "main"}})
		if e := errs.From(err); e.Code != errs.RouteDurableRequired || e.Details["suggested_operation"] != "git_push" {
			t.Fatalf("run_command git push: %v %+v, want ROUTE_DURABLE_REQUIRED to git_push", err, e.Details)
		}
	})

	t.Run("npm publish asks, then reaches the registry", func(t *testing.T) {
		args := harness.JobStartArgs{RepoID: r.ID, Argv: []string{"npm", "publish", "--registry", reg.url()}, RequestID: "publish-1"}
		_, err := h.JobStart(ctx, args)
		if c, _ := reg.counts(); c != 0 {
			t.Fatalf("the registry saw %d connections before the approval", c)
		}
		args.ApprovalID = personApproves(t, h, err, "npm publish --registry "+reg.url(), "writes to "+reg.url())
		j, err := h.JobStart(ctx, args)
		if err != nil {
			t.Fatalf("approved publish: %v", err)
		}
		got := waitJob(t, h, j.JobID)
		if got.State != "succeeded" {
			t.Fatalf("publish job %s: %+v %q", got.State, got.Summary, got.Tail)
		}
		if _, p := reg.counts(); p != 1 {
			t.Fatalf("the registry saw %d publishes, want 1", p)
		}
	})

	t.Run("a job without the grant reaches nothing", func(t *testing.T) {
		host, port, _ := net.SplitHostPort(reg.ln.Addr().String())
		c0, p0 := reg.counts()
		j, err := h.JobStart(ctx, harness.JobStartArgs{RepoID: r.ID, Argv: []string{"dial", host, port}, RequestID: "dial-1"})
		if err != nil {
			t.Fatalf("job_start dial: %v", err)
		}
		if got := waitJob(t, h, j.JobID); got.State == "succeeded" {
			t.Fatalf("an ungranted job reached the registry: %+v", got)
		}
		if c, p := reg.counts(); c != c0 || p != p0 {
			t.Fatalf("the registry saw %d connections, %d publishes from an ungranted job", c-c0, p-p0)
		}
	})
}
