package suite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// Forge's MCP server side by side with harnessd's (issue #30): the surface
// forge-mcp-stdio-raw starts `node forge.mjs mcp serve --transport stdio`
// and drives it with the raw JSON-RPC client of mcp-stdio-raw (rawmcp.go)
// on the same fixture. Each harnessd operation is mapped to Forge's
// equivalent tool call (forgeCall, a pure function), and every answer is
// checked, after the clock stopped, to have done the same work (checkForge):
// the read returned the file's bytes, the patch changed the file, the diff
// has the dirty file, and so on. An error answer fails the case.

// forgeToolset is the Forge toolset the bench asks for. "full" has a tool
// for every case (search_repository, repository_git_diff,
// repository_workbench); the default ("advanced") has only read, command
// and patch among them.
const forgeToolset = "full"

// forgeNotFound is the reason the surface is skipped without a Forge.
const forgeNotFound = "forge not found: run ../shared/peers/forge-thin-harness-bench.sh or pass --forge"

// forgeInitTimeout bounds Forge's start (bun compiles its TypeScript on a
// cold cache: seconds on a loaded machine).
const forgeInitTimeout = 2 * time.Minute

// forgeMJSRel is bin/forge.mjs in the install of the peers script, under
// $PEER_DIR (default /tmp/peer).
const forgeMJSRel = "forge-install/node_modules/@moretea-labs/forge/bin/forge.mjs"

// ForgeInfo records the Forge the side by side ran against.
type ForgeInfo struct {
	Path    string `json:"path"`    // bin/forge.mjs
	Version string `json:"version"` // its package.json's
	Runtime string `json:"runtime"` // "bun" (forge.mjs prefers it) or "node"
	Toolset string `json:"toolset"`
}

// forgeInstall is a Forge found on this machine, or why none was.
type forgeInstall struct {
	info ForgeInfo
	node string
	bun  string // the bun binary forge.mjs will run, "" for node
	skip string // set when the surface is skipped
}

// skipSurface is an error that skips every case of a surface with its
// reason (the run still succeeds).
type skipSurface struct{ why string }

func (e skipSurface) Error() string { return e.why }

// locateForge finds forge.mjs: flag (--forge), else $FORGE_MJS, else the
// peers script's install under $PEER_DIR or /tmp/peer.
func locateForge(flag string) *forgeInstall {
	mjs := flag
	if mjs == "" {
		mjs = os.Getenv("FORGE_MJS")
	}
	if mjs == "" {
		peer := os.Getenv("PEER_DIR")
		if peer == "" {
			peer = "/tmp/peer"
		}
		mjs = filepath.Join(peer, filepath.FromSlash(forgeMJSRel))
	}
	if !fileExists(mjs) {
		return &forgeInstall{skip: forgeNotFound}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return &forgeInstall{skip: "node not found in PATH: Forge's launcher needs it"}
	}
	fi := &forgeInstall{node: node, info: ForgeInfo{Path: mjs, Runtime: "node", Toolset: forgeToolset}}
	var pkg struct {
		Version string `json:"version"`
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(mjs), "..", "package.json")); err == nil && json.Unmarshal(b, &pkg) == nil {
		fi.info.Version = pkg.Version
	}
	if fi.info.Version == "" {
		fi.info.Version = "unknown"
	}
	if bun, err := exec.LookPath("bun"); err == nil {
		fi.bun = bun
	} else {
		// The peers script installs bun beside Forge: PEER/bun/node_modules/@oven/bun-linux-*/bin/bun.
		peer := filepath.Join(filepath.Dir(mjs), "..", "..", "..", "..", "..")
		if m, _ := filepath.Glob(filepath.Join(peer, "bun", "node_modules", "@oven", "bun-linux-*", "bin", "bun")); len(m) > 0 {
			fi.bun = m[0]
		}
	}
	if fi.bun != "" {
		fi.info.Runtime = "bun"
	}
	return fi
}

// forgeEnv is Forge's environment: base without HOME, XDG and FORGE_
// settings, then a private HOME (its state) and bunDir first in PATH.
func forgeEnv(base []string, home, bunDir string) []string {
	var env []string
	path := ""
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME" || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "FORGE_"):
			continue
		case k == "PATH":
			path = v
			continue
		}
		env = append(env, kv)
	}
	if bunDir != "" {
		path = strings.TrimSuffix(bunDir+string(os.PathListSeparator)+path, string(os.PathListSeparator))
	}
	return append(env,
		"PATH="+path,
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"FORGE_CONTROLLER_HOME="+filepath.Join(home, "controller"),
	)
}

// forgeSurface is Forge's MCP server through the raw client.
type forgeSurface struct {
	raw  *rawSurface
	home string // Forge's HOME, removed on Close

	mu   sync.Mutex // protects root
	root string     // the registered fixture, for the checks
}

// openForge starts Forge's MCP server with a private HOME under work.
func openForge(ctx context.Context, fi *forgeInstall, work string) (*forgeSurface, error) {
	if fi == nil {
		return nil, skipSurface{forgeNotFound}
	}
	if fi.skip != "" {
		return nil, skipSurface{fi.skip}
	}
	home, err := os.MkdirTemp(work, "forge-home-")
	if err != nil {
		return nil, err
	}
	cwd := filepath.Join(home, "cwd")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		os.RemoveAll(home)
		return nil, err
	}
	bunDir := ""
	if fi.bun != "" {
		bunDir = filepath.Dir(fi.bun)
	}
	cmd := exec.Command(fi.node, fi.info.Path, "mcp", "serve", "--transport", "stdio",
		"--toolset", forgeToolset, "--controller-home", filepath.Join(home, "controller"))
	cmd.Dir = cwd
	cmd.Env = forgeEnv(os.Environ(), home, bunDir)
	// forge.mjs runs bun as its child: one group, so a stuck server is
	// killed whole (rawSurface.Close).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	raw, err := startRaw(ctx, SurfaceForgeMCPStdioRaw, "forge mcp serve", cmd, forgeInitTimeout)
	if err != nil {
		os.RemoveAll(home)
		return nil, err
	}
	return &forgeSurface{raw: raw, home: home}, nil
}

func (s *forgeSurface) Name() string { return SurfaceForgeMCPStdioRaw }

// HasOp reports whether op has an equivalent Forge tool the server offers.
func (s *forgeSurface) HasOp(op string) bool {
	t := forgeTool(op)
	return t != "" && s.raw.tools[t]
}

// forgeTool names the Forge tool harnessd's op maps to ("" when none).
// git_status goes through the Thin Harness's git_status step: Forge's
// repository_git_status reads a sample its scheduler takes (none under
// `mcp serve`), and with refresh=true 1.8.0 answers `{"status":{}}`
// before its git commands finish (an unawaited promise).
func forgeTool(op string) string {
	switch op {
	case "repository_register":
		return "repository_register"
	case "read_file":
		return "read_repository_file"
	case "search":
		return "search_repository"
	case "git_diff":
		return "repository_git_diff"
	case "run_command", opListDir:
		// Forge's MCP has no directory listing: an agent lists one with
		// its command tool (forgeCall).
		return "repository_command_execute"
	case opApplyPatch:
		return "repository_safe_patch_apply"
	case "git_status", "batch", "read_lanes":
		return "repository_workbench"
	}
	return ""
}

// lsCommand is list_dir's arguments as the run_command a Forge agent
// lists the directory with: ls -A -p DIR.
func lsCommand(a map[string]any) (string, map[string]any, error) {
	if err := onlyKeys(opListDir, a, "repo_id", "include_latency_breakdown", "path"); err != nil {
		return "", nil, err
	}
	dir, _ := a["path"].(string)
	if dir == "" {
		dir = "."
	}
	c := map[string]any{"repo_id": a["repo_id"], "argv": []any{"ls", "-A", "-p", dir}}
	if b, ok := a["include_latency_breakdown"]; ok {
		c["include_latency_breakdown"] = b
	}
	return "run_command", c, nil
}

// forgeKinds maps harnessd's operations to the step kinds of Forge's
// Thin Harness (repository_workbench batch_execute and lanes_execute).
var forgeKinds = map[string]string{
	"read_file": "read_file", "search": "search", "git_status": "git_status", "git_diff": "git_diff",
	"run_command": "run_short_command", opApplyPatch: "apply_patch",
}

// errNoEquivalent prefixes the reason a call cannot be mapped to Forge.
var errNoEquivalent = errors.New("no equivalent in forge")

// forgeCall maps harnessd's op and its JSON arguments to Forge's tool and
// arguments. An operation or argument without an honest equivalent is an
// error wrapping errNoEquivalent: nothing is dropped silently.
func forgeCall(op string, args map[string]any) (string, map[string]any, error) {
	a, err := normArgs(args)
	if err != nil {
		return "", nil, err
	}
	repoID := a["repo_id"]
	if op == opListDir {
		if op, a, err = lsCommand(a); err != nil {
			return "", nil, err
		}
	}
	switch op {
	case "repository_register":
		if err := onlyKeys(op, a, "path"); err != nil {
			return "", nil, err
		}
		return "repository_register", map[string]any{"path": a["path"]}, nil
	case "batch", "read_lanes":
		key, fkey, operation := "steps", "steps", "batch_execute"
		if op == "read_lanes" {
			key, fkey, operation = "lanes", "read_lanes", "lanes_execute"
		}
		if err := onlyKeys(op, a, "repo_id", "include_latency_breakdown", "request_id", key); err != nil {
			return "", nil, err
		}
		list, ok := a[key].([]any)
		if !ok || len(list) == 0 {
			return "", nil, fmt.Errorf("%s: %q is not a list of steps", op, key)
		}
		steps := make([]any, 0, len(list))
		for i, x := range list {
			st, ok := x.(map[string]any)
			if !ok {
				return "", nil, fmt.Errorf("%s: step %d is not an object", op, i)
			}
			kind, _ := st["kind"].(string)
			sargs, _ := st["args"].(map[string]any)
			fk, input, err := forgeInput(kind, sargs)
			if err != nil {
				return "", nil, fmt.Errorf("%s step %d: %w", op, i, err)
			}
			steps = append(steps, map[string]any{"kind": fk, "input": input})
		}
		payload := map[string]any{fkey: steps}
		if b, _ := a["include_latency_breakdown"].(bool); b {
			payload["include_latency_breakdown"] = true
		}
		if rid, ok := a["request_id"]; ok {
			payload["request_id"] = rid
		}
		return "repository_workbench", map[string]any{"repo_id": repoID, "operation": operation, "payload": payload}, nil
	}
	kind, input, err := forgeInput(op, a)
	if err != nil {
		return "", nil, err
	}
	if op == "git_status" {
		return "repository_workbench", map[string]any{"repo_id": repoID, "operation": "batch_execute",
			"payload": map[string]any{"steps": []any{map[string]any{"kind": kind, "input": input}}}}, nil
	}
	input["repo_id"] = repoID
	if rid, ok := a["request_id"]; ok {
		input["request_id"] = rid
	}
	return forgeTool(op), input, nil
}

// forgeInput maps one harnessd operation's arguments to a Forge step kind
// and its input (also the arguments of the dedicated tool). repo_id,
// request_id and include_latency_breakdown are the caller's.
func forgeInput(op string, a map[string]any) (string, map[string]any, error) {
	kind, ok := forgeKinds[op]
	if !ok {
		return "", nil, fmt.Errorf("%w: %q", errNoEquivalent, op)
	}
	common := []string{"repo_id", "request_id", "include_latency_breakdown"}
	in := map[string]any{}
	switch op {
	case "read_file":
		if err := onlyKeys(op, a, append(common, "path")...); err != nil {
			return "", nil, err
		}
		in["path"] = a["path"]
	case "search":
		if err := onlyKeys(op, a, append(common, "query")...); err != nil {
			return "", nil, err
		}
		in["query"] = a["query"]
	case "git_status", "git_diff":
		if err := onlyKeys(op, a, common...); err != nil {
			return "", nil, err
		}
	case "run_command":
		if err := onlyKeys(op, a, append(common, "argv")...); err != nil {
			return "", nil, err
		}
		in["command"] = a["argv"]
	case opApplyPatch:
		if err := onlyKeys(op, a, append(common, "operations", "allowed_paths")...); err != nil {
			return "", nil, err
		}
		ops, _ := a["operations"].([]any)
		if len(ops) == 0 {
			return "", nil, fmt.Errorf("%s: no operations", op)
		}
		fops := make([]any, 0, len(ops))
		for i, x := range ops {
			o, _ := x.(map[string]any)
			if o["op"] != "replace" {
				return "", nil, fmt.Errorf("%w: %s operation %d is %v (only replace is mapped)", errNoEquivalent, op, i, o["op"])
			}
			if err := onlyKeys(op+" replace", o, "op", "path", "old_text", "new_text"); err != nil {
				return "", nil, err
			}
			fops = append(fops, map[string]any{"type": "replace", "path": o["path"],
				"replacements": []any{map[string]any{"old_text": o["old_text"], "new_text": o["new_text"]}}})
		}
		in["operations"] = fops
		if ap, ok := a["allowed_paths"]; ok {
			in["allowed_paths"] = ap
		}
	}
	return kind, in, nil
}

// normArgs round-trips args through JSON, so lists are []any and objects
// map[string]any whatever Go types the caller built them from.
func normArgs(args map[string]any) (map[string]any, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	var a map[string]any
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, err
	}
	if a == nil {
		a = map[string]any{}
	}
	return a, nil
}

// onlyKeys fails on an argument of op outside allowed.
func onlyKeys(op string, a map[string]any, allowed ...string) error {
	var extra []string
	for k := range a {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return fmt.Errorf("%w: %s argument %s", errNoEquivalent, op, strings.Join(extra, ", "))
	}
	return nil
}

// noEquivalent returns why case c cannot run through s honestly ("" when
// it can): only the Forge and server-filesystem surfaces have such cases.
func noEquivalent(s surface, c caseDef) string {
	if fs, ok := s.(*fsSurface); ok {
		return fs.noEquivalent(c)
	}
	if _, ok := s.(*forgeSurface); !ok {
		return ""
	}
	it := iter{repoID: "repo", request: func() string { return "probe" }}
	type call struct {
		op   string
		args map[string]any
	}
	var calls []call
	if c.via != "" && !separateCalls() && s.HasOp(c.via) {
		calls = append(calls, call{c.via, c.viaArgs(it)})
	} else {
		for _, st := range c.steps {
			calls = append(calls, call{st.op, st.args(it)})
		}
	}
	for _, cl := range calls {
		if _, _, err := forgeCall(cl.op, cl.args); err != nil {
			return err.Error()
		}
		if !s.HasOp(cl.op) {
			return fmt.Sprintf("%v: the server does not offer %s for %s", errNoEquivalent, forgeTool(cl.op), cl.op)
		}
	}
	return ""
}

func (s *forgeSurface) Call(ctx context.Context, op string, args map[string]any, out any) (sample, error) {
	tool, fargs, err := forgeCall(op, args)
	if err != nil {
		return sample{}, errs.New(errs.InvalidArgument, "%s %s: %v", s.Name(), op, err)
	}
	start := time.Now()
	raw, err := s.raw.rpc(ctx, "tools/call", map[string]any{"name": tool, "arguments": fargs})
	smp := sample{wall: time.Since(start)}
	if err != nil {
		return smp, callError(ctx, s.Name(), tool, err)
	}
	body, err := forgeBody(raw)
	if err != nil {
		return smp, errs.Wrap(errs.Internal, err, "%s %s: %v", s.Name(), tool, err)
	}
	if op == "repository_register" {
		p, _ := args["path"].(string)
		s.mu.Lock()
		s.root = p
		s.mu.Unlock()
	}
	if err := checkForge(op, args, body, s.readFixture); err != nil {
		return smp, errs.New(errs.Internal, "%s %s (for %s): %v", s.Name(), tool, op, err)
	}
	smp.server, smp.seg = forgeLatency(body)
	if out == nil {
		return smp, nil
	}
	if op == "repository_register" {
		var r struct {
			Repository struct {
				RepoID string `json:"repoId"`
			} `json:"repository"`
		}
		_ = json.Unmarshal(body, &r) // checkForge decoded it already
		body, _ = json.Marshal(map[string]string{"repo_id": r.Repository.RepoID})
	}
	if err := json.Unmarshal(body, out); err != nil {
		return smp, errs.Wrap(errs.Internal, err, "%s %s: decode result: %v", s.Name(), tool, err)
	}
	return smp, nil
}

// forgeBody returns the JSON of a tools/call result: the text block (Forge
// puts the structured content there), else the structured content. An
// error result becomes an error naming Forge's code and message.
func forgeBody(raw json.RawMessage) ([]byte, error) {
	b, isError, err := rawToolBody(raw)
	if err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	if isError {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && (e.Error.Code != "" || e.Error.Message != "") {
			return nil, fmt.Errorf("forge answered an error: %s: %s", e.Error.Code, e.Error.Message)
		}
		return nil, fmt.Errorf("forge answered an error: %.300s", raw)
	}
	if len(b) == 0 || string(b) == "null" {
		return nil, errors.New("the result has no content")
	}
	return b, nil
}

// readFixture reads the registered fixture's slash-separated rel.
func (s *forgeSurface) readFixture(rel string) ([]byte, error) {
	s.mu.Lock()
	root := s.root
	s.mu.Unlock()
	if root == "" {
		return nil, errors.New("no repository registered")
	}
	return os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
}

// forgeAnswer is the parts of Forge's answers the checks read: a tool's
// own result, a batch (steps) or lanes (readLanes) of such results.
type forgeAnswer struct {
	OK         *bool `json:"ok"`
	Repository *struct {
		RepoID string `json:"repoId"`
	} `json:"repository"`
	Steps     []forgeStep `json:"steps"`
	ReadLanes []forgeStep `json:"readLanes"`
}

type forgeStep struct {
	Kind    string          `json:"kind"`
	OK      bool            `json:"ok"`
	Summary string          `json:"summary"`
	Result  json.RawMessage `json:"result"`
}

// checkForge checks that Forge's answer body to harnessd's op (mapped from
// args by forgeCall) shows the work done; read reads a fixture file after
// the call (the patch's effect, the read's bytes).
func checkForge(op string, args map[string]any, body []byte, read func(rel string) ([]byte, error)) error {
	a, err := normArgs(args)
	if err != nil {
		return err
	}
	var ans forgeAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	switch op {
	case "repository_register":
		if ans.Repository == nil || ans.Repository.RepoID == "" {
			return fmt.Errorf("no repository.repoId in %.200s", body)
		}
		return nil
	case "git_status":
		return checkSteps(op, []any{map[string]any{"kind": op, "args": a}}, ans.OK, ans.Steps, read)
	case "batch":
		steps, _ := a["steps"].([]any)
		return checkSteps(op, steps, ans.OK, ans.Steps, read)
	case "read_lanes":
		lanes, _ := a["lanes"].([]any)
		return checkSteps(op, lanes, ans.OK, ans.ReadLanes, read)
	case opListDir:
		if op, a, err = lsCommand(a); err != nil {
			return err
		}
	}
	return checkKind(op, a, body, read)
}

// checkSteps checks a batch or lanes answer: ok, one answered step per
// asked step, each ok and showing its work.
func checkSteps(op string, asked []any, ok *bool, got []forgeStep, read func(string) ([]byte, error)) error {
	if ok == nil || !*ok {
		return fmt.Errorf("%s: the answer is not ok", op)
	}
	if len(got) != len(asked) {
		return fmt.Errorf("%s: %d steps answered, %d asked", op, len(got), len(asked))
	}
	for i, x := range asked {
		st, _ := x.(map[string]any)
		kind, _ := st["kind"].(string)
		sargs, _ := st["args"].(map[string]any)
		if !got[i].OK {
			return fmt.Errorf("%s step %d (%s) failed: %s", op, i, kind, got[i].Summary)
		}
		if err := checkKind(kind, sargs, got[i].Result, read); err != nil {
			return fmt.Errorf("%s step %d: %w", op, i, err)
		}
	}
	return nil
}

// checkKind checks one operation's result (a dedicated tool's answer or a
// step's result: the same shapes).
func checkKind(op string, a map[string]any, res []byte, read func(string) ([]byte, error)) error {
	switch op {
	case "read_file":
		var r struct {
			SHA256  string `json:"sha256"`
			Content string `json:"content"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return fmt.Errorf("read_file: %w", err)
		}
		p, _ := a["path"].(string)
		want, err := read(p)
		if err != nil {
			return fmt.Errorf("read_file: read %s: %w", p, err)
		}
		sum := sha256.Sum256(want)
		if r.SHA256 != hex.EncodeToString(sum[:]) || r.Content == "" {
			return fmt.Errorf("read_file %s: the answer (sha256 %q, %d bytes of content) is not the file", p, r.SHA256, len(r.Content))
		}
	case "search":
		var r struct {
			Results []struct {
				Path string `json:"path"`
				Text string `json:"text"`
			} `json:"results"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return fmt.Errorf("search: %w", err)
		}
		q, _ := a["query"].(string)
		if !slices.ContainsFunc(r.Results, func(m struct {
			Path string `json:"path"`
			Text string `json:"text"`
		}) bool {
			return strings.Contains(m.Text, q)
		}) {
			return fmt.Errorf("search %q: no match in the answer (%d results)", q, len(r.Results))
		}
	case "git_status":
		var r struct {
			Status struct {
				Head      string `json:"head"`
				Porcelain string `json:"porcelain"`
			} `json:"status"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return fmt.Errorf("git_status: %w", err)
		}
		if r.Status.Head == "" || !strings.HasPrefix(r.Status.Porcelain, "## ") {
			return fmt.Errorf("git_status: no head or branch line in the answer: %.200s", res)
		}
	case "git_diff":
		// Every case with a diff makes README.md dirty first.
		var r struct {
			Diff struct {
				NameOnly []string `json:"nameOnly"`
				Patch    string   `json:"patch"`
			} `json:"diff"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return fmt.Errorf("git_diff: %w", err)
		}
		if !slices.Contains(r.Diff.NameOnly, ReadmePath) || !strings.Contains(r.Diff.Patch, "+++ b/"+ReadmePath) {
			return fmt.Errorf("git_diff: the dirty %s is not in the answer: %.200s", ReadmePath, res)
		}
	case "run_command":
		var r struct {
			OK       bool `json:"ok"`
			ExitCode *int `json:"exitCode"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return fmt.Errorf("run_command: %w", err)
		}
		if !r.OK || r.ExitCode == nil || *r.ExitCode != 0 {
			return fmt.Errorf("run_command %v: not run to exit 0: %.200s", a["argv"], res)
		}
	case opApplyPatch:
		var r struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return fmt.Errorf("apply_patch: %w", err)
		}
		if r.Status != "applied" {
			return fmt.Errorf("apply_patch: status %q, want applied", r.Status)
		}
		ops, _ := a["operations"].([]any)
		for _, x := range ops {
			o, _ := x.(map[string]any)
			p, _ := o["path"].(string)
			oldText, _ := o["old_text"].(string)
			newText, _ := o["new_text"].(string)
			b, err := read(p)
			if err != nil {
				return fmt.Errorf("apply_patch: read %s: %w", p, err)
			}
			if !bytes.Contains(b, []byte(newText)) || bytes.Contains(b, []byte(oldText)) {
				return fmt.Errorf("apply_patch: %s does not have the new text after the call", p)
			}
		}
	default:
		return fmt.Errorf("%w: %q", errNoEquivalent, op)
	}
	return nil
}

// forgeLatency reads the server time Forge reported (responseMeta) and,
// for the Thin Harness operations, its latency segments.
func forgeLatency(body []byte) (float64, [numSegments]float64) {
	var r struct {
		Meta struct {
			ServerMs float64 `json:"serverDurationMs"`
		} `json:"responseMeta"`
		Latency struct {
			RoutingMs   float64 `json:"routingMs"`
			PolicyMs    float64 `json:"policyMs"`
			SnapshotMs  float64 `json:"snapshotMs"`
			ExecutionMs float64 `json:"executionMs"`
			ReceiptMs   float64 `json:"receiptMs"`
		} `json:"latency"`
	}
	var seg [numSegments]float64
	if json.Unmarshal(body, &r) != nil {
		return 0, seg
	}
	l := r.Latency
	seg[0], seg[1], seg[2], seg[3], seg[4] = l.RoutingMs, l.PolicyMs, l.SnapshotMs, l.ExecutionMs, l.ReceiptMs
	return r.Meta.ServerMs, seg
}

// Close stops Forge and removes its HOME and what it wrote into the
// fixture (.ai/ and .forge/), so the other surfaces see the fixture as it
// was.
func (s *forgeSurface) Close() error {
	err := s.raw.Close()
	s.mu.Lock()
	root := s.root
	s.mu.Unlock()
	var errList []error
	if root != "" {
		errList = append(errList, os.RemoveAll(filepath.Join(root, ".ai")), os.RemoveAll(filepath.Join(root, ".forge")))
	}
	return errors.Join(append(errList, err, os.RemoveAll(s.home))...)
}
