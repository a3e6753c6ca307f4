package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// The official @modelcontextprotocol/server-filesystem side by side with
// harnessd (issue #30: "faster than server-filesystem on read and list"):
// the surface fs-mcp-stdio-raw starts `node dist/index.js <fixture dir>`
// when the fixture is registered and drives it with the raw JSON-RPC
// client of mcp-stdio-raw (rawmcp.go). Only the cases with an honest
// equivalent run (fsCall, a pure function): small_file_read is its
// read_text_file, list_dir its list_directory; every other case is skipped
// as having no equivalent. Every answer is checked after the clock
// stopped (checkFS): the read returned the file's text, the listing names
// exactly the directory's entries. An error answer fails the case.

// fsPackage and fsVersion are what the bench installs by name when no
// server is given: the newest version the npm registry served when the
// side by side was added (`npm view @modelcontextprotocol/server-filesystem
// version`), pinned so runs compare.
const (
	fsPackage = "@modelcontextprotocol/server-filesystem"
	fsVersion = "2026.8.31"
)

// fsJSRel is the server's dist/index.js in the bench's install under
// $PEER_DIR (default /tmp/peer).
const fsJSRel = "fs-install/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

// fsInstallTimeout bounds `npm install` of the server.
const fsInstallTimeout = 3 * time.Minute

// fsInitTimeout bounds the server's start.
const fsInitTimeout = time.Minute

// errNoEquivalentFS prefixes the reason a call cannot be mapped to
// server-filesystem.
var errNoEquivalentFS = errors.New("no equivalent in server-filesystem")

// FSInfo records the server-filesystem the side by side ran against.
type FSInfo struct {
	Path    string `json:"path"`    // its dist/index.js
	Version string `json:"version"` // its package.json's
	// ReadTool is the tool small_file_read maps to: read_text_file, or
	// read_file on versions without it.
	ReadTool string `json:"read_tool,omitempty"`
}

// fsInstall is a server-filesystem found (or installed) on this machine,
// or why none was.
type fsInstall struct {
	info FSInfo
	node string
	skip string // set when the surface is skipped
}

// fsSkipPrefix starts every reason the surface is skipped.
const fsSkipPrefix = "server-filesystem unavailable: "

// locateFS finds the server's dist/index.js: flag (--fs-server), else
// $FS_MCP_JS, else the bench's install under $PEER_DIR or /tmp/peer, which
// it makes with npm (by name, fsPackage@fsVersion, --ignore-scripts) when
// it is missing. A path given by flag or environment is never installed
// over. Without node, npm or the package the surface is skipped.
func locateFS(ctx context.Context, flag string, stderr io.Writer) *fsInstall {
	node, err := exec.LookPath("node")
	if err != nil {
		return &fsInstall{skip: fsSkipPrefix + "node not found in PATH"}
	}
	js, given := flag, flag != ""
	if js == "" {
		js = os.Getenv("FS_MCP_JS")
		given = js != ""
	}
	if js == "" {
		peer := os.Getenv("PEER_DIR")
		if peer == "" {
			peer = "/tmp/peer"
		}
		js = filepath.Join(peer, filepath.FromSlash(fsJSRel))
		if !fileExists(js) {
			progressLine(stderr, "installing %s@%s ...", fsPackage, fsVersion)
			err := npmInstallFS(ctx, filepath.Join(peer, "fs-install"))
			progressLine(stderr, "%s\r", strings.Repeat(" ", 60))
			if err != nil {
				return &fsInstall{skip: fsSkipPrefix + err.Error() + "; install it or pass --fs-server or FS_MCP_JS"}
			}
		}
	}
	if !fileExists(js) {
		if given {
			return &fsInstall{skip: fsSkipPrefix + js + " is not a file (pass its dist/index.js in --fs-server or FS_MCP_JS)"}
		}
		return &fsInstall{skip: fsSkipPrefix + "npm installed no " + js}
	}
	fi := &fsInstall{node: node, info: FSInfo{Path: js, Version: "unknown"}}
	var pkg struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(js), "..", "package.json")); err == nil && json.Unmarshal(b, &pkg) == nil && pkg.Version != "" {
		fi.info.Version = pkg.Version
	}
	return fi
}

// npmInstallFS installs fsPackage@fsVersion by name into dir with npm,
// scripts off.
func npmInstallFS(ctx context.Context, dir string) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return errors.New("npm not found in PATH to install " + fsPackage)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pj := filepath.Join(dir, "package.json")
	if !fileExists(pj) {
		if err := os.WriteFile(pj, []byte(`{"name":"fs-peer-bench","private":true}`+"\n"), 0o644); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, fsInstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-save", "--ignore-scripts", "--no-audit", "--no-fund",
		"--silent", fsPackage+"@"+fsVersion)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("npm install %s@%s in %s: %v: %s", fsPackage, fsVersion, dir, err, oneLine(string(out), 300))
	}
	return nil
}

// fsSurface is server-filesystem through the raw client. The server is
// started when the fixture is registered: the fixture is the one
// directory it allows.
type fsSurface struct {
	fi *fsInstall

	mu   sync.Mutex // protects raw and root
	raw  *rawSurface
	root string // the registered fixture
}

// openFS returns the surface; the server starts at registration.
func openFS(fi *fsInstall) (*fsSurface, error) {
	if fi == nil {
		return nil, skipSurface{fsSkipPrefix + "not located"}
	}
	if fi.skip != "" {
		return nil, skipSurface{fi.skip}
	}
	return &fsSurface{fi: fi}, nil
}

func (s *fsSurface) Name() string { return SurfaceFSMCPStdioRaw }

// readTool is the tool a read maps to: read_text_file, else read_file
// (the older name), else "" before the server started.
func (s *fsSurface) readTool() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.raw == nil {
		return ""
	}
	return fsReadTool(s.raw.tools)
}

func fsReadTool(tools map[string]bool) string {
	for _, t := range []string{"read_text_file", "read_file"} {
		if tools[t] {
			return t
		}
	}
	return ""
}

// HasOp reports whether op (harnessd's) has a tool the server offers.
func (s *fsSurface) HasOp(op string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch op {
	case "repository_register":
		return true
	case "read_file":
		return s.raw != nil && fsReadTool(s.raw.tools) != ""
	case opListDir:
		return s.raw != nil && s.raw.tools["list_directory"]
	}
	return false
}

// fsCall maps harnessd's op and its JSON arguments to server-filesystem's
// tool and arguments, paths made absolute under root (the registered
// fixture); readTool names its read tool. Only a read and a directory
// listing (list_dir, to list_directory) have an equivalent; any
// other operation or argument is an error wrapping errNoEquivalentFS, and
// a path that leaves root is an invalid argument.
func fsCall(op string, args map[string]any, root, readTool string) (string, map[string]any, error) {
	a, err := normArgs(args)
	if err != nil {
		return "", nil, err
	}
	// Reporting and bookkeeping of harnessd's that change no answer.
	common := []string{"repo_id", "request_id", "include_latency_breakdown"}
	abs := func(rel any) (string, error) {
		p, ok := rel.(string)
		if !ok || p == "" {
			return "", fmt.Errorf("%s: path %v is not a path", op, rel)
		}
		p = filepath.Clean(filepath.FromSlash(p))
		if !filepath.IsLocal(p) && p != "." {
			return "", fmt.Errorf("%s: path %q leaves the repository", op, rel)
		}
		return filepath.Join(root, p), nil
	}
	switch op {
	case "read_file":
		if err := onlyKeysFS(op, a, append(common, "path")...); err != nil {
			return "", nil, err
		}
		if readTool == "" {
			return "", nil, fmt.Errorf("%w: the server offers neither read_text_file nor read_file", errNoEquivalentFS)
		}
		p, err := abs(a["path"])
		if err != nil {
			return "", nil, err
		}
		return readTool, map[string]any{"path": p}, nil
	case opListDir:
		if err := onlyKeysFS(op, a, append(common, "path")...); err != nil {
			return "", nil, err
		}
		dir, _ := a["path"].(string)
		if dir == "" {
			dir = "."
		}
		p, err := abs(dir)
		if err != nil {
			return "", nil, err
		}
		return "list_directory", map[string]any{"path": p}, nil
	}
	return "", nil, fmt.Errorf("%w: %q", errNoEquivalentFS, op)
}

// onlyKeysFS is onlyKeys with server-filesystem's error.
func onlyKeysFS(op string, a map[string]any, allowed ...string) error {
	if err := onlyKeys(op, a, allowed...); err != nil {
		return fmt.Errorf("%w: %s", errNoEquivalentFS, strings.TrimPrefix(err.Error(), errNoEquivalent.Error()+": "))
	}
	return nil
}

// noEquivalent returns why case c cannot run through s honestly ("" when
// it can).
func (s *fsSurface) noEquivalent(c caseDef) string {
	s.mu.Lock()
	root := s.root
	s.mu.Unlock()
	it := iter{repoID: "repo", request: func() string { return "probe" }}
	// batch and read_lanes are harnessd's: the steps go one by one.
	for _, st := range c.steps {
		if _, _, err := fsCall(st.op, st.args(it), root, s.readTool()); err != nil {
			return err.Error()
		}
		if !s.HasOp(st.op) {
			return fmt.Sprintf("%v: the server does not offer a tool for %s", errNoEquivalentFS, st.op)
		}
	}
	return ""
}

func (s *fsSurface) Call(ctx context.Context, op string, args map[string]any, out any) (sample, error) {
	if op == "repository_register" {
		return sample{}, s.register(ctx, args, out)
	}
	s.mu.Lock()
	raw, root := s.raw, s.root
	s.mu.Unlock()
	if raw == nil {
		return sample{}, errs.New(errs.RepositoryNotRegistered, "%s %s: no repository registered (register starts the server)", s.Name(), op)
	}
	tool, fargs, err := fsCall(op, args, root, fsReadTool(raw.tools))
	if err != nil {
		return sample{}, errs.New(errs.InvalidArgument, "%s %s: %v", s.Name(), op, err)
	}
	start := time.Now()
	res, err := raw.rpc(ctx, "tools/call", map[string]any{"name": tool, "arguments": fargs})
	smp := sample{wall: time.Since(start)}
	if err != nil {
		return smp, callError(ctx, s.Name(), tool, err)
	}
	text, err := fsText(res)
	if err != nil {
		return smp, errs.Wrap(errs.Internal, err, "%s %s: %v", s.Name(), tool, err)
	}
	if err := checkFS(op, fargs, text); err != nil {
		return smp, errs.Wrap(errs.Internal, err, "%s %s answered without doing the work: %v", s.Name(), tool, err)
	}
	return smp, nil
}

// register starts the server on args' path (the one directory it allows)
// and answers its path as the repo_id.
func (s *fsSurface) register(ctx context.Context, args map[string]any, out any) error {
	p, _ := args["path"].(string)
	if p == "" || !filepath.IsAbs(p) {
		return errs.New(errs.InvalidArgument, "%s repository_register: path %q is not an absolute directory", s.Name(), p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.raw != nil {
		if s.root != p {
			return errs.New(errs.InvalidArgument, "%s: the server allows %s only; start another for %s", s.Name(), s.root, p)
		}
	} else {
		cmd := exec.Command(s.fi.node, s.fi.info.Path, p)
		cmd.Dir = p
		raw, err := startRaw(ctx, SurfaceFSMCPStdioRaw, "server-filesystem", cmd, fsInitTimeout)
		if err != nil {
			return err
		}
		s.raw, s.root = raw, p
		s.fi.info.ReadTool = fsReadTool(raw.tools)
	}
	if out == nil {
		return nil
	}
	b, _ := json.Marshal(map[string]string{"repo_id": p})
	return json.Unmarshal(b, out)
}

// fsText returns the text of a tools/call result (its text blocks, joined)
// or, for an error result, an error with the server's message.
func fsText(raw json.RawMessage) (string, error) {
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", fmt.Errorf("decode result: %w", err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("server-filesystem answered an error: %s", oneLine(b.String(), 300))
	}
	return b.String(), nil
}

// checkFS checks that text, server-filesystem's answer to harnessd's op
// (mapped to fargs by fsCall, absolute paths), shows the work done: a read
// is the file's text as it is on disk now; a listing names exactly the
// directory's entries, each as [FILE] or [DIR] as it is.
func checkFS(op string, fargs map[string]any, text string) error {
	p, _ := fargs["path"].(string)
	switch op {
	case "read_file":
		want, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read_file: read %s: %w", p, err)
		}
		if text != string(want) {
			return fmt.Errorf("read_file %s: %d bytes answered, not the file's %d", p, len(text), len(want))
		}
		return nil
	case opListDir:
		ents, err := os.ReadDir(p)
		if err != nil {
			return fmt.Errorf("list_directory: read %s: %w", p, err)
		}
		var want []string
		for _, e := range ents {
			kind := "[FILE] "
			if e.IsDir() {
				kind = "[DIR] "
			}
			want = append(want, kind+e.Name())
		}
		var got []string
		for l := range strings.SplitSeq(text, "\n") {
			if l != "" {
				got = append(got, l)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("list_directory %s: answered %q, the directory has %q", p, got, want)
		}
		return nil
	}
	return fmt.Errorf("%w: %q", errNoEquivalentFS, op)
}

func (s *fsSurface) Close() error {
	s.mu.Lock()
	raw := s.raw
	s.raw = nil
	s.mu.Unlock()
	if raw == nil {
		return nil
	}
	return raw.Close()
}
