// Package gitx runs git for harnessd with hardening flags and a scrubbed
// environment, and parses its status, diff and numstat output.
//
// Every git process harnessd starts goes through [Git.Cmd] or [Git.Run], so
// the protections below apply to all of them.
//
// # Threat model
//
// Two inputs are untrusted. The first is the repository's own configuration
// (.git/config, config.worktree and files they include), which an agent with
// write access to the checkout can change. The second is the revisions and
// paths an agent supplies. The user's global configuration (~/.gitconfig)
// and attributes file are not trusted either (any process of the user can
// write them): git reads no system config, no user attributes file
// (core.attributesFile=/dev/null), and as global config only a file
// harnessd writes with an allowlist of the user's variables (identity,
// line endings, the ignore file, safe.directory, the default branch; see
// userconfig.go). Filters installed globally (git-lfs) do not run.
//
// # Global flags (every call)
//
//	--no-pager
//	-c core.fsmonitor=false        no fsmonitor hook (would run a program on every status)
//	-c core.hooksPath=/dev/null    no hooks
//	-c core.pager=cat              never page
//	-c core.editor=false           (also GIT_EDITOR=false) never start an editor
//	-c sequence.editor=false       nor a rebase todo editor
//	-c core.askPass=               never prompt
//	-c core.sshCommand=false       no ssh
//	-c protocol.allow=never        no transport at all, including ext:: and lazy fetches
//	-c credential.helper=          no credential helpers
//	-c diff.external=              no external diff program
//	-c color.ui=false              plain output
//	-c diff.noprefix=false         patches keep a/ and b/ prefixes
//	-c diff.mnemonicPrefix=false, diff.srcPrefix=a/, diff.dstPrefix=b/, diff.relative=false
//	-c core.quotePath=false        raw UTF-8 paths (the parsers use -z anyway)
//	-c commit.gpgSign=false, tag.gpgSign=false, log.showSignature=false
//	                               no gpg.program from the repository config
//	-c safe.bareRepository=explicit
//	                               no implicit bare repository (a directory in
//	                               the work tree that looks like one)
//	-c core.attributesFile=/dev/null
//	                               no attributes file of the user
//	-c core.commentChar=#          --cleanup=strip keeps harnessd's trailers
//
// core.untrackedCache keeps its default, which is the faster choice.
//
// Drivers that are named by .gitattributes but defined in the repository
// config would run an arbitrary command. gitx reads the repository's config
// files without running git, with a port of git's own config reader (UTF-8
// BOM, case-insensitive sections and keys, quoted and escaped subsections,
// legacy [section.sub] headers, quoted values, continuation lines, keys
// without "="), following include.path and every includeIf.<condition>.path
// whatever the condition (relative to the including file, with ~/, ~user/
// and %(prefix)/ expanded), and discovering the repository as git does (a
// .git file, a commondir file in any git dir, an invalid .git directory git
// would skip, a bare repository). It does the same for every populated
// submodule named by a gitlink in the index, since git status and diff run
// git inside them. It caches the result by the stamp of every file read or
// looked for, and neutralises each driver it finds: filter.<x>.clean/smudge/
// process are emptied and required=false (git status runs the clean filter on
// any file whose stat data changed), diff.<x>.textconv becomes cat (identity)
// and merge.<x>.driver becomes false (the merge reports a conflict instead of
// running the program); protocol.<x>.allow, which beats protocol.allow,
// becomes never. A driver whose name cannot be written as a -c key (it
// contains '=') makes every call fail closed with POLICY_DENIED, and so does
// a scan that cannot finish: a config file that cannot be read or is not a
// regular file, more than 64 config files in one repository, a file over 4
// MiB, more than 256 neutralised names or 64 repositories. So does a
// core.worktree naming another directory than the work tree git found
// (harnessd's git would read and stage files outside the checkout; a
// submodule's config names its own work tree, which passes).
//
// # Git run through a wrapper
//
// A command an agent runs (env git, timeout git, sh -c, find -exec, xargs,
// a build script) starts git without these flags. [ConfigEnv] returns
// GIT_CONFIG_COUNT/GIT_CONFIG_KEY_<i>/GIT_CONFIG_VALUE_<i> entries, which
// git (>= 2.31) reads as command-line config in every process and passes to
// the git processes it starts: the fixed settings above (fsmonitor, hooks,
// pager, editors, askpass, ssh, core.alternateRefsCommand, credential
// helpers, protocol.allow and the usual protocol.<name>.allow, the gpg
// programs and signing, safe.bareRepository) and what the scan found, also
// man/browser/difftool/mergetool commands, tar filters, submodule update
// commands, git-lfs transfer agents and extensions, pager.<cmd> and
// diff.external. diff.<x>.command and diff.external are emptied only where
// the repository sets them: an empty one makes git diff fail. [StripGitEnv]
// removes inherited variables that redirect git (GIT_DIR, GIT_CONFIG_*,
// GIT_EXEC_PATH, GIT_ALLOW_PROTOCOL, ...) and forces GIT_PAGER=cat. A
// spawned process gets append(StripGitEnv(env), ConfigEnv(dir)...).
//
// [Git.Diff] additionally passes --no-ext-diff --no-textconv --no-color.
// Other callers of [Git.Run] that run diff, log -p or show should pass the
// same flags.
//
// # Environment
//
// Only PATH, HOME, LANG, LC_ALL, TMPDIR and USER are taken from the current
// environment; everything else (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE,
// GIT_EXEC_PATH, GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT, GIT_EXTERNAL_DIFF,
// GIT_SSH*, GIT_ASKPASS, ...) is dropped. Then GIT_TERMINAL_PROMPT=0,
// GIT_OPTIONAL_LOCKS=0 (status never takes index.lock), GIT_PAGER=cat,
// PAGER=cat, GIT_EDITOR=false, GIT_CONFIG_NOSYSTEM=1,
// GIT_CONFIG_GLOBAL=/dev/null (replaced by the file of UserConfigEnv on
// every call Cmd builds), GIT_ATTR_NOSYSTEM=1,
// GIT_NO_LAZY_FETCH=1, GIT_PROTOCOL_FROM_USER=0 and LC_ALL=C are set.
// Stdin is /dev/null.
//
// # Agent input
//
// Revisions pass [CheckRev] (or [ValidateRev]) and paths pass
// [ValidatePathspec] before they reach git, so neither can start with '-'
// and no revision is spelled as a path. Revisions follow --end-of-options
// (git >= 2.24; detected once per binary) and paths always follow "--".
// git diff with exactly two arguments after its options, the first outside
// the work tree, runs in its implicit --no-index mode and compares files
// (a file named "--" in the repository supplies the second): [Git.Diff]
// therefore passes ":/" (the whole tree) after "--" when a revision is given
// without paths, so git never takes that mode whatever the revision.
//
// # Output and errors
//
// Output is bounded: [Git.Run] keeps at most maxOut bytes of stdout and 64 KiB
// of stderr. Failures are *errs.Error values: NOT_A_GIT_REPOSITORY,
// NOT_FOUND (missing directory or unknown revision), INVALID_ARGUMENT,
// CONCURRENT_MODIFICATION (another writer raced git: "short read while
// indexing", a held index.lock or other .lock, "unable to write new index
// file", a ref that moved ("is at A but expected B"); details "retryable":
// true, and the message says to retry), STORAGE_FULL (git reported ENOSPC
// or EDQUOT), TIMEOUT/CANCELLED (context), UNAVAILABLE (no git binary) or
// INTERNAL, with git's trimmed stderr in the message.
//
// [Git.Status] leaves out untracked temp files of internal/patch
// (patch.IsTempName), which only a crash leaves in the work tree.
package gitx
