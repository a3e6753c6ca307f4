//go:build linux

package procstat

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParseReapedMs(t *testing.T) {
	// A real line's shape: pid (comm) state ppid ... utime stime cutime cstime ...
	line := func(comm, cutime, cstime string) []byte {
		return []byte("4242 (" + comm + ") S 1 4242 4242 0 -1 4194560 100 200 0 0 15 7 " + cutime + " " + cstime + " 20 0 1 0 12345 1000 200\n")
	}
	tests := []struct {
		name  string
		stat  []byte
		ticks float64
		want  int64
	}{
		{name: "reaped children", stat: line("sh", "150", "50"), ticks: 100, want: 2000},
		{name: "none reaped", stat: line("awk", "0", "0"), ticks: 100, want: 0},
		{name: "a command name with spaces and parens", stat: line("a) b (c", "3", "1"), ticks: 100, want: 40},
		{name: "another clock rate", stat: line("sh", "250", "0"), ticks: 250, want: 1000},
		{name: "truncated", stat: []byte("4242 (sh) S 1 4242"), ticks: 100, want: 0},
		{name: "no command name", stat: []byte("garbage"), ticks: 100, want: 0},
		{name: "not numbers", stat: line("sh", "x", "y"), ticks: 100, want: 0},
		{name: "no clock rate", stat: line("sh", "150", "50"), ticks: 0, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseReapedMs(tt.stat, tt.ticks); got != tt.want {
				t.Errorf("parseReapedMs = %d, want %d", got, tt.want)
			}
		})
	}
}

// burnScript allocates 64 MiB (a string doubled 26 times) and does a
// fixed amount of work (about 1.6 s of CPU here, however loaded the machine), in a child of a shell that also starts short-lived
// processes (their CPU reaches the shell when it reaps them).
const burnScript = `for i in 1 2 3; do /bin/true; done
awk 'BEGIN{s="x"; for(i=0;i<26;i++) s=s s; for(i=0;i<1.2e8;i++) n+=i; print length(s)}'
`

// TestSamplerFollowsABurningTree starts a shell whose child burns CPU and
// holds 64 MiB, and reads the tree while it runs: the figures rise and
// the memory is the child's, seen through the shell's children list.
func TestSamplerFollowsABurningTree(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", burnScript)
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	s := Start(cmd.Process.Pid, 50*time.Millisecond)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var seen []Figures
	deadline := time.Now().Add(20 * time.Second)
	for running := true; running; {
		select {
		case err := <-waited:
			if err != nil {
				t.Fatalf("the burning tree failed: %v", err)
			}
			running = false
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the tree ran longer than 20s")
			}
			seen = append(seen, s.Figures())
		}
	}
	final := s.Stop()
	if strings.TrimSpace(out.String()) != "67108864" {
		t.Fatalf("the script printed %q, want the 64 MiB string's length", out.String())
	}
	var rising bool
	for i := 1; i < len(seen); i++ {
		if seen[i].CPUMs > seen[i-1].CPUMs && seen[i-1].CPUMs > 0 {
			rising = true
		}
	}
	if !rising {
		t.Errorf("cpu_ms never rose between two readings while it ran: %+v", seen)
	}
	if final.PeakRSSBytes < 50<<20 {
		t.Errorf("peak RSS = %d bytes, want at least 50 MiB", final.PeakRSSBytes)
	}
	if final.CPUMs < 500 {
		t.Errorf("cpu_ms = %d, want at least 500 for two seconds of spinning", final.CPUMs)
	}
	if final.Processes < 2 {
		t.Errorf("processes = %d, want at least 2 (the shell and awk)", final.Processes)
	}
	var rusageMs int64
	if ps := cmd.ProcessState; ps != nil {
		rusageMs = (ps.UserTime() + ps.SystemTime()).Milliseconds()
	}
	if k := Final(final, Kernel{CPU: time.Duration(rusageMs) * time.Millisecond}); k.CPUMs < rusageMs {
		t.Errorf("Final cpu_ms = %d, below the rusage's %d", k.CPUMs, rusageMs)
	}
}

func TestTreeOfAGoneProcessIsEmpty(t *testing.T) {
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if got := Tree(cmd.Process.Pid); len(got) != 0 {
		t.Errorf("Tree of a reaped pid = %v, want none", got)
	}
	if got := Sample(cmd.Process.Pid); len(got) != 0 {
		t.Errorf("Sample of a reaped pid = %v, want none", got)
	}
	if got := Tree(os.Getpid()); len(got) == 0 || got[0] != os.Getpid() {
		t.Errorf("Tree(self) = %v, want self first", got)
	}
}
