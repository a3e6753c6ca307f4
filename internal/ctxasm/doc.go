// Package ctxasm assembles what an agent should read first about a
// checkout (FlowDeck L1, the context_assemble operation): its state files,
// its docs, the rules that apply to the languages it holds and to the
// command at hand, the run's recent events and observations, fitted to a
// token budget. It is pure mechanism: no actors; the only I/O is reading
// the checkout's candidate files (through a [Cache]) and its git index.
//
// # Discovery
//
// [Scan] looks at fixed places only, never a walk of the tree:
//
//	state  STATE.md, PLAN.md, .planning/*.md
//	docs   .codebase/*.md, CLAUDE.md, the head of README.md, an index of
//	       docs/*.md titles (their first heading)
//	rules  AGENTS.md (split into its "## " sections), .cursor/rules/*.mdc
//	       (with their front matter: description, globs, alwaysApply),
//	       CONTRIBUTING.md, .github/copilot-instructions.md
//
// Every candidate is resolved through the checkout's [pathsafe.Root]: a
// secret path (the denylist read_file uses), a path outside the root or a
// symlink out of it is never read. The languages of the checkout come from
// the file extensions of the tracked files, read from .git/index (parsed,
// not executed), or from a bounded walk when there is no index.
//
// # Relevance
//
// [Select] turns the scanned files into parts. Rules load lazily: an
// AGENTS.md section whose heading names only languages the checkout does
// not hold is left out, and so is one whose heading names a topic (tests,
// commits, style, build, security, docs) other than the command's or the
// stage's, when there is one; a .mdc rule applies when alwaysApply is set,
// when one of its globs matches a path of the request (or, without paths,
// a tracked file), or when its description names an active topic;
// CONTRIBUTING.md applies to writes, commits and reviews, and when no
// command is given.
//
// # Token estimate
//
// [Estimate] is a documented estimator, not a tokenizer. It counts ASCII
// bytes and non-ASCII runes separately: each non-ASCII rune is one token
// (BPE vocabularies split them finely), and the ASCII bytes are divided by
// the bytes per token of the text's kind, measured on typical BPE
// tokenizers:
//
//	prose (markdown, plain text)   4   bytes per token
//	code (Go, TypeScript, Python)  3.5 bytes per token (symbols, indentation)
//	JSON                           3   bytes per token (quotes, braces)
//
// rounded up. A part's tokens are those of its title line and its text as
// they are emitted.
//
// # Budget
//
// [Allocate] fits parts to a budget (default 8,000 tokens, 500..200,000)
// and never exceeds it. In priority order (run state, failures, state
// files, rules, other events, observations, docs; then by source order):
//
//  1. identical texts (sha256 of the trimmed text) keep their first part;
//     the others are pruned as duplicates;
//  2. stale parts are pruned: an observation that names a tracked file
//     changed after the observation was made, an observation superseded by
//     a newer harnessd note of the same kind, a part whose file changed
//     while it was read;
//  3. a part above its share (a quarter of the budget, at least 400
//     tokens) is summarised: its head, an outline (markdown headings, or
//     Go, TypeScript and Python symbol lines) and its tail;
//  4. parts are taken while they fit; one that does not is summarised to
//     what is left, or pruned when even a summary does not fit.
//
// The result reports every pruned and summarised part with the reason,
// and the tokens used and remaining. Output is deterministic: parts are
// sorted, nothing depends on map order, and no clock reading enters the
// budgeted text.
package ctxasm
