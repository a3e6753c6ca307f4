package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Handing the agent's pipes to the daemon. `harnessd mcp` would otherwise
// copy every frame twice (agent → bridge → daemon and back), two more
// process wake-ups per message each way. When its stdin and stdout are
// pipes or sockets (what every MCP client gives a stdio server), the bridge
// sends both descriptors over the daemon's MCP socket (SCM_RIGHTS) with the
// handoff line; the daemon reads and writes them itself and answers
// handoffOK, and the bridge only waits: for the daemon to close the
// connection (the session ended) or for a signal (closing it ends the
// session). Anything else (an older daemon, a refusal, stdin a terminal or a
// file) and the bridge copies bytes as before.

// handoffLine starts a connection that hands over stdin and stdout; no
// JSON-RPC frame can start with it.
const handoffLine = "harnessd-stdio-fds v1\n"

// handoffOK is the daemon's answer when it took the descriptors.
const handoffOK = "harnessd-stdio-fds ok\n"

// handoffRefused starts the daemon's answer when it did not.
const handoffRefused = "harnessd-stdio-fds refused: "

// passable reports whether f is a pipe or a socket: the descriptors the
// daemon can poll, shared with nobody but the agent's end. A terminal or a
// file stays with the bridge (the daemon would set O_NONBLOCK on a
// description a shell shares).
func passable(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	m := fi.Mode()
	return m&os.ModeNamedPipe != 0 || m&os.ModeSocket != 0
}

// sendHandoff sends stdin and stdout over conn and reads the daemon's
// answer: true when the daemon took them.
func sendHandoff(conn *net.UnixConn, stdin, stdout *os.File) (bool, error) {
	in, err := stdin.SyscallConn()
	if err != nil {
		return false, err
	}
	out, err := stdout.SyscallConn()
	if err != nil {
		return false, err
	}
	var werr error
	cerr := in.Control(func(inFD uintptr) {
		if err := out.Control(func(outFD uintptr) {
			_, _, werr = conn.WriteMsgUnix([]byte(handoffLine), unix.UnixRights(int(inFD), int(outFD)), nil)
		}); err != nil {
			werr = err
		}
	})
	if err := errors.Join(cerr, werr); err != nil {
		return false, err
	}
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return false, err
	}
	line, err := readLine(conn, 256)
	if err != nil {
		return false, err
	}
	_ = conn.SetReadDeadline(time.Time{})
	return line == handoffOK, nil
}

// readLine reads up to and including '\n', one byte at a time (nothing
// after it is consumed), at most max bytes.
func readLine(r io.Reader, max int) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for len(b) < max {
		if _, err := io.ReadFull(r, one); err != nil {
			return string(b), err
		}
		b = append(b, one[0])
		if one[0] == '\n' {
			return string(b), nil
		}
	}
	return string(b), fmt.Errorf("line longer than %d bytes", max)
}

// stdioConn is an MCP session's stream over the agent's handed-over pipes;
// the control connection to the bridge ends the session when it closes.
type stdioConn struct {
	in, out *os.File
	ctl     net.Conn
	once    sync.Once
}

func (c *stdioConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *stdioConn) Write(p []byte) (int, error) { return c.out.Write(p) }

// Close closes the pipes (a pending Read returns) and the control
// connection (the bridge exits).
func (c *stdioConn) Close() error {
	var err error
	c.once.Do(func() { err = errors.Join(c.in.Close(), c.out.Close(), c.ctl.Close()) })
	return err
}

// prefixConn is a connection whose first bytes were read already.
type prefixConn struct {
	io.Reader
	net.Conn
}

func (c prefixConn) Read(p []byte) (int, error) { return c.Reader.Read(p) }

// acceptHandoff reads the start of a new connection of the MCP socket. For
// a handoff it returns the stream over the handed-over pipes (the answer
// sent); for anything else, the connection itself with what was read put
// back in front. A handoff it refuses is answered and closed (stream nil).
func acceptHandoff(conn net.Conn) (io.ReadWriteCloser, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return conn, nil
	}
	buf := make([]byte, len(handoffLine))
	oob := make([]byte, unix.CmsgSpace(4*4)) // room for more fds than we take, to close them
	n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	fds, perr := parseRights(oob[:oobn])
	if err != nil {
		closeFDs(fds)
		return nil, err
	}
	got := buf[:n]
	if len(fds) == 0 {
		return prefixConn{Reader: io.MultiReader(bytes.NewReader(got), conn), Conn: conn}, nil
	}
	if n < len(handoffLine) && bytes.HasPrefix([]byte(handoffLine), got) {
		// The rest of the line came apart from its descriptors.
		if _, err := io.ReadFull(conn, buf[n:]); err != nil {
			closeFDs(fds)
			return nil, err
		}
		got = buf
	}
	refuse := func(why string) (io.ReadWriteCloser, error) {
		closeFDs(fds)
		_, _ = conn.Write([]byte(handoffRefused + why + "\n"))
		conn.Close()
		return nil, errors.New("stdio handoff refused: " + why)
	}
	if perr != nil {
		return refuse(perr.Error())
	}
	if string(got) != handoffLine {
		return refuse("descriptors without the handoff line")
	}
	if len(fds) != 2 {
		return refuse(fmt.Sprintf("%d descriptors, want stdin and stdout", len(fds)))
	}
	// The socket is the daemon user's alone (0600 in a 0700 dir); the
	// peer's uid is checked all the same before its descriptors are used.
	if uid, err := peerUID(uc); err != nil || uid != os.Getuid() {
		return refuse(fmt.Sprintf("peer uid %d (%v), want %d", uid, err, os.Getuid()))
	}
	for _, fd := range fds {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return refuse("fstat: " + err.Error())
		}
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
			return refuse("stdin and stdout must be pipes or sockets")
		}
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
		if err := unix.SetNonblock(fd, true); err != nil {
			return refuse("set non-blocking: " + err.Error())
		}
	}
	sc := &stdioConn{in: os.NewFile(uintptr(fds[0]), "mcp-stdin"), out: os.NewFile(uintptr(fds[1]), "mcp-stdout"), ctl: conn}
	if _, err := conn.Write([]byte(handoffOK)); err != nil {
		sc.Close()
		return nil, err
	}
	return sc, nil
}

// peerUID returns the uid of the process at the other end of c.
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, cerr
	}
	return int(cred.Uid), nil
}

// parseRights returns the descriptors of SCM_RIGHTS messages in oob.
func parseRights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	var bad error
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			bad = err
			continue
		}
		fds = append(fds, got...)
	}
	return fds, bad
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
