package main

import (
	"context"
	"slices"

	"github.com/harnessd/harnessd/bench/suite"
)

var benchCommand = command{
	name:        "bench",
	usage:       "bench [flags]        run the bench suite (same flags as `go run ./bench`; --help lists them)",
	passthrough: true,
	flags:       []string{"--surfaces", "--cases", "--warmup", "--iterations", "--json", "--harnessd", "--load", "--concurrency", "--duration", "--repos"},
	run: func(ctx context.Context, c *cli, args []string) error {
		stderr := c.stderr
		if wantsHelp(args) {
			stderr = c.stdout // the help is the answer: stdout, like every command's
		}
		if c.json && !slices.Contains(args, "--json") {
			args = append([]string{"--json"}, args...) // harness --json bench
		}
		if code := suite.MainContext(ctx, args, c.stdout, stderr); code != 0 {
			return benchFailed(code)
		}
		return nil
	},
}

type benchFailed int

func (b benchFailed) Error() string { return "bench suite failed" }
