// Package op defines harnessd's operations and the request pipeline every
// surface runs them through.
//
// An operation is declared with Def: a name, a description, a typed input
// (its JSON schema is generated from the type) and a Prepare function that
// validates the input and returns a Plan: what the gate sees and what runs
// once it allows. Operations are collected in a Registry, a static table
// that panics on a duplicate name.
//
// Every other fact about an operation is a field of its Spec, its
// Descriptor (spec.go), read by every consumer: its route class, toolset
// and roles, whether a verified stage applies, its context topics, whether
// a batch or read_lanes may run it, the fields its request hash leaves
// out. No consumer keeps a list of operation names; Registry.Check says
// what a complete descriptor needs.
//
// # The pipeline
//
// Pipeline.Call (JSON, by name) and Handle.Call (typed, resolved once by
// HandleOf) run:
//  1. decode: strict JSON against the schema (INVALID_ARGUMENT otherwise);
//  2. resolve: the repo_id, through the registry's published index, and the
//     repository's path checker;
//  3. prepare: the operation's own validation and plan;
//  4. gate: govern.Governor.Gate, exactly once, for the operation and each
//     of its steps;
//  5. execute: the plan's Run, or its Write through the mutation engine
//     (Call.Write: request ledger, lease, fenced write, receipt);
//  6. trace and receipt: the latency segments, then the receipt is stored.
//
// Batch steps and lanes are prepared with PrepareStep and gated as steps of
// their parent; they never cross the gate again. A lane is handed its step
// as data with the gate's answer, sealed (LaneStep), and runs only a step
// whose seal and gate input match (RunLaneStep; lane.go says how).
package op
