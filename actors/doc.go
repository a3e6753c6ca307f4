// Package actors holds harnessd's actors, one type per file. Each actor keeps
// its state in its struct, touched only by Receive; blocking work (processes,
// git, file I/O beyond its own snapshot) never runs inside Receive.
//
// An actor loads its state on *actor.Started and persists every change
// through the shared *persistence.Store, so a restart after a panic (see
// Recover) comes back from its snapshot.
package actors
