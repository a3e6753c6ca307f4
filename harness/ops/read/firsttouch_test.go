package read_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testutil"
)

// historyRepo builds a repository of commits commits (through git
// fast-import: a second, not minutes) over 400 files in 20 directories;
// its .env held old in the first commit and cur since the second, and the
// last commit writes main (main.go's content, which may hold old: a
// secret once committed and still present, outside any secret file). Every
// commit changes one of the 400 files.
func historyRepo(tb testing.TB, commits int, old, cur, main string) string {
	tb.Helper()
	root := testutil.Repo(tb, nil)
	var in bytes.Buffer
	data := func(s string) string { return fmt.Sprintf("data %d\n%s\n", len(s), s) }
	file := func(i, v int) string {
		return fmt.Sprintf("M 100644 inline d%02d/f%03d.go\n%s", i%20, i, data(fmt.Sprintf("package d%02d\n\nconst V%d = %d\n", i%20, i, v)))
	}
	for c := 1; c <= commits; c++ {
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter harnessd test <test@harnessd.invalid> %d +0000\n%s", 1_700_000_000+c, data(fmt.Sprintf("c%d", c)))
		switch c {
		case 1:
			in.WriteString("from refs/heads/main^0\n")
			for i := range 400 {
				in.WriteString(file(i, 0))
			}
			fmt.Fprintf(&in, "M 100644 inline .env\n%s", data("TOKEN="+old+"\n"))
		case 2:
			fmt.Fprintf(&in, "M 100644 inline .env\n%s", data("TOKEN="+cur+"\n"))
		}
		if c == commits {
			fmt.Fprintf(&in, "M 100644 inline main.go\n%s", data(main))
		}
		in.WriteString(file(c%400, c))
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Env, cmd.Stdin = root, testutil.GitEnv(), &in
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("git fast-import: %v\n%s", err, out)
	}
	testutil.Git(tb, root, "reset", "-q", "--hard", "main")
	return root
}

// openRegistered opens a harness (a new secrets cache) and registers root.
func openRegistered(tb testing.TB, root string) (*harness.Harness, string) {
	tb.Helper()
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := h.Close(ctx); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		tb.Fatal(err)
	}
	return h, r.ID
}

// BenchmarkFirstReadOfNewCheckout is the first read_file of a checkout
// just registered (a new harness each time, so a new secrets cache) in a
// repository of 2,000 commits whose .env was rotated: the time of that
// read alone, and its median over the iterations.
func BenchmarkFirstReadOfNewCheckout(b *testing.B) {
	old, cur := "OLDSECRET"+strings.Repeat("q7", 12), "NEWSECRET"+strings.Repeat("z3", 12)
	root := historyRepo(b, 2000, old, cur, "package main\n")
	ctx := context.Background()
	var took []time.Duration
	for range b.N {
		b.StopTimer()
		h, id := openRegistered(b, root)
		b.StartTimer()
		start := time.Now()
		res, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: "d07/f007.go"})
		took = append(took, time.Since(start))
		b.StopTimer()
		if err != nil || !strings.Contains(res.Content, "const V7 = ") {
			b.Fatalf("read: %v %+v", err, res)
		}
		if err := h.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
}

// A secret committed in an old commit of a secret file (rotated since) and
// still present in an ordinary file never comes back unredacted: not on
// the first read of a checkout just registered (which waits for the
// history when the content is suspect), not on the next, not after the
// history is learned.
func TestFirstReadRedactsAValueOnlyTheHistoryHolds(t *testing.T) {
	old, cur := "OLDSECRET"+strings.Repeat("k5", 12), "NEWSECRET"+strings.Repeat("m8", 12)
	for _, tc := range []struct{ name, main string }{
		{"assigned to a secret name", "package main\n\nconst token = \"" + old + "\"\n"},
		{"a bare literal", "package main\n\nvar x = []string{\"" + old + "\"}\n"},
		{"in a comment", "package main\n\n// was " + old + " once\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := historyRepo(t, 300, old, cur, tc.main)
			ctx := context.Background()
			for round := range 2 {
				h, id := openRegistered(t, root)
				for i := range 2 {
					res, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: "main.go"})
					if err != nil {
						t.Fatal(err)
					}
					if strings.Contains(res.Content, old) || res.Redactions == 0 {
						t.Fatalf("round %d, read %d: main.go shows the old secret (redactions %d): %q", round, i, res.Redactions, res.Content)
					}
				}
				// A command waits for the history: after it, the value is
				// known, and a read redacts it as a known value.
				out, err := h.RunCommand(ctx, harness.RunCommandArgs{RepoID: id, Argv: []string{"git", "log", "-p"}})
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(out.Stdout.Text, old) {
					t.Fatalf("round %d: git log -p shows the old secret", round)
				}
				res, err := h.ReadFile(ctx, harness.ReadFileArgs{RepoID: id, Path: "main.go"})
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(res.Content, old) || !strings.Contains(res.Content, "[REDACTED:known-secret]") {
					t.Fatalf("round %d, after the history: %q", round, res.Content)
				}
			}
		})
	}
}
