package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Paths are the files of a data dir.
type Paths struct {
	DataDir, Socket, MCPSocket, Lock, Pid, Token, Log string
}

// PathsOf returns the paths of dataDir.
func PathsOf(dataDir string) Paths {
	return Paths{
		DataDir: dataDir,
		Socket:  filepath.Join(dataDir, "harnessd.sock"),
		// MCPSocket carries raw MCP sessions for `harnessd mcp`.
		MCPSocket: filepath.Join(dataDir, "mcp.sock"),
		Lock:      filepath.Join(dataDir, "harnessd.lock"),
		Pid:       filepath.Join(dataDir, "harnessd.pid"),
		Token:     filepath.Join(dataDir, "token"),
		Log:       filepath.Join(dataDir, "harnessd.log"),
	}
}

// ErrAlreadyRunning reports that another daemon holds the data dir.
var ErrAlreadyRunning = errors.New("harnessd is already running")

// lock takes the data dir's exclusive lock and writes the pid file. The
// returned release undoes both.
func lock(p Paths) (release func(), held *os.File, err error) {
	f, err := os.OpenFile(p.Lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		pid := "unknown pid"
		if b, rerr := os.ReadFile(p.Pid); rerr == nil {
			pid = "pid " + strings.TrimSpace(string(b))
		}
		return nil, nil, fmt.Errorf("%w on data dir %s (%s, socket %s)", ErrAlreadyRunning, p.DataDir, pid, p.Socket)
	}
	if err := os.WriteFile(p.Pid, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("write pid file: %w", err)
	}
	return func() {
		_ = os.Remove(p.Pid)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, f, nil
}

// stillHeld reports an error when the lock file at p.Lock is no longer the
// file this daemon locked (removed, or replaced: then a second daemon can
// lock the path and both would write).
func stillHeld(p Paths, held *os.File) error {
	mine, err := held.Stat()
	if err != nil {
		return fmt.Errorf("stat the held lock file: %w", err)
	}
	now, err := os.Stat(p.Lock)
	if err != nil {
		return fmt.Errorf("the data dir's lock file %s was removed (%v): another daemon could start on this data dir", p.Lock, err)
	}
	if !os.SameFile(mine, now) {
		return fmt.Errorf("the data dir's lock file %s was replaced: another daemon may hold this data dir", p.Lock)
	}
	return nil
}

// ReadToken returns the bearer token of a data dir.
func ReadToken(p Paths) (string, error) {
	b, err := os.ReadFile(p.Token)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ensureToken returns the data dir's token, creating it (0600) if absent.
func ensureToken(p Paths) (string, error) {
	if t, err := ReadToken(p); err == nil && t != "" {
		if st, err := os.Stat(p.Token); err == nil && st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p.Token, 0o600); err != nil {
				return "", fmt.Errorf("tighten token permissions: %w", err)
			}
		}
		return t, nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	t := hex.EncodeToString(b)
	tmp := p.Token + ".tmp"
	if err := os.WriteFile(tmp, []byte(t+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	if err := os.Rename(tmp, p.Token); err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	return t, nil
}

// HoldDataDir takes the data dir's lock for a tool that must run while no
// daemon does (harness store restore and reset); ErrAlreadyRunning when a
// daemon holds it.
func HoldDataDir(dataDir string) (release func(), err error) {
	release, _, err = lock(PathsOf(dataDir))
	return release, err
}
