package op

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// readArgs has read_file's input shape (harness/ops/read imports this
// package, so its type cannot be used here).
type readArgs struct {
	RepoID                  string `json:"repo_id"`
	Path                    string `json:"path"`
	OffsetLine              int    `json:"offset_line,omitempty"`
	MaxLines                int    `json:"max_lines,omitempty"`
	MaxBytes                int    `json:"max_bytes,omitempty"`
	IncludeLatencyBreakdown bool   `json:"include_latency_breakdown,omitempty"`
	Approval
}

func readOp() Op {
	return Def(Spec[readArgs]{Name: "read_file", ReadOnly: true,
		Prepare: func(context.Context, *Call, readArgs) (*Plan, error) { return &Plan{}, nil }})
}

func decoded(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A call with no alias costs the rewriting no allocation.
func TestAliasesAllocateNothingWithoutAnAlias(t *testing.T) {
	o := readOp()
	inst := decoded(t, `{"repo_id":"repo_0123","path":"internal/readfile/readfile.go","offset_line":40,"max_lines":120,"run_id":"run_1"}`)
	allocs := testing.AllocsPerRun(100, func() {
		if changed, err := o.rewriteAliases(inst, o.InputSchema); changed || err != nil {
			t.Fatal(changed, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per rewrite of an input with no alias, want 0", allocs)
	}
}

func BenchmarkAliasesNone(b *testing.B) {
	o := readOp()
	inst := decoded(b, `{"repo_id":"repo_0123","path":"internal/readfile/readfile.go","offset_line":40,"max_lines":120,"run_id":"run_1"}`)
	b.ReportAllocs()
	for b.Loop() {
		if changed, err := o.rewriteAliases(inst, o.InputSchema); changed || err != nil {
			b.Fatal(changed, err)
		}
	}
}

func BenchmarkAliasesRewrite(b *testing.B) {
	o := readOp()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		inst := decoded(b, `{"repo_id":"repo_0123","file_path":"internal/readfile/readfile.go","offset":40,"limit":120}`)
		b.StartTimer()
		if changed, err := o.rewriteAliases(inst, o.InputSchema); !changed || err != nil {
			b.Fatal(changed, err)
		}
	}
}

// BenchmarkDecodeReadFile is the whole decode of a call with no alias (the
// hook's share is BenchmarkAliasesNone).
func BenchmarkDecodeReadFile(b *testing.B) {
	o := readOp()
	raw := json.RawMessage(`{"repo_id":"repo_0123","path":"internal/readfile/readfile.go","offset_line":40,"max_lines":120}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := o.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		src  string
		argv []string
		why  string
	}{
		{src: "go test ./... -run TestX", argv: []string{"go", "test", "./...", "-run", "TestX"}},
		{src: "  git   status  ", argv: []string{"git", "status"}},
		{src: `echo 'a  b' "c d" e\ f`, argv: []string{"echo", "a  b", "c d", "e f"}},
		{src: `printf "x\$y\\z\n"`, argv: []string{"printf", `x$y\z\n`}},
		{src: `go test -run 'Test.*'`, argv: []string{"go", "test", "-run", "Test.*"}},
		{src: `ls a\*b`, argv: []string{"ls", "a*b"}},
		{src: "git log # the last ones", argv: []string{"git", "log"}},
		{src: "find . -name x -exec rm {} +", argv: []string{"find", ".", "-name", "x", "-exec", "rm", "{}", "+"}},
		{src: "a=b", why: "a variable assignment"},
		{src: "ls *.go", why: "a glob"},
		{src: "ls src/[ab].go", why: "a glob"},
		{src: "echo {a,b}", why: "a brace expansion"},
		{src: "echo {1..3}", why: "a brace expansion"},
		{src: "cd ~", why: "a ~ expansion"},
		{src: "echo $HOME", why: "an expansion"},
		{src: "echo ${HOME}", why: "an expansion"},
		{src: "echo `id`", why: "an expansion"},
		{src: `echo "$(id)"`, why: "an expansion"},
		{src: "echo $'\\x41'", why: "$'...' quoting"},
		{src: "cat < /etc/passwd", why: "a redirection"},
		{src: "sleep 1 &", why: "shell syntax (&)"},
		{src: "! true", why: "shell syntax (!)"},
		{src: "a || b", why: "shell syntax (||)"},
		{src: "a | b", why: "shell syntax (|)"},
		{src: "a\nb", why: "several commands"},
		{src: "if true; then x; fi", why: "a compound command"},
		{src: "(ls)", why: "a compound command"},
		{src: "export A=1", why: "a compound command"},
		{src: "ls @(a|b)", why: "a glob"},
		{src: "echo 'unterminated", why: "not valid shell"},
		{src: "", why: "empty"},
	} {
		argv, why := splitCommand(tc.src)
		if tc.why != "" {
			if why == "" || !strings.Contains(why, tc.why) {
				t.Errorf("splitCommand(%q) = %q, %q; want it refused: %q", tc.src, argv, why, tc.why)
			}
			continue
		}
		if why != "" || !slices.Equal(argv, tc.argv) {
			t.Errorf("splitCommand(%q) = %q, %q; want %q", tc.src, argv, why, tc.argv)
		}
	}
}

func TestSnake(t *testing.T) {
	for in, want := range map[string]string{
		"filePath": "file_path", "oldString": "old_string", "replaceAll": "replace_all",
		"repoID": "repo_id", "repoId": "repo_id", "FilePath": "file_path", "HTTPServer": "http_server",
		"timeoutMs": "timeout_ms", "already_snake": "already_snake",
	} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkDecodeReadFileNoHook is BenchmarkDecodeReadFile without the
// alias table: the difference is the hook's cost on a call with no alias.
func BenchmarkDecodeReadFileNoHook(b *testing.B) {
	o := readOp()
	o.aliases = nil
	raw := json.RawMessage(`{"repo_id":"repo_0123","path":"internal/readfile/readfile.go","offset_line":40,"max_lines":120}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := o.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// docs/mcp.md's "Field aliases" lists every alias of the table, with the
// field it means.
func TestDocListsEveryAlias(t *testing.T) {
	doc, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Field aliases")
	if !ok {
		t.Fatal(`docs/mcp.md has no "## Field aliases" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]string{} // alias -> its table row
	for line := range strings.SplitSeq(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		for _, name := range strings.Split(cells[1], ",") {
			name = strings.TrimSpace(name)
			name, _, _ = strings.Cut(strings.Trim(name, "`"), "`")
			rows[name] = cells[2]
		}
	}
	for _, a := range fieldAliases() {
		row, ok := rows[a.name]
		if !ok {
			t.Errorf("docs/mcp.md does not list the alias %q", a.name)
			continue
		}
		for _, f := range a.to {
			if !strings.Contains(row, "`"+f.field+"`") {
				t.Errorf("docs/mcp.md: %q's row %q does not name %q", a.name, row, f.field)
			}
		}
	}
}
