// Package compat measures the wall from the benign side (DESIGN §14): a
// corpus of real projects nobody here wrote, pinned in
// testdata/corpus.json, each action run directly and through harnessd over
// MCP, and compared after normalising timings, paths and undefined order.
//
// The package holds only tests. TestCorpus:
//  1. builds harnessd, fetches every project (Go modules from the module
//     proxy or cache, npm packages with npm pack), makes it a git
//     repository with one commit and installs its dependencies directly,
//     before harnessd touches it (the sandbox has no network);
//  2. copies it twice, starts a daemon on a fresh data dir per project
//     and connects the go-sdk MCP client through `harnessd mcp`;
//  3. runs every action in the direct copy and, through harnessd, in the
//     other: the full suite as a durable job, a focused test as run_check
//     (with -v too), read-only commands through run_command, read_file of
//     every tracked file, search, and a patch + stage + commit cycle;
//  4. compares exit status and output and counts redactions (the corpus
//     holds no secret, so every one is spurious);
//  5. fails on a difference the manifest does not list as an exception,
//     and on a listed exception that has become identical;
//  6. with HARNESSD_COMPAT_WRITE=1, writes the table docs/compat.md.
//
// It skips under -short. See docs/compat.md for how to run it.
package compat
