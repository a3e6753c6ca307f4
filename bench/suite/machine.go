package suite

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Machine describes the machine a report was made on.
type Machine struct {
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	// MemTotal is the physical memory in bytes (0 when unknown).
	MemTotal int64 `json:"mem_total"`
}

func machineInfo() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), CPUModel: "unknown"}
	if v, ok := procField("/proc/cpuinfo", "model name", ':'); ok {
		m.CPUModel = v
	}
	if kb, ok := procKB("/proc/meminfo", "MemTotal"); ok {
		m.MemTotal = kb << 10
	}
	return m
}

// procField returns the value of the first "key<sep> value" line of a
// /proc file.
func procField(path, key string, sep byte) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		k, v, ok := strings.Cut(line, string(sep))
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// procKB reads a "Key:   123 kB" field of a /proc file, in KiB.
func procKB(path, key string) (int64, bool) {
	v, ok := procField(path, key, ':')
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
	return n, err == nil
}

// peakRSS returns the peak resident set size (VmHWM) of pid in bytes;
// pid 0 means this process.
func peakRSS(pid int) (int64, bool) {
	path := "/proc/self/status"
	if pid > 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	kb, ok := procKB(path, "VmHWM")
	return kb << 10, ok
}

// commitOf returns the VCS revision of the running binary, else
// `git rev-parse HEAD` of the harnessd module, else "unknown".
func commitOf(ctx context.Context) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	root, err := moduleRoot()
	if err != nil {
		return "unknown"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "HEAD")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	if c := string(bytes.TrimSpace(out)); c != "" {
		return c
	}
	return "unknown"
}
