package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const initFrame = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}` + "\n"

// The agent's pipes are handed to the daemon (surfaces/daemon/stdiofds.go);
// a bridge killed with SIGKILL must still end its session: the daemon
// closes its copy of the agent's stdout, so the agent sees EOF (a daemon
// that kept serving a dead bridge's pipes would hold it open forever).
func TestMCPBridgeKilledEndsTheSession(t *testing.T) {
	dataDir := t.TempDir()
	t.Cleanup(func() { stopDaemonOf(t, dataDir) })
	// Our own pipes: exec.Cmd's StdinPipe and StdoutPipe are closed by
	// Wait, which would end the session by itself.
	inR, stdin, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	cmd := exec.Command(harnessdBin, "mcp", "--data-dir", dataDir, "--log-level", "warn")
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close() // the bridge and the daemon hold the write end now
	if _, err := stdin.Write([]byte(initFrame)); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	select {
	case l := <-lines:
		if !strings.Contains(l, `"serverInfo"`) {
			t.Fatalf("initialize answered %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer to initialize")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// stdin stays open on our side: only the daemon noticing the bridge's
	// death can close the agent's stdout.
	select {
	case l, ok := <-lines:
		if ok {
			t.Fatalf("unexpected frame after the kill: %q", l)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent's stdout stayed open after its bridge was killed")
	}
}

// When stdout is not a pipe or a socket (a file here), the bridge keeps
// the descriptors and copies bytes, as before the handoff existed.
func TestMCPBridgeCopiesWhenStdoutIsAFile(t *testing.T) {
	dataDir := t.TempDir()
	t.Cleanup(func() { stopDaemonOf(t, dataDir) })
	outPath := filepath.Join(t.TempDir(), "out.jsonl")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(harnessdBin, "mcp", "--data-dir", dataDir, "--log-level", "warn")
	cmd.Stdout = out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	frames := initFrame + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"
	if _, err := stdin.Write([]byte(frames)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(outPath)
		if ids := answeredIDs(b); ids[1] && ids[2] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("answers in the file: %q", b)
		}
		time.Sleep(20 * time.Millisecond) // polling a file another process writes
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("harnessd mcp exited with %v after stdin closed", err)
	}
}

func answeredIDs(b []byte) map[int]bool {
	ids := map[int]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Result != nil {
			ids[m.ID] = true
		}
	}
	return ids
}
