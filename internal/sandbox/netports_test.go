package sandbox

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// loopbackListener accepts connections on 127.0.0.1 outside the sandbox
// (the host's network namespace) and counts them.
type loopbackListener struct {
	ln   net.Listener
	port int
	mu   sync.Mutex // protects n
	n    int
	done chan struct{}
}

func listenLoopback(t *testing.T) *loopbackListener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &loopbackListener{ln: ln, port: ln.Addr().(*net.TCPAddr).Port, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.mu.Lock()
			l.n++
			l.mu.Unlock()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-l.done })
	return l
}

func (l *loopbackListener) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// A job's granted network reaches the host's loopback; narrowed to ports
// (a remote write's), it reaches those ports only where Landlock has ABI
// 4 or later; without the grant it reaches nothing outside the sandbox.
func TestGrantedNetworkNarrowedToPorts(t *testing.T) {
	dial := func(port int) string {
		p := strconv.Itoa(port)
		return "if bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + p + "' 2>/dev/null; then echo open-" + p + "; else echo closed-" + p + "; fi"
	}
	for _, mode := range []struct {
		name string
		noNS bool
	}{{"namespaces", false}, {"landlock-only", true}} {
		t.Run(mode.name, func(t *testing.T) {
			requireLandlock(t)
			f := newFixture(t, mode.noNS)
			if !mode.noNS {
				requireNamespaces(t, f, Job)
			}
			a, b := listenLoopback(t), listenLoopback(t)
			script := dial(a.port) + "; " + dial(b.port)
			cases := []struct {
				name      string
				network   bool
				ports     []int
				wantA     bool
				wantB     bool
				needsABI4 bool
			}{
				{name: "no grant", wantA: false, wantB: false},
				{name: "granted", network: true, wantA: true, wantB: true},
				{name: "granted, narrowed to a's port", network: true, ports: []int{443, a.port}, wantA: true, wantB: false, needsABI4: true},
			}
			for _, tc := range cases {
				if tc.needsABI4 && Probe().LandlockABI < 4 {
					t.Logf("%s: Landlock ABI %d < 4 cannot narrow TCP by port", tc.name, Probe().LandlockABI)
					continue
				}
				beforeA, beforeB := a.count(), b.count()
				pol := f.policy(Job)
				pol.Network, pol.ConnectPorts = tc.network, tc.ports
				out, _ := f.run(t, pol, script)
				for _, w := range []struct {
					l    *loopbackListener
					want bool
					was  int
				}{{a, tc.wantA, beforeA}, {b, tc.wantB, beforeB}} {
					p := strconv.Itoa(w.l.port)
					gotOpen := strings.Contains(out, "open-"+p)
					if gotOpen != w.want {
						t.Errorf("%s: port %s open = %v, want %v (output %q)", tc.name, p, gotOpen, w.want, out)
					}
					if reached := w.l.count() > w.was; reached != w.want {
						t.Errorf("%s: the listener on %s saw a connection = %v, want %v", tc.name, p, reached, w.want)
					}
				}
			}
		})
	}
}
