// Package daemon runs harnessd as a daemon on a data dir (harnessd serve)
// and bridges MCP over stdio to it (harnessd mcp).
//
// A data dir holds:
//
//	store/          Badger
//	harnessd.lock   flock held by the running daemon
//	harnessd.pid    its pid
//	harnessd.sock   the unix socket (0600): JSON API, /mcp, /healthz, /metrics
//	token           bearer token for --listen (0600)
//	harnessd.log    the log of a daemon started by `harnessd mcp`
//
// # Shutdown order (Serve, on SIGINT/SIGTERM)
//
//  1. stop accepting connections (listeners closed, idle connections drained);
//  2. close the Harness: answer requests queued for a lease UNAVAILABLE at
//     once (their ledger entries closed as never begun), refuse new
//     operations, wait for running ones up to
//     --shutdown-wait, drain the actor tree in reverse start order, close the store;
//  3. end the remaining streams (MCP SSE) and close the servers;
//  4. remove the socket and pid file, release the lock.
package daemon
