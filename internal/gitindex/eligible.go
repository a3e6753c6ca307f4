package gitindex

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// ParseConfigList parses the output of `git config -z --list`: records
// "key\nvalue" separated by NULs, where a key without a value (git's
// implicit true, "[core] bare") has no newline. Keys are lowercased (git
// already prints section and variable names lowercased; subsections keep
// their case in git, but nothing Eligible reads has one that matters);
// an implicit true is stored as "true". Each key maps to its values in the
// order git printed them, so the last one is the effective one.
func ParseConfigList(b []byte) map[string][]string {
	cfg := map[string][]string{}
	for _, rec := range bytes.Split(b, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		k, v, ok := bytes.Cut(rec, []byte{'\n'})
		val := "true"
		if ok {
			val = string(v)
		}
		key := strings.ToLower(string(k))
		cfg[key] = append(cfg[key], val)
	}
	return cfg
}

// last returns the effective value of key and whether it is set.
func last(cfg map[string][]string, key string) (string, bool) {
	v := cfg[key]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

// boolVal parses a git boolean; ok is false for a value git would not
// accept as one.
func boolVal(s string) (val, ok bool) {
	switch strings.ToLower(s) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0", "":
		return false, true
	}
	return false, false
}

// isTrue reports whether key is set to true (or to something that is not
// clearly false, to stay conservative).
func isTrue(cfg map[string][]string, key string) bool {
	v, set := last(cfg, key)
	if !set {
		return false
	}
	b, ok := boolVal(v)
	return b || !ok
}

// isFalse reports whether key is set to false (or to something that is not
// clearly true).
func isFalse(cfg map[string][]string, key string) bool {
	v, set := last(cfg, key)
	if !set {
		return false
	}
	b, ok := boolVal(v)
	return !b || !ok
}

// inProgress are the files of git dir whose presence means an operation is
// under way (conflicts may appear in the index at any moment).
var inProgress = []struct{ name, reason string }{
	{"MERGE_HEAD", "merge in progress"},
	{"CHERRY_PICK_HEAD", "cherry-pick in progress"},
	{"REVERT_HEAD", "revert in progress"},
	{"rebase-merge", "rebase in progress"},
	{"rebase-apply", "rebase or am in progress"},
	{"sequencer", "sequencer in progress"},
}

// knownExtensions are the index extensions that do not change what a
// status reports: cached trees, resolve-undo, offsets for threaded
// loading, the untracked cache (git's answer is the same with or without
// it; the untracked side of Refresh asks git anyway) and fsmonitor data
// (harnessd's git runs with core.fsmonitor=false, which drops it).
var knownExtensions = map[string]bool{"TREE": true, "REUC": true, "EOIE": true, "IEOT": true, "UNTR": true, "FSMN": true}

// Eligible says whether Refresh can be exact for the checkout whose git
// dir is gitDir (a linked worktree's own; its common dir is found through
// gitDir/commondir), with index ix, effective configuration cfg (see
// ParseConfigList) and the untracked paths of its last exact status. The
// reason names what stands in the way, for users.
//
// It is conservative: anything Refresh does not model exactly is a
// reason. What Refresh models is not: attributes (.gitattributes at any
// level, info/attributes: Refresh reads them per path), end-of-line
// conversion (text, eol, crlf, core.autocrlf), core.filemode=false,
// core.ignorecase, the untracked cache, fsmonitor, submodules and linked
// worktrees.
func Eligible(gitDir string, ix *Index, cfg map[string][]string, untracked []string) (ok bool, reason string) {
	if ix == nil {
		return false, "no index"
	}
	if ix.Version < 2 || ix.Version > 4 {
		return false, "unknown index version"
	}
	if ix.HashSize != 20 && ix.HashSize != 32 {
		return false, "unknown object format"
	}
	want := 20
	if f, _ := last(cfg, "extensions.objectformat"); strings.EqualFold(f, "sha256") {
		want = 32
	} else if f != "" && !strings.EqualFold(f, "sha1") {
		return false, "unknown object format"
	}
	if ix.HashSize != want {
		return false, "object format differs from the index"
	}
	for _, sig := range ix.Extensions {
		switch sig {
		case "link":
			return false, "split index"
		case "sdir":
			return false, "sparse index"
		}
		if !knownExtensions[sig] {
			return false, "index extension " + sig
		}
	}
	for i := range ix.Entries {
		e := &ix.Entries[i]
		switch {
		case e.Stage != 0:
			return false, "unmerged entries"
		case e.SkipWorktree:
			return false, "sparse checkout"
		case e.IntentToAdd:
			return false, "intent-to-add entries"
		case e.AssumeValid:
			return false, "assume-unchanged entries"
		}
	}
	for _, u := range untracked {
		if strings.HasSuffix(u, "/") {
			return false, "nested repositories"
		}
	}
	for _, c := range []struct {
		key, reason string
		bad         func(map[string][]string, string) bool
	}{
		{"core.bare", "bare repository", isTrue},
		{"core.worktree", "core.worktree", isSet},
		{"core.sparsecheckout", "sparse checkout", isTrue},
		{"index.sparse", "sparse index", isTrue},
		{"core.splitindex", "split index", isTrue},
		{"core.trustctime", "core.trustctime=false", isFalse},
		{"core.checkstat", "core.checkStat", isSet},
		{"core.precomposeunicode", "core.precomposeunicode", isTrue},
		{"core.symlinks", "core.symlinks=false", isFalse},
		{"core.attributesfile", "core.attributesFile", isAttributesFile},
		{"attr.tree", "attr.tree", isSet},
	} {
		if c.bad(cfg, c.key) {
			return false, c.reason
		}
	}
	if _, reason := ParseTreeConfig(cfg); reason != "" {
		return false, reason
	}
	for _, p := range inProgress {
		if exists(filepath.Join(gitDir, p.name)) {
			return false, p.reason
		}
	}
	if exists(filepath.Join(gitDir, "info", "sparse-checkout")) && isTrue(cfg, "core.sparsecheckout") {
		return false, "sparse checkout"
	}
	return true, ""
}

// isAttributesFile reports a core.attributesFile that names a file git
// reads: gitx sets it to /dev/null on every call (the user's attributes
// are never read), which is no attributes at all.
func isAttributesFile(cfg map[string][]string, key string) bool {
	v, set := last(cfg, key)
	return set && v != "" && v != "/dev/null"
}

func isSet(cfg map[string][]string, key string) bool {
	v, set := last(cfg, key)
	return set && v != ""
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
