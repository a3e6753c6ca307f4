package harness_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/harnessd/harnessd/harness"
)

// Open a Harness in process, register a repository and list it.
func Example() {
	ctx := context.Background()
	h, err := harness.Open(ctx, harness.Config{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer h.Close(ctx)

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	_ = exec.Command("git", "init", "-q", dir).Run()

	r, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: dir})
	if err != nil {
		panic(err)
	}
	l, _ := h.Repositories(ctx, harness.ListArgs{})
	fmt.Println(r.Created, len(l.Repositories), l.Repositories[0].ID == r.ID)
	// Output: true 1 true
}
