package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/harnessd/harnessd/harness"
)

const rootsUsage = "usage: harness roots [ls] | allow DIR | rm DIR"

var rootsCommand = command{name: "roots", usage: "roots [ls] | allow DIR | rm DIR   allowed areas: where agents may register roots without asking", run: rootsCmd,
	help: `Usage:
  harness roots [ls]       the allowed areas (from --allow-root, the policy's roots, and
                           those added here) and the suspended roots
  harness roots allow DIR  let agents register repositories and targets inside DIR
                           without asking a person (DIR is made absolute)
  harness roots rm DIR     remove an area added here; the roots it granted are suspended
                           until a person confirms them (harness repo add / target add)

Outside the allowed areas an agent's repository_register or target_register
needs a person's approval (harness approve ID). Some paths are never granted,
whoever asks: /, /proc, /sys, /dev, /etc, the home directory itself, any git
directory, harnessd's data dir, the credential homes (~/.ssh, ~/.aws, ...).
See docs/authority.md.
`}

func rootsCmd(ctx context.Context, c *cli, args []string) error {
	if len(args) == 0 {
		args = []string{"ls"}
	}
	switch args[0] {
	case "ls", "list":
		if len(args) != 1 {
			return usageErr{rootsUsage}
		}
		raw, err := c.c.Get(ctx, "/v1/roots")
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(raw)
		}
		var r struct {
			Areas     []harness.AllowedArea `json:"areas"`
			Suspended map[string]string     `json:"suspended"`
		}
		_ = json.Unmarshal(raw, &r)
		if len(r.Areas) == 0 {
			fmt.Fprintln(c.stdout, "no allowed areas: every root an agent registers needs a person's approval (harness roots allow DIR)")
		} else {
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AREA\tSOURCE\tBY")
			for _, a := range r.Areas {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", esc(a.Dir), esc(a.Source), esc(dash(a.By)))
			}
			_ = tw.Flush()
		}
		if len(r.Suspended) > 0 {
			ids := make([]string, 0, len(r.Suspended))
			for id := range r.Suspended {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			fmt.Fprintln(c.stdout, "\nsuspended (a person confirms each with harness repo add ROOT / harness target add ROOT):")
			for _, id := range ids {
				fmt.Fprintf(c.stdout, "  %s: %s\n", esc(id), esc(r.Suspended[id]))
			}
		}
		return nil
	case "allow", "add":
		if len(args) != 2 {
			return usageErr{rootsUsage}
		}
		abs, err := filepath.Abs(args[1])
		if err != nil {
			return usageErr{fmt.Sprintf("dir %q: %v", args[1], err)}
		}
		raw, err := c.c.Post(ctx, "/v1/roots", map[string]string{"dir": abs, "by": "cli"})
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(raw)
		}
		var a harness.AllowedArea
		_ = json.Unmarshal(raw, &a)
		fmt.Fprintf(c.stdout, "allowed area %s: agents may register repositories and targets inside it\n", esc(a.Dir))
		return nil
	case "rm", "remove":
		if len(args) != 2 {
			return usageErr{rootsUsage}
		}
		abs, err := filepath.Abs(args[1])
		if err != nil {
			return usageErr{fmt.Sprintf("dir %q: %v", args[1], err)}
		}
		raw, err := c.c.Delete(ctx, "/v1/roots?dir="+url.QueryEscape(abs))
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(raw)
		}
		fmt.Fprintf(c.stdout, "removed allowed area %s\n", esc(abs))
		return nil
	}
	return usageErr{rootsUsage}
}
