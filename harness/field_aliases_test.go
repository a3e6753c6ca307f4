package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// aliasCall runs op with args (a JSON object with "$repo" standing for the
// repo_id) through CallOp and returns the result as a JSON object.
func aliasCall(t *testing.T, h *harness.Harness, id, op, args string) (map[string]any, error) {
	t.Helper()
	out, err := h.CallOp(context.Background(), op, json.RawMessage(strings.ReplaceAll(args, "$repo", id)))
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m, nil
}

func readRepoFile(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFirstGuessesWork makes the first guesses agents make with other
// tools' field names (Claude Code, Codex, Gemini CLI, OpenCode) through
// CallOp, the path every surface takes, and asserts what each did: the
// file changed, the window of lines, the matches, the command's output.
// A shell string where argv is expected is answered with the field to use.
func TestFirstGuessesWork(t *testing.T) {
	h := open(t)
	root := testutil.Repo(t, map[string]string{
		"src/a.go":  "package a\n\nfunc A() int { return 1 }\n",
		"src/b.go":  "package a\n\n// needle in go\nfunc B() {}\n",
		"notes.md":  "needle in markdown\n",
		"lines.txt": "one\ntwo\nthree\nfour\nfive\n",
		"many.txt":  "x x x\n",
	})
	reg, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	id := reg.ID
	tests := []struct {
		name, op, args string
		check          func(t *testing.T, out map[string]any)
		errHas         []string // instead of check: INVALID_ARGUMENT saying each
	}{
		{name: "read_file file_path", op: "read_file",
			args: `{"repo_id":"$repo","file_path":"src/a.go"}`,
			check: func(t *testing.T, out map[string]any) {
				if out["content"] != "package a\n\nfunc A() int { return 1 }\n" {
					t.Errorf("content %q", out["content"])
				}
			}},
		{name: "read_file offset and limit", op: "read_file",
			args: `{"repo_id":"$repo","file_path":"lines.txt","offset":2,"limit":2}`,
			check: func(t *testing.T, out map[string]any) {
				if out["content"] != "two\nthree\n" || out["start_line"] != 2.0 || out["next_offset_line"] != 4.0 {
					t.Errorf("window %q from %v, next %v; want two, three from 2, next 4", out["content"], out["start_line"], out["next_offset_line"])
				}
			}},
		{name: "read_file camelCase and repository", op: "read_file",
			args: `{"repository":"$repo","filePath":"lines.txt","startLine":5}`,
			check: func(t *testing.T, out map[string]any) {
				if out["content"] != "five\n" {
					t.Errorf("content %q, want five", out["content"])
				}
			}},
		{name: "search pattern and include", op: "search",
			args: `{"repo_id":"$repo","pattern":"needle","include":"*.go"}`,
			check: func(t *testing.T, out map[string]any) {
				m, _ := out["matches"].([]any)
				if len(m) != 1 || m[0].(map[string]any)["path"] != "src/b.go" {
					t.Errorf("matches %v, want src/b.go only", out["matches"])
				}
			}},
		{name: "apply_patch Edit-style", op: "apply_patch",
			args: `{"repo_id":"$repo","request_id":"edit-1","file_path":"src/a.go","old_string":"return 1","new_string":"return 2"}`,
			check: func(t *testing.T, out map[string]any) {
				if got := readRepoFile(t, root, "src/a.go"); !strings.Contains(got, "return 2") {
					t.Errorf("src/a.go = %q, want return 2", got)
				}
			}},
		{name: "apply_patch Edit-style replace_all", op: "apply_patch",
			args: `{"repo_id":"$repo","request_id":"edit-2","file_path":"many.txt","old_string":"x","new_string":"y","replace_all":true}`,
			check: func(t *testing.T, out map[string]any) {
				if got := readRepoFile(t, root, "many.txt"); got != "y y y\n" {
					t.Errorf("many.txt = %q, want y y y", got)
				}
			}},
		{name: "apply_patch Write-style", op: "apply_patch",
			args: `{"repo_id":"$repo","request_id":"write-1","file_path":"src/new.go","content":"package a\n\nconst N = 3\n"}`,
			check: func(t *testing.T, out map[string]any) {
				if got := readRepoFile(t, root, "src/new.go"); got != "package a\n\nconst N = 3\n" {
					t.Errorf("src/new.go = %q", got)
				}
			}},
		{name: "apply_patch OpenCode camelCase", op: "apply_patch",
			args: `{"repo_id":"$repo","request_id":"edit-3","filePath":"src/new.go","oldString":"N = 3","newString":"N = 4"}`,
			check: func(t *testing.T, out map[string]any) {
				if got := readRepoFile(t, root, "src/new.go"); !strings.Contains(got, "N = 4") {
					t.Errorf("src/new.go = %q, want N = 4", got)
				}
			}},
		{name: "apply_patch operations with old_string", op: "apply_patch",
			args: `{"repo_id":"$repo","request_id":"edit-4","operations":[{"op":"replace","file_path":"lines.txt","old_string":"four","new_string":"FOUR"}]}`,
			check: func(t *testing.T, out map[string]any) {
				if got := readRepoFile(t, root, "lines.txt"); got != "one\ntwo\nthree\nFOUR\nfive\n" {
					t.Errorf("lines.txt = %q", got)
				}
			}},
		{name: "run_command a plain command string", op: "run_command",
			args: `{"repo_id":"$repo","command":"cat lines.txt"}`,
			check: func(t *testing.T, out map[string]any) {
				if s := out["stdout"].(map[string]any)["text"]; s != "one\ntwo\nthree\nFOUR\nfive\n" {
					t.Errorf("stdout %q", s)
				}
			}},
		{name: "run_command Codex's list command, workdir, timeout_seconds", op: "run_command",
			args: `{"repo_id":"$repo","command":["cat","b.go"],"workdir":"src","timeout_seconds":5}`,
			check: func(t *testing.T, out map[string]any) {
				if s, _ := out["stdout"].(map[string]any)["text"].(string); !strings.Contains(s, "needle in go") {
					t.Errorf("stdout %q, want src/b.go", s)
				}
			}},
		{name: "run_command command and args, working_directory", op: "run_command",
			args: `{"repo_id":"$repo","command":"git","args":["ls-files","--others","--exclude-standard"],"working_directory":"src"}`,
			check: func(t *testing.T, out map[string]any) {
				if s := out["stdout"].(map[string]any)["text"]; s != "new.go\n" {
					t.Errorf("stdout %q, want new.go", s)
				}
			}},
		{name: "run_command shell syntax names argv", op: "run_command",
			args:   `{"repo_id":"$repo","command":"git log --oneline | head -1"}`,
			errHas: []string{"is shell syntax (|)", "pass argv as a list", `argv: ["bash","-c","git log --oneline | head -1"]`}},
		{name: "git_stage repository_id and files", op: "git_stage",
			args: `{"repository_id":"$repo","request_id":"stage-1","files":["src/new.go"]}`,
			check: func(t *testing.T, out map[string]any) {
				if got := testutil.Git(t, root, "diff", "--cached", "--name-only"); strings.TrimSpace(got) != "src/new.go" {
					t.Errorf("staged %q, want src/new.go", got)
				}
			}},
		{name: "git_diff cached and path", op: "git_diff",
			args: `{"repo_id":"$repo","cached":true,"path":"src/new.go"}`,
			check: func(t *testing.T, out map[string]any) {
				if p, _ := out["patch"].(string); !strings.Contains(p, "+const N = 4") || strings.Contains(p, "lines.txt") {
					t.Errorf("patch %q, want the staged src/new.go only", p)
				}
			}},
		{name: "git_commit msg and one file", op: "git_commit",
			args: `{"repo":"$repo","request_id":"commit-1","msg":"add N","files":"src/new.go"}`,
			check: func(t *testing.T, out map[string]any) {
				if got := testutil.Git(t, root, "log", "-1", "--format=%s"); strings.TrimSpace(got) != "add N" {
					t.Errorf("HEAD subject %q, want add N", got)
				}
				if got := testutil.Git(t, root, "show", "--name-only", "--format=", "HEAD"); strings.TrimSpace(got) != "src/new.go" {
					t.Errorf("HEAD changed %q, want src/new.go", got)
				}
			}},
		{name: "git_diff commit names the revision", op: "git_diff",
			args: `{"repo_id":"$repo","commit":"HEAD~1","files":["src/new.go"]}`,
			check: func(t *testing.T, out map[string]any) {
				if p, _ := out["patch"].(string); !strings.Contains(p, "+const N = 4") {
					t.Errorf("patch %q, want src/new.go since HEAD~1", p)
				}
			}},
		{name: "a batch step's own arguments", op: "batch",
			args: `{"repo_id":"$repo","steps":[{"kind":"read_file","args":{"file_path":"lines.txt","offset":5,"limit":1}},{"kind":"run_command","args":{"command":"git rev-parse HEAD"}}]}`,
			check: func(t *testing.T, out map[string]any) {
				steps, _ := out["steps"].([]any)
				if out["ok"] != true || len(steps) != 2 {
					t.Fatalf("batch %v", out)
				}
				if r, _ := steps[0].(map[string]any)["result"].(map[string]any); r["content"] != "five\n" {
					t.Errorf("step 0 read %v, want five", r["content"])
				}
				head := strings.TrimSpace(testutil.Git(t, root, "rev-parse", "HEAD"))
				if r, _ := steps[1].(map[string]any)["result"].(map[string]any); r["stdout"].(map[string]any)["text"] != head+"\n" {
					t.Errorf("step 1 printed %v, want HEAD %s", r["stdout"], head)
				}
			}},
		{name: "a guess that is no alias names the field", op: "run_command",
			args:   `{"repo_id":"$repo","argv":["true"],"timeout":5000}`,
			errHas: []string{`unknown field "timeout": did you mean "timeout_ms"?`}},
	}
	guesses := 0
	for _, tt := range tests {
		ok := t.Run(tt.name, func(t *testing.T) {
			out, err := aliasCall(t, h, id, tt.op, tt.args)
			if tt.errHas != nil {
				e := errs.From(err)
				if err == nil || e.Code != errs.InvalidArgument {
					t.Fatalf("got %v, %v; want INVALID_ARGUMENT", out, err)
				}
				for _, w := range tt.errHas {
					if !strings.Contains(e.Message, w) {
						t.Errorf("message %q does not say %q", e.Message, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, out)
		})
		if !ok {
			t.FailNow() // later guesses build on the earlier ones' effects
		}
		guesses++
	}
	if guesses < 13 {
		t.Errorf("%d first guesses, want at least 13", guesses)
	}
}

// A write made with aliases and its retry spelled canonically (same
// request_id) are one request: the retry replays instead of failing
// REQUEST_CONFLICT, and the file changes once.
func TestAliasedWriteRetriedCanonicallyReplays(t *testing.T) {
	h := open(t)
	root := testutil.Repo(t, map[string]string{"a.txt": "one\n"})
	reg, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	first, err := aliasCall(t, h, reg.ID, "apply_patch",
		`{"repo_id":"$repo","request_id":"same","file_path":"a.txt","old_string":"one","new_string":"one\ntwo"}`)
	if err != nil {
		t.Fatal(err)
	}
	if first["replayed"] != false {
		t.Fatalf("first call replayed: %v", first)
	}
	retry, err := aliasCall(t, h, reg.ID, "apply_patch",
		`{"repo_id":"$repo","request_id":"same","operations":[{"op":"replace","path":"a.txt","old_text":"one","new_text":"one\ntwo"}]}`)
	if err != nil {
		t.Fatalf("canonical retry: %v", err)
	}
	if retry["replayed"] != true || retry["receipt_id"] != first["receipt_id"] {
		t.Errorf("retry replayed %v with receipt %v, want the first's %v", retry["replayed"], retry["receipt_id"], first["receipt_id"])
	}
	if got := readRepoFile(t, root, "a.txt"); got != "one\ntwo\n" {
		t.Errorf("a.txt = %q, want the edit applied once", got)
	}
	// A different input under the same request_id is still refused.
	_, err = aliasCall(t, h, reg.ID, "apply_patch",
		`{"repo_id":"$repo","request_id":"same","file_path":"a.txt","old_string":"two","new_string":"three"}`)
	if errs.CodeOf(err) != errs.RequestConflict {
		t.Errorf("another input under the same request_id: %v, want REQUEST_CONFLICT", err)
	}
}
