// Package redact removes secrets (private keys, cloud and API tokens, and
// credentials in URLs, headers and assignments) from text before it reaches
// an agent or a log.
//
// One policy is used everywhere: command output, diffs, search results, error
// messages and logs all go through a [Redactor], usually [Default]. Each
// secret is replaced by "[REDACTED:<rule-id>]"; the text around it survives.
//
// # What is not a secret
//
// A rule finds a shape; the text around it decides. Measured on a corpus of
// real output of projects nobody here wrote (testdata/benign: go test -v
// and -json, pytest, unittest, mocha, jest, tape and node --test reports;
// grep -rn, git grep -n, rg -n --column lines and search matches of their
// sources; lockfiles), no rule redacts:
//
//   - a test runner's report: "--- PASS: TestName (0.02s)" is no password;
//   - the path:line: (or path:line:col:, or path-line-) prefix of grep-like
//     output: a file name such as creds_utils.go is never a key;
//   - code: a call, field path, composite literal, index, negation or type
//     union as the value (auth := newAuth(cfg), pass := !ok), and in code's
//     assignment forms (x := v, x = v with blanks, x => v) a name that reads
//     as words (hmacSampleSecret = keyData), where a credential reads as
//     random characters; a quote after the separator that closes the string
//     the key stands in ("invalid token:", err);
//   - templates and messages: printf verbs (%v), format placeholders ({}),
//     short phrases ("bad token"), a message that names the secret
//     ("Unexpected token %0"), a name that does ("X-Auth-Token");
//   - versions and URLs as values ("jsonwebtoken": "^9.0.3"; a URL's
//     credentials are url-credentials' to decide), a field path whose last
//     field is no secret (token.type), a weak word that does not end the key
//     (passOnFailure), the end of a path (/etc/passwd: ...);
//   - hashes, UUIDs, base64 and hex vectors and lockfile integrity fields (a
//     keyword inside one is no key);
//   - a JSON Web Token in a test file or test data (foo_test.go, test_x.py,
//     x.spec.ts, test/, testdata/, __tests__/, fixtures/ ...), as a grep
//     line names it or as [Redactor.StringIn] is told;
//   - placeholder credentials: "Bearer %v", "Bearer ToKen", user:pass@host,
//     a cookie whose values are all words ("theme=dark").
//
// A value in a literal form stays a secret: KEY=value in an environment
// file, key: value in YAML, a quoted string in code, a flag's argument, a
// header, an INI line (aws_secret_access_key = ...), whether or not a grep
// prefix precedes it.
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
