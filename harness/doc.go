// Package harness is harnessd's embedding API: Open a Harness, call one
// method per operation, Close it. The daemon (cmd/harnessd) and the MCP and
// HTTP surfaces are built on the same methods through the operation table
// (Ops), so adding an operation is one method plus one table entry.
//
// Subpackages hold the mechanisms: errs (error codes), pathsafe, readfile,
// search, gitx, proc, classify, route, redact, patch, lease, ledger,
// mcpserver, httpapi, daemon.
//
// # Shutdown order
//
// Close:
//  0. answers every request queued for a lease UNAVAILABLE at once
//     (nothing_written: true) and closes their ledger entries as never
//     begun, so the same request_id runs normally after the restart;
//     later requests that would wait are refused;
//  1. stops accepting new operations;
//  2. poisons the root supervisor, which drains its children in reverse
//     start order (each finishes what is already queued);
//  3. shuts the actor system down;
//  4. closes the store (stops value-log GC, then Badger);
//  5. syncs the logger.
package harness
