package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFSCallMapsReadAndList(t *testing.T) {
	it := iter{repoID: "/r", request: func() string { return "req-1" }}
	byName := map[string]caseDef{}
	for _, c := range allCases() {
		byName[c.name] = c
	}
	root := filepath.FromSlash("/fx/root")
	tool, a, err := fsCall("read_file", byName[CaseSmallFileRead].steps[0].args(it), root, "read_text_file")
	if got, _ := json.Marshal(a); err != nil || tool != "read_text_file" || string(got) != `{"path":"/fx/root/README.md"}` {
		t.Errorf("read -> %s %s, %v", tool, got, err)
	}
	tool, a, err = fsCall("read_file", map[string]any{"repo_id": "/r", "path": "src/app.go"}, root, "read_file")
	if got, _ := json.Marshal(a); err != nil || tool != "read_file" || string(got) != `{"path":"/fx/root/src/app.go"}` {
		t.Errorf("read on an older server -> %s %s, %v", tool, got, err)
	}
	tool, a, err = fsCall(opListDir, byName[CaseListDir].steps[0].args(it), root, "read_text_file")
	if got, _ := json.Marshal(a); err != nil || tool != "list_directory" || string(got) != `{"path":"/fx/root"}` {
		t.Errorf("list -> %s %s, %v", tool, got, err)
	}
	tool, a, err = fsCall(opListDir, map[string]any{"repo_id": "/r", "path": "src"}, root, "")
	if got, _ := json.Marshal(a); err != nil || tool != "list_directory" || string(got) != `{"path":"/fx/root/src"}` {
		t.Errorf("list src -> %s %s, %v", tool, got, err)
	}
}

func TestFSCallNoEquivalent(t *testing.T) {
	for _, tt := range []struct {
		op   string
		args map[string]any
		want string
	}{
		{"search", map[string]any{"repo_id": "r", "query": "x"}, `"search"`},
		{"git_status", map[string]any{"repo_id": "r"}, `"git_status"`},
		{"batch", map[string]any{"repo_id": "r", "steps": []any{}}, `"batch"`},
		{"read_file", map[string]any{"repo_id": "r", "path": "a", "offset_line": 3}, "read_file argument offset_line"},
		{"read_file", map[string]any{"repo_id": "r", "path": "a"}, "neither read_text_file nor read_file"},
		{"run_command", map[string]any{"repo_id": "r", "argv": []string{"ls", "-A", "-p", "."}}, `"run_command"`},
		{opListDir, map[string]any{"repo_id": "r", "path": ".", "max_entries": 5}, "list_dir argument max_entries"},
	} {
		readTool := "read_text_file"
		if strings.Contains(tt.want, "neither") {
			readTool = ""
		}
		_, _, err := fsCall(tt.op, tt.args, "/fx", readTool)
		if !errors.Is(err, errNoEquivalentFS) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %v: err = %v, want errNoEquivalentFS naming %q", tt.op, tt.args, err, tt.want)
		}
	}
	for _, p := range []string{"../etc/passwd", "/etc/passwd", ""} {
		_, _, err := fsCall("read_file", map[string]any{"path": p}, "/fx", "read_text_file")
		if err == nil || errors.Is(err, errNoEquivalentFS) {
			t.Errorf("path %q: err = %v, want a bad path", p, err)
		}
	}
}

func TestFSNoEquivalentPerCase(t *testing.T) {
	s := &fsSurface{raw: &rawSurface{tools: map[string]bool{"read_text_file": true, "list_directory": true}}, root: "/fx"}
	for _, c := range allCases() {
		why := s.noEquivalent(c)
		switch c.name {
		case CaseSmallFileRead, CaseListDir:
			if why != "" {
				t.Errorf("%s: skipped (%s), want an equivalent", c.name, why)
			}
		default:
			if !strings.HasPrefix(why, "no equivalent in server-filesystem") {
				t.Errorf("%s: %q, want no equivalent in server-filesystem", c.name, why)
			}
		}
		if noEquivalent(s, c) != why {
			t.Errorf("%s: noEquivalent does not go to the surface's", c.name)
		}
	}
	// A server without list_directory has no listing.
	s.raw.tools = map[string]bool{"read_file": true}
	for _, c := range allCases() {
		if c.name == CaseListDir && !strings.Contains(s.noEquivalent(c), "does not offer a tool for list_dir") {
			t.Errorf("list_dir without list_directory: %q", s.noEquivalent(c))
		}
		if c.name == CaseSmallFileRead && s.noEquivalent(c) != "" {
			t.Errorf("read on a server with read_file only: %q", s.noEquivalent(c))
		}
	}
}

func TestFSText(t *testing.T) {
	got, err := fsText(json.RawMessage(`{"content":[{"type":"text","text":"[FILE] a\n[DIR] b"}],"structuredContent":{"content":"x"}}`))
	if err != nil || got != "[FILE] a\n[DIR] b" {
		t.Errorf("text = %q, %v", got, err)
	}
	_, err = fsText(json.RawMessage(`{"content":[{"type":"text","text":"Access denied - path outside allowed directories"}],"isError":true}`))
	if err == nil || !strings.Contains(err.Error(), "Access denied") {
		t.Errorf("error result: %v", err)
	}
}

func TestCheckFS(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# widgets\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	readArgs := map[string]any{"path": filepath.Join(dir, "README.md")}
	listArgs := map[string]any{"path": dir}
	for _, tt := range []struct {
		name, op string
		args     map[string]any
		text     string
		want     string // "" = passes
	}{
		{"read", "read_file", readArgs, "# widgets\n", ""},
		{"read of other text", "read_file", readArgs, "# widget\n", "not the file's"},
		{"read of a missing file", "read_file", map[string]any{"path": filepath.Join(dir, "nope")}, "", "no such file"},
		{"list", opListDir, listArgs, "[FILE] README.md\n[DIR] src", ""},
		{"list in another order", opListDir, listArgs, "[DIR] src\n[FILE] README.md\n", ""},
		{"list short", opListDir, listArgs, "[FILE] README.md", "the directory has"},
		{"list with a wrong kind", opListDir, listArgs, "[FILE] README.md\n[FILE] src", "the directory has"},
		{"list with an extra entry", opListDir, listArgs, "[FILE] README.md\n[DIR] src\n[FILE] x", "the directory has"},
		{"other op", "search", nil, "", "no equivalent in server-filesystem"},
	} {
		err := checkFS(tt.op, tt.args, tt.text)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestFSSkippedWhenAbsent(t *testing.T) {
	t.Setenv("FS_MCP_JS", "/nonexistent/index.js")
	out, errOut, code := run(t, "--iterations", "1", "--warmup", "0", "--surfaces", "inproc,fs-mcp-stdio-raw", "--cases", "small_file_read,list_dir", "--json")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, ExitOK, errOut)
	}
	rep := validate(t, schema(t), []byte(out))
	if len(rep.Results) != 4 {
		t.Fatalf("results = %+v, want 4", rep.Results)
	}
	for _, r := range rep.Results[2:] {
		if r.Surface != SurfaceFSMCPStdioRaw || r.Error != "" || !strings.HasPrefix(r.Skipped, fsSkipPrefix) || !strings.Contains(r.Skipped, "/nonexistent/index.js is not a file") {
			t.Errorf("%s/%s: skipped %q, error %q; want skipped naming the missing file", r.Case, r.Surface, r.Skipped, r.Error)
		}
	}
	if rep.Settings.FS != nil {
		t.Errorf("settings.fs_server = %+v without a server", rep.Settings.FS)
	}
}

func TestFSSkippedWithoutNode(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	fi := locateFS(t.Context(), "", &bytes.Buffer{})
	if fi.skip != fsSkipPrefix+"node not found in PATH" {
		t.Errorf("skip = %q", fi.skip)
	}
	if _, err := openFS(fi); !errors.As(err, new(skipSurface)) {
		t.Errorf("openFS = %v, want a skip", err)
	}
}

func TestFSUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--surfaces", "fs-mcp-stdio-raw", "--fs-server", "/nonexistent/index.js"}, "--fs-server \"/nonexistent/index.js\" is not a file"},
		{[]string{"--load", "--surfaces", "fs-mcp-stdio-raw"}, "--load does not drive fs-mcp-stdio-raw"},
	} {
		_, errOut, code := run(t, tt.args...)
		if code != ExitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, errOut, ExitUsage, tt.want)
		}
	}
}

func TestSideBySideWithFS(t *testing.T) {
	var results []Result
	for i, s := range []string{SurfaceInproc, SurfaceMCPStdioRaw, SurfaceFSMCPStdioRaw} {
		for _, c := range []string{CaseSmallFileRead, CaseListDir} {
			r := Result{Case: c, Surface: s, Calls: 1, Floor: "f"}
			r.summarize([]sample{{wall: time.Duration(i+1) * 100 * time.Microsecond}}, []float64{0.006})
			results = append(results, r)
		}
	}
	results = append(results, Result{Case: CaseGitStatus, Surface: SurfaceFSMCPStdioRaw, Floor: "f", Skipped: `no equivalent in server-filesystem: "git_status"`})
	rep := Report{SchemaVersion: SchemaVersion, Machine: machineInfo(), GoVersion: "go1", Commit: "c", StartedAt: time.Now().UTC(),
		Settings: Settings{Surfaces: []string{SurfaceInproc, SurfaceMCPStdioRaw, SurfaceFSMCPStdioRaw},
			FS: &FSInfo{Path: "/p/dist/index.js", Version: fsVersion, ReadTool: "read_text_file"}},
		Results: results, SideBySide: sideBySide(results)}
	var buf bytes.Buffer
	if err := writeJSON(&buf, &rep); err != nil {
		t.Fatal(err)
	}
	got := validate(t, schema(t), buf.Bytes())
	if len(got.SideBySide) != 2 || *got.SideBySide[1].FSMs != 0.3 || *got.SideBySide[1].FSOverHarnessd != 1.5 || got.SideBySide[1].ForgeMs != nil {
		t.Errorf("side_by_side = %+v", got.SideBySide)
	}
	var tbl bytes.Buffer
	if err := writeTable(&tbl, &rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SERVER-FILESYSTEM", "FS/HARNESSD", "1.5x", "server-filesystem: /p/dist/index.js " + fsVersion + " (read: read_text_file)",
		`skipped (no equivalent in server-filesystem: "git_status")`} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tbl.String())
		}
	}
}

// TestFSSurface drives a real server-filesystem when one is installed
// ($FS_MCP_JS or the bench's install under $PEER_DIR; the test installs
// nothing); skipped otherwise and with -short.
func TestFSSurface(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server-filesystem")
	}
	js := os.Getenv("FS_MCP_JS")
	if js == "" {
		peer := os.Getenv("PEER_DIR")
		if peer == "" {
			peer = "/tmp/peer"
		}
		js = filepath.Join(peer, filepath.FromSlash(fsJSRel))
	}
	if !fileExists(js) {
		t.Skip("server-filesystem not installed at " + js)
	}
	out, errOut, code := run(t, "--iterations", "2", "--warmup", "1", "--surfaces", "inproc,fs-mcp-stdio-raw", "--fs-server", js, "--json")
	if code != ExitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s\n%s", code, ExitOK, errOut, out)
	}
	rep := validate(t, schema(t), []byte(out))
	if rep.Settings.FS == nil || rep.Settings.FS.Version == "" || rep.Settings.FS.ReadTool == "" {
		t.Errorf("settings.fs_server = %+v", rep.Settings.FS)
	}
	ran := 0
	for _, r := range rep.Results {
		if r.Surface != SurfaceFSMCPStdioRaw {
			continue
		}
		switch r.Case {
		case CaseSmallFileRead, CaseListDir:
			ran++
			if r.Error != "" || r.Skipped != "" || r.TotalMs == nil || r.Calls != 1 {
				t.Errorf("%s: error %q, skipped %q, calls %d", r.Case, r.Error, r.Skipped, r.Calls)
			}
		default:
			if !strings.HasPrefix(r.Skipped, "no equivalent in server-filesystem") {
				t.Errorf("%s: skipped %q, error %q; want no equivalent", r.Case, r.Skipped, r.Error)
			}
		}
	}
	if ran != 2 {
		t.Errorf("%d server-filesystem cases ran, want 2", ran)
	}
}
