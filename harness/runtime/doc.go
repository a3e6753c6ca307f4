// Package runtime owns harnessd's actor system: it declares the supervision
// tree as one literal (tree.go), starts it after the boot-time restore, and
// gives the layers above typed clients for each actor (Registry, Ledger,
// Audit, Leases, Jobs, Checks, Lanes), with in-memory fakes of the ones the
// request pipeline's tests need (fake.go).
//
// # Start order
//
// New builds the actor system and the clients (a child's PID is known
// before it is spawned); Start then:
//  1. runs supervisors.Boot (requests a crash left executing become unknown);
//  2. spawns the root supervisor, which starts its children in the order
//     of the tree literal;
//  3. waits until the root, the registry and every lane answer a Ping.
//
// # Close order
//
// Close poisons the root supervisor (it drains its children in reverse
// start order, each finishing what is queued), shuts the system down, waits
// for the goroutines actors started for blocking work, and removes the temp
// data dir of an in-memory runtime.
package runtime
