// Package messages holds the plain message structs that harnessd's actors
// exchange, one file per conversation. Commands are verbs, replies are past
// tense, and a failure comes back as Failed. It imports no harnessd package.
package messages
