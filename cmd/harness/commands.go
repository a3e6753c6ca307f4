package main

import "slices"

// builtinCommands are the commands dispatch answers itself (main.go).
var builtinCommands = []string{"repo", "status", "daemon", "ops", "call", "version", "completion", "help"}

// commands is every other command, each defined in its own file: one
// literal list, indexed by commandTable, which panics when two share a name
// (or one takes a built-in's).
var commands = commandTable(
	approvalsCommand, approveCommand, denyCommand, policyCommand, auditCommand, // governance.go
	benchCommand,            // bench.go
	checkCommand,            // checks.go
	jobsCommand, jobCommand, // jobs.go
	verifyCommitCommand,     // provenance.go
	rootsCommand,            // roots.go
	runsCommand, runCommand, // runs.go
	storeCommand,                  // store.go
	targetCommand,                 // target.go
	historyCommand, revertCommand, // undo.go
	catCommand, grepCommand, diffCommand, patchCommand, logCommand, // everyday.go
)

// commandTable indexes cmds by name. A command without a name, run or
// usage line, a second command of a name, or one named like a built-in is
// a programming error: it panics, at start-up, in every test.
func commandTable(cmds ...command) map[string]command {
	m := make(map[string]command, len(cmds))
	for _, c := range cmds {
		switch {
		case c.name == "" || c.run == nil || c.usage == "":
			panic("harness: command " + c.name + " needs a name, a run function and a usage line")
		case slices.Contains(builtinCommands, c.name):
			panic("harness: command " + c.name + " has a built-in command's name")
		}
		if _, dup := m[c.name]; dup {
			panic("harness: two commands are named " + c.name)
		}
		m[c.name] = c
	}
	return m
}
