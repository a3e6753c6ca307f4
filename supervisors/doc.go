// Package supervisors declares harnessd's supervision tree as data: each
// supervisor is a list of children with restart policies, an intensity and a
// period. Children start in declaration order and are drained in reverse.
package supervisors
