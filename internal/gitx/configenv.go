package gitx

import (
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
)

// Git run through a wrapper (env git, timeout git, find -exec git, sh -c,
// xargs git, a build script) gets no -c arguments from harnessd, but it
// still reads GIT_CONFIG_COUNT, GIT_CONFIG_KEY_<i> and GIT_CONFIG_VALUE_<i>
// (git >= 2.31) from its environment, as command-line config, which beats
// every config file, and passes them on to the git processes it starts
// (submodules included). ConfigEnv builds those variables; StripGitEnv
// removes inherited ones that would redirect or subvert git.

// configEnvFixed is set for every git, whatever the repository.
var configEnvFixed = []override{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.pager", "cat"},
	{"core.editor", "false"},
	{"sequence.editor", "false"},
	{"core.askPass", ""},
	{"core.sshCommand", "false"},
	{"core.alternateRefsCommand", ""},
	{"credential.helper", ""}, // an empty helper clears the list
	// protocol.<name>.allow beats protocol.allow, so the usual names are
	// pinned too (and any other a repository sets is added by the scan).
	{"protocol.allow", "never"},
	{"protocol.ext.allow", "never"},
	{"protocol.fd.allow", "never"},
	{"protocol.file.allow", "never"},
	{"protocol.git.allow", "never"},
	{"protocol.ssh.allow", "never"},
	{"protocol.http.allow", "never"},
	{"protocol.https.allow", "never"},
	{"protocol.ftp.allow", "never"},
	{"protocol.ftps.allow", "never"},
	{"gpg.program", "false"},
	{"gpg.openpgp.program", "false"},
	{"gpg.x509.program", "false"},
	{"gpg.ssh.program", "false"},
	{"gpg.ssh.defaultKeyCommand", "false"},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"log.showSignature", "false"},
	// No implicit bare repositories (a directory in the work tree that
	// looks like one, with its own config); git >= 2.38.
	{"safe.bareRepository", "explicit"},
}

// ConfigEnv returns environment entries (GIT_CONFIG_COUNT=<n>, then
// GIT_CONFIG_KEY_<i>=<key> and GIT_CONFIG_VALUE_<i>=<value> for i < n) that
// neutralise, for any git started in or below dir with them, the programs a
// repository's config could make git run: the fixed settings above
// (fsmonitor, hooks, pager, editors, askpass, ssh, alternate refs command,
// credential helpers, transports, gpg programs, implicit bare
// repositories), and for the repository containing dir and its populated
// submodules, every filter, diff and merge driver, protocol policy, man
// viewer, web browser, difftool/mergetool, tar filter, submodule update
// command, git-lfs transfer agent and extension, pager.<cmd> and
// diff.external the scan finds (see config.go). Append them after
// StripGitEnv of the base environment; git must give `~` in include paths the
// same HOME as this process.
//
// It fails closed: when the repository's config cannot be scanned (a limit,
// an unreadable file), it returns a POLICY_DENIED error and no entries.
// Unlike -c arguments, these variables can carry a driver name containing
// '=', so such names are neutralised, not refused.
//
// git older than 2.31 ignores these variables; safe.bareRepository needs
// 2.38.
func ConfigEnv(dir string) ([]string, error) {
	pairs := append([]override(nil), configEnvFixed...)
	if e := scanFor(dir); e != nil {
		if e.err != nil {
			return nil, e.err
		}
		pairs = append(pairs, e.env...)
	}
	seen := make(map[string]bool, len(pairs))
	out := make([]string, 1, 1+2*len(pairs))
	n := 0
	for _, p := range pairs {
		k := canonicalConfigKey(p.key)
		if seen[k] {
			continue
		}
		if strings.ContainsAny(p.key, "\n\x00") || strings.IndexByte(p.value, 0) >= 0 {
			return nil, errs.New(errs.PolicyDenied, "repository config names %q, which cannot be overridden; refusing to run git", p.key)
		}
		seen[k] = true
		idx := strconv.Itoa(n)
		out = append(out, "GIT_CONFIG_KEY_"+idx+"="+p.key, "GIT_CONFIG_VALUE_"+idx+"="+p.value)
		n++
	}
	out[0] = "GIT_CONFIG_COUNT=" + strconv.Itoa(n)
	return out, nil
}

// canonicalConfigKey lower-cases the section and the key of a variable name
// and keeps the subsection, as git_config_parse_key does.
func canonicalConfigKey(k string) string {
	first := strings.IndexByte(k, '.')
	last := strings.LastIndexByte(k, '.')
	if first < 0 {
		return strings.ToLower(k)
	}
	return strings.ToLower(k[:first]) + k[first:last] + strings.ToLower(k[last:])
}

// stripGitVars are removed by StripGitEnv: they point git at other
// repositories, config, object stores or programs.
var stripGitVars = []string{
	"GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
	"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
	"GIT_EXEC_PATH", "GIT_TEMPLATE_DIR",
	"GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_PROXY_COMMAND",
	"GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
	// Beats protocol.allow and every protocol.<name>.allow.
	"GIT_ALLOW_PROTOCOL",
	// Change how pathspecs read: literal ones would turn harnessd's
	// exclusions (":(exclude)...") into plain names.
	"GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS",
}

// StripGitEnv returns env without the inherited variables that change what
// git reads or runs: GIT_CONFIG_COUNT and every GIT_CONFIG_KEY_<i> and
// GIT_CONFIG_VALUE_<i>, GIT_CONFIG_PARAMETERS, GIT_CONFIG,
// GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM, GIT_DIR, GIT_WORK_TREE,
// GIT_COMMON_DIR, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY,
// GIT_ALTERNATE_OBJECT_DIRECTORIES, GIT_EXEC_PATH, GIT_TEMPLATE_DIR,
// GIT_SSH, GIT_SSH_COMMAND, GIT_ASKPASS, GIT_PROXY_COMMAND,
// GIT_EXTERNAL_DIFF, GIT_EDITOR, GIT_SEQUENCE_EDITOR (core.editor and
// sequence.editor from ConfigEnv then apply), GIT_ALLOW_PROTOCOL and the
// pathspec switches (GIT_LITERAL_PATHSPECS and friends). Any
// GIT_PAGER is replaced by one GIT_PAGER=cat at the end, since GIT_PAGER
// beats core.pager and pager.<cmd>. Other entries keep their order.
func StripGitEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if stripGitVar(name) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_PAGER=cat")
}

func stripGitVar(name string) bool {
	if strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_") {
		return true
	}
	for _, v := range stripGitVars {
		if name == v {
			return true
		}
	}
	return false
}
