// Package redact removes secrets (private keys, cloud and API tokens, and
// credentials in URLs, headers and assignments) from text before it reaches
// an agent or a log.
//
// One policy is used everywhere: command output, diffs, search results, error
// messages and logs all go through a [Redactor], usually [Default]. Each
// secret is replaced by "[REDACTED:<rule-id>]"; the text around it survives.
//
// # Known values
//
// Rules find secrets by their shape. [NewKnown] adds the values the caller
// knows to be secret (harnessd reads them from a checkout's secret files):
// [Redactor.WithKnown] replaces each value, its base64 (whole, or the part of
// a longer base64 stream that encodes it, at every byte alignment) and its
// hex with "[REDACTED:known-secret]". The forms are found in one pass that
// hashes a 4-byte gram every few bytes and looks it up in a bitmap, so the
// cost barely depends on the number of values.
//
// # Cost
//
// Every rule is keyed by short keywords. A single pass over the input tests
// each byte pair against a bitmap of keyword anchors, so text without any
// keyword costs one table lookup per byte and is returned unchanged without
// copying. Rule matchers run only at keyword hits and never beyond the line
// of the hit (PEM private keys, which span lines, are the one exception).
//
// # Streaming
//
// [Writer] redacts a stream line by line and produces the same output as
// [Redactor.String] on the whole text for any chunking of the input, as long
// as no line exceeds 64 KiB and the stream is not flushed by hand mid-way.
package redact
