// Package target holds the pure rules of repository-free targets: which
// workspace_write commands a target may run (the narrow, path-governed
// filesystem allowlist and the replay-safe local validations) and the
// target's identity check.
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

// validations are the replay-safe local validations: they build or check
// code in the target and write only build outputs and caches, so running
// one again is harmless.
var validations = map[string]map[string]bool{
	"go":    {"build": true, "vet": true, "test": true},
	"cargo": {"check": true, "test": true, "build": true, "clippy": true},
}

// Kind is how a workspace_write command may run in a target.
type Kind string

const (
	// Refused: not on either list; workspace_write fails closed.
	Refused Kind = ""
	// Filesystem: on the path-governed filesystem allowlist.
	Filesystem Kind = "filesystem"
	// Validation: a replay-safe local validation.
	Validation Kind = "validation"
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
	prog := filepath.Base(argv[0])
	if subs, ok := validations[prog]; ok {
		if len(argv) >= 2 && subs[argv[1]] {
			return Validation, nil, nil
		}
		return Refused, nil, nil
	}
	flags, ok := fsFlags[prog]
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
