package sandbox

import (
	"os"
	"strings"
	"testing"
)

// The cached ruleset of a checkout follows its tree: files and directories
// created after the first command are readable by the next one, and a
// secret stays closed.
func TestCachedRulesetSeesNewEntries(t *testing.T) {
	requireLandlock(t)
	f := newFixture(t, true)
	pol := f.policy(Read)
	if out, code := f.run(t, pol, "cat src/a.txt"); code != 0 || !strings.Contains(out, "visible") {
		t.Fatalf("first command: exit %d %q", code, out)
	}
	for p, s := range map[string]string{"new.txt": "fresh-1\n", "newdir/x": "fresh-2\n", "src/b.txt": "fresh-3\n"} {
		if err := os.MkdirAll(f.root+"/"+p[:strings.LastIndexByte(p, '/')+1], 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.root+"/"+p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, code := f.run(t, pol, "cat new.txt newdir/x src/b.txt; cat .env")
	for _, w := range []string{"fresh-1", "fresh-2", "fresh-3"} {
		if !strings.Contains(out, w) {
			t.Fatalf("new entries unreadable (exit %d): %q", code, out)
		}
	}
	if strings.Contains(out, "s3cr3t") {
		t.Fatalf("the secret leaked: %q", out)
	}
}
