// Command bench runs harnessd's bench suite: everyday agent operations
// through each surface (in-process, MCP over stdio, MCP over streamable
// HTTP), each held against the raw operation it wraps. See README.md.
package main

import (
	"os"

	"github.com/harnessd/harnessd/bench/suite"
	"github.com/harnessd/harnessd/harness"
)

func main() {
	harness.SandboxMain() // the in-process surface confines its jobs and checks in namespaces
	os.Exit(suite.Main(os.Args[1:], os.Stdout, os.Stderr))
}
