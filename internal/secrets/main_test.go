package secrets

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/internal/gitx"
	"github.com/harnessd/harnessd/internal/redact"
)

// TestMain isolates git from the host's global configuration and checks
// that the cache leaves no goroutine behind.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "secrets-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(home) }))
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var testGit = &gitx.Git{}

// fake returns n deterministic pseudo-random letters and digits, so that
// test secrets are assembled at run time (no secret scanner flags them).
func fake(seed uint64, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b strings.Builder
	x := seed*0x9E3779B97F4A7C15 + 1
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b.WriteByte(alphabet[x%uint64(len(alphabet))])
	}
	return b.String()
}

// redacts reports whether k redacts v.
func redacts(k *redact.Known, v string) bool {
	out, _ := redact.New(nil).WithKnown(k).String("<" + v + ">")
	return !strings.Contains(out, v)
}

// writeFile writes dir/rel (creating parents).
func writeFile(t testing.TB, dir, rel, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
