//go:build linux

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestInCyclicRange(t *testing.T) {
	tests := []struct {
		name          string
		pid, from, to int
		want          bool
	}{
		{"inside", 105, 100, 110, true},
		{"upper bound included", 110, 100, 110, true},
		{"lower bound excluded", 100, 100, 110, false},
		{"below", 50, 100, 110, false},
		{"above", 111, 100, 110, false},
		{"empty range", 100, 100, 100, false},
		{"wrapped high part", 32000, 30000, 400, true},
		{"wrapped low part", 350, 30000, 400, true},
		{"wrapped gap", 1000, 30000, 400, false},
		{"wrapped from excluded", 30000, 30000, 400, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := inCyclicRange(tt.pid, tt.from, tt.to); got != tt.want {
				t.Errorf("inCyclicRange(%d, %d, %d) = %v, want %v", tt.pid, tt.from, tt.to, got, tt.want)
			}
		})
	}
}

func TestParsePid(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"1", 1, true},
		{"4194304", 4194304, true},
		{"0", 0, false},
		{"", 0, false},
		{"self", 0, false},
		{"12a", 0, false},
		{"99999999999", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parsePid(tt.in)
			if ok != tt.ok || (ok && got != tt.want) {
				t.Errorf("parsePid(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestProcReaders(t *testing.T) {
	last, tasks, ok := readLoadavg()
	if !ok || last <= 0 || tasks == 0 {
		t.Errorf("readLoadavg() = %d, %d, %v; want positive values", last, tasks, ok)
	}
	if n, ok := readForks(); !ok || n == 0 {
		t.Errorf("readForks() = %d, %v; want > 0", n, ok)
	}
	if n, ok := readPidMax(); !ok || n < 301 {
		t.Errorf("readPidMax() = %d, %v; want > 300", n, ok)
	}
	if !procMatchesSelf() {
		t.Errorf("procMatchesSelf() = false, want true in the test environment")
	}
}

func TestSweepMarkedFullScan(t *testing.T) {
	t.Parallel()
	id := newRunID()
	// A marked process in its own session, started outside proc.Run.
	cmd := exec.Command("setsid", "sleep", "60")
	cmd.Env = append(os.Environ(), RunIDEnv+"="+id)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	// setsid execs sleep: while an exec is under way the kernel shows an
	// empty environ, so wait until sleep runs.
	deadline := time.Now().Add(5 * time.Second)
	for {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid))
		if strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("setsid did not exec sleep: comm %q", comm)
		}
		time.Sleep(time.Millisecond) // polling another process's exec
	}
	if n := SweepMarked(id, 0); n != 1 {
		t.Errorf("SweepMarked = %d, want 1", n)
	}
	if processAlive(cmd.Process.Pid) {
		t.Errorf("process %d alive after SweepMarked, want killed", cmd.Process.Pid)
	}
	if n := SweepMarked(id, 0); n != 0 {
		t.Errorf("second SweepMarked = %d, want 0", n)
	}
	if n := SweepMarked("", 0); n != 0 {
		t.Errorf("SweepMarked(\"\") = %d, want 0", n)
	}
}
