// Package joblog stores a durable job's output streams as redacted,
// size-capped log files under the job's directory and reads them back.
//
// # Layout
//
// A log named "stdout.log" in dir is, while it is written and below its cap,
// the single file dir/stdout.log: the redacted stream, byte for byte.
//
// When the stream would exceed maxBytes, the writer starts capping. It keeps
// the head (the first maxBytes/4 bytes, cut back to a line end when one is
// in the second half of that range) in dir/stdout.log, and writes the rest
// into tail segments dir/stdout.log.tail.<start> (start is the segment's
// stream offset, 16 hex digits). A segment is rotated when it holds the
// tail budget; only the newest two are kept, so the most recent tail is
// always on disk and the files together stay below about 2*maxBytes. Every
// file is plain text, so a writer killed with SIGKILL leaves readable logs.
//
// Close compacts a capped log: dir/stdout.log is replaced (atomically, by
// rename) with head + a marker line "[... joblog: N bytes omitted ...]" +
// the most recent tail starting at a line boundary, at most maxBytes in all,
// and the segments are removed. A small index dir/stdout.log.idx records
// where the head ends and at which stream offset the tail starts, so [Read]
// keeps using stream offsets across compaction. [Compact] does the same for
// a log whose writer died.
//
// # Offsets
//
// [Read] addresses the redacted stream: offset n is the n-th byte the log
// ever received after redaction, whether or not it is still stored. A read
// that crosses a dropped range returns the omission marker in place of the
// bytes, so next-offset can be larger than len(data).
package joblog
