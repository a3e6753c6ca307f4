// Package worktree creates, lists and removes the detached git worktrees in
// which durable jobs work on a copy of a checkout, dirty state included.
package worktree
