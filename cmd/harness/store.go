package main

import (
	"context"
	"net/url"
)

func init() {
	register("store", command{usage: "store dump [PREFIX]   print the store readably (values redacted)", run: func(ctx context.Context, c *cli, args []string) error {
		if len(args) == 0 || args[0] != "dump" || len(args) > 2 {
			return usageErr{"usage: harness store dump [PREFIX]   (prefixes: reg/ fence/ lease/ ledger/ job/ check/ approval/ audit/ receipt/ meta/)"}
		}
		path := "/v1/store/dump"
		if len(args) == 2 {
			path += "?prefix=" + url.QueryEscape(args[1])
		}
		raw, err := c.c.GetRaw(ctx, path)
		if err != nil {
			return err
		}
		_, err = c.stdout.Write(raw)
		return err
	}})
}
