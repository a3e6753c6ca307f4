package main

import (
	"context"

	"github.com/harnessd/harnessd/bench/suite"
)

func init() {
	register("bench", command{
		usage: "bench [flags]        run the bench suite (same flags as `go run ./bench`; --help lists them)",
		run: func(ctx context.Context, c *cli, args []string) error {
			if code := suite.MainContext(ctx, args, c.stdout, c.stderr); code != 0 {
				return benchFailed(code)
			}
			return nil
		},
	})
}

type benchFailed int

func (b benchFailed) Error() string { return "bench suite failed" }
