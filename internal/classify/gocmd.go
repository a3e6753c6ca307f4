package classify

import (
	"strconv"
	"strings"
)

func classifyGo(_ string, args []string, _ int) Result {
	if len(args) > 0 && (args[0] == "-C" || strings.HasPrefix(args[0], "-C=")) {
		return result(Unknown, "go -C runs in another directory")
	}
	sub, rest := firstOperand(args)
	has := func(names ...string) bool {
		for _, a := range rest {
			if a == "--" {
				return false
			}
			for _, n := range names {
				if a == n || a == "-"+n || strings.HasPrefix(a, n+"=") || strings.HasPrefix(a, "-"+n+"=") {
					return true
				}
			}
		}
		return false
	}
	switch sub {
	case "version", "doc", "help":
		return result(Readonly, "go "+sub+" only reads")
	case "env":
		if has("-w", "-u") {
			return result(WorkspaceWrite, "go env -w changes the Go configuration")
		}
		return result(Readonly, "go env only reads")
	case "list":
		if has("-export", "-compiled") {
			return result(WorkspaceWrite, "go list -export builds packages")
		}
		if has("-m") && has("-u", "-versions", "-retracted") {
			return remote("go list -m -u queries the module proxy")
		}
		return result(Readonly, "go list only reads")
	case "vet":
		return result(Unknown, "go vet builds packages and may run long")
	case "build", "test", "generate", "install", "fmt", "fix", "clean", "work":
		return result(WorkspaceWrite, "go "+sub+" writes build outputs or files")
	case "get":
		r := result(WorkspaceWrite, "go get downloads modules and edits go.mod")
		r.Network = true
		return r
	case "mod":
		op, opArgs := firstOperand(rest)
		switch op {
		case "graph", "why", "verify":
			return result(Readonly, "go mod "+op+" only reads")
		case "edit":
			for _, a := range opArgs {
				if a != "-json" && a != "-print" && a != "--json" && a != "--print" && strings.HasPrefix(a, "-") {
					return result(WorkspaceWrite, "go mod edit changes go.mod")
				}
			}
			return result(Readonly, "go mod edit -json only prints")
		case "download", "tidy":
			r := result(WorkspaceWrite, "go mod "+op+" downloads modules and edits go.mod")
			r.Network = true
			return r
		}
		return result(WorkspaceWrite, "go mod "+op+" changes the module")
	case "run", "tool":
		return result(Unknown, "go "+sub+" runs a program")
	}
	return result(Unknown, "go "+strconv.Quote(sub)+" is not a known readonly subcommand")
}
