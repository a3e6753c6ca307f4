// Package search is harnessd's code search over a repository work tree: it
// runs ripgrep when installed and a pure-Go engine with the same results
// otherwise. A third engine, SearchListed ("index"), searches a file list
// the caller keeps live (a checkout's watcher) through a bounded in-memory
// Cache of contents, with the Go engine's results.
//
// # Semantics shared by the engines
//
// Files searched: the files git considers part of the work tree and not
// ignored, that is tracked files plus untracked files not excluded by
// .gitignore, .git/info/exclude or core.excludesFile (the list of
// `git ls-files -z --cached --others --exclude-standard`). Tracked files that
// match an ignore rule are searched too, as git does. When root is not inside
// a git work tree, every file under root is a candidate. Hidden files are
// searched; .git is never searched; symbolic links are never followed (a
// symlink is not searched, nor is a listed file below a directory that has
// become a symlink: files are opened beneath root with no symlink in any
// component); only regular files are read.
//
// A candidate is then dropped, in this order, when:
//   - its base name is a temp file name of a patch (patch.IsTempName,
//     ".<name>.harnessd-tmp-<random>"), a copy a crash left behind: never
//     reported or counted, tracked or not (the Go engine never opens it);
//   - Request.Glob does not select it (a doublestar pattern over the
//     slash-separated relative path; a pattern without '/' is matched against
//     the base name at any depth, like rg -g; a leading '/' anchors the
//     pattern at root; a leading '!' negates it: a file is then dropped when
//     the pattern matches it or one of its parent directories);
//   - Searcher.Exclude rejects it: it is never opened by the Go engine, never
//     reported by either engine, and counted in Result.Excluded;
//   - it is larger than Limits.MaxFileSize;
//   - it contains a NUL byte anywhere (binary).
//
// Matching: the query is a literal (default) or a regular expression in the
// common subset of Go RE2 and Rust's regex crate (validated with Go's
// regexp). Queries may not contain NUL or newline bytes. Matching is line by
// line on raw bytes (no BOM sniffing or transcoding): '^' and '$' match at
// line boundaries, a match never spans lines, and a line's "\r" is part of the
// line for matching. \d, \w, \s and POSIX classes are ASCII in both engines
// (Go's meaning); \b and \B are ASCII word boundaries in both.
//
// Results: one Match per matching line, with the 1-based byte column of the
// leftmost match. Text is the line without its "\n" or "\r\n", with invalid
// UTF-8 bytes replaced by U+FFFD, cut to Limits.MaxMatchChars runes (Cut is
// then set). Matches are ordered by path, compared component by component in
// byte order (the order of a sorted tree walk and of rg --sort path: "a/b"
// sorts before "a.b" because '/' sorts before every other byte), then by
// line. Truncated reports that more than MaxResults matches existed.
//
// Errors: an empty query, a query with NUL or newline, a bad regular
// expression or glob, a negative MaxResults give errs.InvalidArgument; running
// past Limits.Timeout gives errs.Timeout; a cancelled context gives
// errs.Cancelled; SearchRG without rg gives errs.Unavailable.
//
// Known differences between the engines: on bytes that are not valid UTF-8,
// Go's regexp treats each invalid byte as U+FFFD (so '.' matches it) while
// Rust's does not; rg finds ignore rules in core.excludesFile only from the
// global git configuration, not from a repository's .git/config; rg descends
// into nested repositories and submodules, which git ls-files lists as a
// single directory entry the Go engine skips; a regular expression that Go
// accepts but Rust rejects (for example an empty class) is an
// errs.InvalidArgument from the rg engine only.
//
// # The index engine
//
// SearchListed takes the candidate list instead of running git ls-files: it
// must be that list (tracked plus untracked non-ignored files, tracked
// ignored ones included), in any order; a list sorted by path component and
// free of duplicates is used without a copy. Directory entries ("sub/") are
// dropped, paths with a ".git" component are never searched, and a path
// that is absolute or not clean (empty, ".", ".." components) is an
// errs.InvalidArgument. The rest (temp names, Glob, Exclude, MaxFileSize,
// binary files, matching, order, cut, truncation, errors, timeouts) is
// SearchGo's, and the parity and property tests hold it to SearchGo's and
// rg's results.
//
// The Cache keeps a trigram index of the files' contents (see postings:
// segments of posting lists over file ids, a small tail of recent files,
// updated as files are invalidated and read again), the negative fact
// that a file is binary, larger than the size limit, not a regular file
// (vanished, symlink, FIFO), not permitted or excluded, and, within a
// share of its bound, contents. A query's trigram plan (a literal's
// trigrams; for a regular expression, an AND/OR of trigrams derived from
// its syntax, as in Russ Cox's codesearch; trigrams keep their case, a
// query that folds case asks for every case variant) picks the files to
// read, so a
// warm search costs what its candidates cost, not what the tree costs;
// files the index does not cover yet (never read, changed, over the
// bound) are read as before. A failure that may pass (no file
// descriptors left, an I/O error) is not kept. Entries are never
// revalidated: a change is seen only after the caller passes its path (or
// a parent directory) to Cache.Invalidate; an edit that is not
// invalidated is served stale. A read that overlaps an Invalidate is not
// kept. The Cache charges each entry its path and a fixed overhead, the
// index its size and contents their bytes against its byte bound and
// refuses new entries once full (CacheStats.OverBound counts them): those
// files are read from disk on every search, so a tree past the bound is
// better served by rg. One Cache serves one root, and recognizes the
// candidate list by identity: a list passed again must not have changed.
package search
