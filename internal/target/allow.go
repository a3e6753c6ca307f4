// Package target holds the pure rules of repository-free targets: which
// workspace_write commands a target may run (the narrow, path-governed
// filesystem allowlist; everything else a command may do is decided by the
// repository's classifier and router, as for run_command) and the target's
// identity check.
package target

import (
	"path/filepath"
	"strings"
)

// CommandLimitMs is the cap of one target_execute_command: longer work is
// for a promoted repository's durable jobs.
const CommandLimitMs = 30_000

// fsFlags are the flags each allowlisted filesystem program may take; every
// other argument is a path that must be writable inside the target.
var fsFlags = map[string]map[string]bool{
	"mkdir": {"-p": true},
	"touch": {"-c": true},
	"cp":    {"-p": true, "-r": true, "-R": true, "-n": true},
	"mv":    {"-n": true},
}

// Kind is how a workspace_write command may run in a target.
type Kind string

const (
	// Refused: not on the allowlist. A target runs no other
	// workspace_write command: builds and tests run code (go build
	// -toolexec, a build.rs, a Makefile) and belong to a promoted
	// repository's jobs.
	Refused Kind = ""
	// Filesystem: on the path-governed filesystem allowlist.
	Filesystem Kind = "filesystem"
)

// AllowWrite says whether a workspace_write argv may run in a target, and
// how. checkPath is called on every path argument of an allowlisted
// filesystem command (it must be inside the target, not secret, not .git);
// its error is returned. Flags off the program's short list refuse the
// command, as does "--" followed by nothing or a program not listed.
func AllowWrite(argv []string, checkPath func(string) error) (Kind, []string, error) {
	if len(argv) == 0 {
		return Refused, nil, nil
	}
	flags, ok := fsFlags[filepath.Base(argv[0])]
	if !ok {
		return Refused, nil, nil
	}
	var paths []string
	endOpts := false
	for _, a := range argv[1:] {
		switch {
		case !endOpts && a == "--":
			endOpts = true
		case !endOpts && strings.HasPrefix(a, "-") && a != "-":
			if !flags[a] {
				return Refused, nil, nil
			}
		default:
			if a == "" || a == "-" {
				return Refused, nil, nil
			}
			if err := checkPath(a); err != nil {
				return Refused, nil, err
			}
			paths = append(paths, a)
		}
	}
	if len(paths) == 0 {
		return Refused, nil, nil
	}
	return Filesystem, paths, nil
}
