// Package gitpush is the remote write harnessd performs itself (git_push):
// the pure decisions (a refspec, a ref name, a remote's URL and the
// checkout settings that would redirect a push, credentials stripped from
// what people and logs read, git's porcelain answer) and the push.
//
// The push never runs in the checkout: harnessd makes a scratch bare
// repository whose objects/info/alternates names the checkout's object
// store, so git reads the checkout's objects (data) and nothing else of it:
// no config (pushurl, mirror, receivepack, insteadOf, sshCommand,
// credential helpers, hooksPath, aliases, protocol settings), no hooks.
// The credential is resolved as the user's git would (`git credential
// fill` with the user's global and system configuration, run from the
// scratch repository, never from the checkout) and handed to the pushing
// git through a pipe on file descriptor 3, read by a one-line helper: it
// is never in an argument, an environment variable or a file.
//
// Order of one push:
//  1. Prepare resolves the remote's URL from the checkout's config
//     (refusing mirror, a differing pushurl, several urls, an insteadOf
//     that would rewrite it) and the local ref's commit;
//  2. a person approves exactly that (URL without credentials, refs,
//     commit, force);
//  3. Push makes the scratch repository, fills the credential, runs
//     `git push --porcelain <url> [+]<commit>:<remote ref>` and parses
//     the remote's old and new commit.
package gitpush
