// Package odb reads a git repository's object database in process: loose
// objects (zlib streams under objects/xx/) and packed ones (pack index v1
// and v2, pack v2 and v3, offset and reference deltas), each checked
// against its object name before it is returned. It also abbreviates
// object names as git's find_unique_abbrev does, from the same packs and
// loose objects, so an index line printed in process reads as git's.
//
// It reads and never writes. What it does not model — alternates, a
// multi-pack index, another object format than SHA-1 — makes Open or the
// call fail with an error wrapping ErrUnsupported, and the caller runs
// git. Packs are listed again whenever the pack directory changes (a
// repack, a fetch), so a Store lives as long as its repository.
package odb
