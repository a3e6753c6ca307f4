// Package suite is harnessd's bench suite: it measures everyday agent
// operations through each surface and holds every figure against the raw
// operation it wraps (its "floor").
//
// Main is the command line (`go run ./bench`, `harness bench`). A run
//
//  1. builds a fixture git repository in a temp dir,
//  2. opens each selected surface (inproc: harness.Open; mcp-stdio and
//     mcp-http: a `harnessd serve` it starts itself, reached through
//     `harnessd mcp` or the loopback streamable HTTP endpoint),
//  3. runs every case warmup+iterations times, interleaving each iteration
//     with its floor, and
//  4. prints a table or, with --json, the schema_version 1 document that
//     bench/README.md and bench/schema.json describe.
//
// With --load it instead drives many simulated agents through one surface
// for a fixed time and reports throughput, latency percentiles, errors by
// code, peak RSS and goroutines before and after. With --files it
// generates repositories of the given sizes (GenerateRepo) and reports, per
// size, git_status, symbol_search (both also right after an edit),
// git_diff and a reused run_check (check_identity) in process against git and rg run directly on the same
// tree, with the process's RSS: how cost grows with the tree.
package suite
