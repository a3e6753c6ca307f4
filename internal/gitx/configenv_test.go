package gitx

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// envPairs decodes ConfigEnv's output, checking its format: COUNT first,
// then KEY_i/VALUE_i for i = 0..n-1 in order, nothing else, and no key twice
// (compared as git compares keys).
func envPairs(t *testing.T, env []string) []override {
	t.Helper()
	if len(env) == 0 || !strings.HasPrefix(env[0], "GIT_CONFIG_COUNT=") {
		t.Fatalf("env %q does not start with GIT_CONFIG_COUNT", env)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(env[0], "GIT_CONFIG_COUNT="))
	if err != nil || len(env) != 1+2*n {
		t.Fatalf("count %q with %d entries", env[0], len(env))
	}
	seen := map[string]bool{}
	var out []override
	for i := 0; i < n; i++ {
		k, ok1 := strings.CutPrefix(env[1+2*i], "GIT_CONFIG_KEY_"+strconv.Itoa(i)+"=")
		v, ok2 := strings.CutPrefix(env[2+2*i], "GIT_CONFIG_VALUE_"+strconv.Itoa(i)+"=")
		if !ok1 || !ok2 {
			t.Fatalf("entry %d: %q %q", i, env[1+2*i], env[2+2*i])
		}
		if c := canonicalConfigKey(k); seen[c] {
			t.Fatalf("key %q twice", k)
		} else {
			seen[c] = true
		}
		out = append(out, override{k, v})
	}
	return out
}

func pairMap(p []override) map[string]string {
	m := map[string]string{}
	for _, o := range p {
		m[o.key] = o.value
	}
	return m
}

func TestConfigEnvFormat(t *testing.T) {
	// Outside any repository: the fixed settings only.
	plain := t.TempDir()
	env, err := ConfigEnv(plain)
	if err != nil {
		t.Fatal(err)
	}
	got := envPairs(t, env)
	if !reflect.DeepEqual(got, configEnvFixed) {
		t.Errorf("outside a repo: got %v, want the fixed set", got)
	}
	m := pairMap(got)
	for k, v := range map[string]string{
		"core.fsmonitor": "false", "core.pager": "cat", "core.sshCommand": "false", "core.hooksPath": "/dev/null",
		"core.editor": "false", "sequence.editor": "false", "core.askPass": "", "gpg.program": "false",
		"gpg.openpgp.program": "false", "gpg.x509.program": "false", "gpg.ssh.program": "false",
		"credential.helper": "", "protocol.allow": "never", "core.alternateRefsCommand": "",
		"safe.bareRepository": "explicit",
	} {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	if _, ok := m["uploadpack.packObjectsHook"]; ok {
		t.Error("uploadpack.packObjectsHook is only read from protected config; an empty one would break upload-pack")
	}
	if _, ok := m["diff.external"]; ok {
		t.Error("an unconditional empty diff.external makes every git diff fail")
	}

	// A repository: drivers with dots, quotes, '=' and case in their names;
	// the other sections; duplicates of fixed keys.
	dir := newRepo(t)
	writeConfig(t, dir, "[core]\n\trepositoryformatversion = 0\n"+
		"[filter \"a.b\"]\n\tclean = x\n"+
		"[filter \"q\\\"x\"]\n\tsmudge = x\n"+
		"[filter \"e=q\"]\n\tclean = x\n"+
		"[Filter \"CamelCase\"]\n\tclean = x\n"+
		"[filter.Legacy]\n\tclean = x\n"+
		"[diff \"tc\"]\n\ttextconv = x\n"+
		"[diff \"cmd\"]\n\tcommand = x\n"+
		"[diff]\n\texternal = x\n"+
		"[merge \"m\"]\n\tdriver = x\n"+
		"[protocol \"ext\"]\n\tallow = always\n"+
		"[protocol \"evil\"]\n\tallow = always\n"+
		"[man \"v\"]\n\tcmd = x\n"+
		"[browser \"b\"]\n\tcmd = x\n"+
		"[difftool \"d\"]\n\tcmd = x\n"+
		"[mergetool \"mt\"]\n\tpath = x\n"+
		"[tar \"tar.gz\"]\n\tcommand = x\n"+
		"[tar \"evil\"]\n\tcommand = x\n"+
		"[submodule \"s\"]\n\tupdate = !x\n"+
		"[submodule \"fine\"]\n\tupdate = rebase\n"+
		"[lfs \"customtransfer.t\"]\n\tpath = x\n"+
		"[lfs \"extension.e\"]\n\tclean = x\n"+
		"[lfs]\n\tstandalonetransferagent = t\n"+
		"[pager]\n\tlog = x\n")
	env, err = ConfigEnv(dir)
	if err != nil {
		t.Fatal(err)
	}
	m = pairMap(envPairs(t, env))
	want := map[string]string{
		"filter.a.b.clean": "", "filter.a.b.smudge": "", "filter.a.b.process": "", "filter.a.b.required": "false",
		"filter.q\"x.smudge": "", "filter.e=q.clean": "", "filter.CamelCase.clean": "", "filter.legacy.clean": "",
		"diff.tc.textconv": "cat", "diff.cmd.textconv": "cat", "diff.cmd.command": "", "diff.external": "",
		"merge.m.driver": "false", "protocol.ext.allow": "never", "protocol.evil.allow": "never",
		"man.v.cmd": "false", "man.v.path": "false", "browser.b.cmd": "false", "difftool.d.cmd": "false",
		"mergetool.mt.path": "false", "tar.tar.gz.command": "gzip -cn", "tar.evil.command": "false",
		"submodule.s.update": "checkout", "lfs.customtransfer.t.path": "false", "lfs.extension.e.clean": "false",
		"lfs.standalonetransferagent": "", "pager.log": "cat",
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	for _, k := range []string{"diff.tc.command", "submodule.fine.update"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s is set", k)
		}
	}

	// git reads every entry back as command-line config, with the same
	// key and value.
	cmd := exec.Command("git", "config", "--list", "--show-scope", "-z")
	cmd.Dir = dir
	cmd.Env = append(StripGitEnv(HardenedEnv(os.Environ())), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git config --list: %v", err)
	}
	fromGit := map[string]string{}
	items := strings.Split(string(out), "\x00") // scope, "key\nvalue", ...
	for i := 0; i+1 < len(items); i += 2 {
		if items[i] != "command" {
			continue
		}
		k, v, _ := strings.Cut(items[i+1], "\n")
		fromGit[k] = v
	}
	for k, v := range m {
		if got, ok := fromGit[canonicalConfigKey(k)]; !ok || got != v {
			t.Errorf("git reads %s as %q (set %v), want %q", k, got, ok, v)
		}
	}

	// The -c arguments refuse what they cannot express.
	if _, err := driverOverrides(dir); errs.CodeOf(err) != errs.PolicyDenied {
		t.Errorf("driverOverrides with a name containing '=': %v, want POLICY_DENIED", err)
	}
}

func TestStripGitEnv(t *testing.T) {
	in := []string{
		"PATH=/bin", "HOME=/h",
		"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=evil", "GIT_CONFIG_KEY_17=x", "GIT_CONFIG_VALUE_x=y",
		"GIT_CONFIG_PARAMETERS='core.pager'='evil'", "GIT_CONFIG=/x", "GIT_CONFIG_GLOBAL=/x", "GIT_CONFIG_SYSTEM=/x",
		"GIT_DIR=/x", "GIT_WORK_TREE=/x", "GIT_COMMON_DIR=/x", "GIT_INDEX_FILE=/x", "GIT_OBJECT_DIRECTORY=/x",
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=/x", "GIT_EXEC_PATH=/x", "GIT_SSH=/x", "GIT_SSH_COMMAND=x", "GIT_ASKPASS=x",
		"GIT_EXTERNAL_DIFF=x", "GIT_PAGER=evil", "GIT_TEMPLATE_DIR=/x", "GIT_PROXY_COMMAND=x", "GIT_ALLOW_PROTOCOL=ext",
		"GIT_EDITOR=x", "GIT_SEQUENCE_EDITOR=x",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME=A", "GIT_DIRX=keep", "NOEQUALS",
		"GIT_PAGER=evil2",
	}
	got := StripGitEnv(in)
	want := []string{"PATH=/bin", "HOME=/h", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME=A", "GIT_DIRX=keep", "NOEQUALS", "GIT_PAGER=cat"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := StripGitEnv(nil); !reflect.DeepEqual(got, []string{"GIT_PAGER=cat"}) {
		t.Errorf("nil: %q", got)
	}
	// The input is not modified.
	if in[2] != "GIT_CONFIG_COUNT=2" {
		t.Error("input modified")
	}
}

// TestConfigEnvFailsClosed covers the limits and files the scanner will not
// read: each makes ConfigEnv (and harnessd's own calls) refuse.
func TestConfigEnvFailsClosed(t *testing.T) {
	t.Run("too many include files", func(t *testing.T) {
		dir := newRepo(t)
		inc := t.TempDir()
		var cfg strings.Builder
		for i := 0; i <= maxConfigFiles; i++ {
			p := filepath.Join(inc, "f"+strconv.Itoa(i))
			writeFile(t, inc, "f"+strconv.Itoa(i), "[core]\n")
			cfg.WriteString("[include]\n\tpath = " + p + "\n")
		}
		// The driver hides in the last file, past the limit.
		writeFile(t, inc, "f"+strconv.Itoa(maxConfigFiles), "[filter \"late\"]\n\tclean = x\n")
		writeConfig(t, dir, cfg.String())
		assertPolicyDenied(t, dir)
	})
	t.Run("oversized config", func(t *testing.T) {
		dir := newRepo(t)
		writeConfig(t, dir, "[core]\n#"+strings.Repeat("x", maxConfigBytes)+"\n[filter \"late\"]\n\tclean = x\n")
		assertPolicyDenied(t, dir)
	})
	t.Run("too many drivers", func(t *testing.T) {
		dir := newRepo(t)
		var cfg strings.Builder
		for i := 0; i <= maxDriverEntries; i++ {
			cfg.WriteString("[filter \"f" + strconv.Itoa(i) + "\"]\n")
		}
		writeConfig(t, dir, cfg.String())
		assertPolicyDenied(t, dir)
	})
	t.Run("fifo include", func(t *testing.T) {
		dir := newRepo(t)
		fifo := filepath.Join(t.TempDir(), "fifo")
		if err := exec.Command("mkfifo", fifo).Run(); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		writeConfig(t, dir, "[include]\n\tpath = "+fifo+"\n")
		assertPolicyDenied(t, dir) // and does not block
	})
	t.Run("directory include is empty", func(t *testing.T) {
		dir := newRepo(t)
		writeConfig(t, dir, "[include]\n\tpath = "+t.TempDir()+"\n[filter \"x\"]\n")
		if _, err := ConfigEnv(dir); err != nil {
			t.Fatal(err)
		}
	})
}

func assertPolicyDenied(t *testing.T, dir string) {
	t.Helper()
	if env, err := ConfigEnv(dir); errs.CodeOf(err) != errs.PolicyDenied || env != nil {
		t.Errorf("ConfigEnv: %d entries, %v; want POLICY_DENIED", len(env), err)
	}
	if _, err := driverOverrides(dir); errs.CodeOf(err) != errs.PolicyDenied {
		t.Errorf("driverOverrides: %v; want POLICY_DENIED", err)
	}
}

// TestConfigEnvRevalidates edits files the scan read (an included file, a
// file an include names that did not exist yet) and checks the next call
// sees the change.
func TestConfigEnvRevalidates(t *testing.T) {
	dir := newRepo(t)
	inc := t.TempDir()
	writeFile(t, inc, "a.cfg", "[core]\n\txy = 12\n[include]\n\tpath = b.cfg\n")
	writeConfig(t, dir, "[include]\n\tpath = "+filepath.Join(inc, "a.cfg")+"\n")
	has := func(key string) bool {
		env, err := ConfigEnv(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, ok := pairMap(envPairs(t, env))[key]
		return ok
	}
	if has("filter.late.clean") {
		t.Fatal("filter before it exists")
	}
	// Same size, so only the mtime/ctime/inode tells.
	writeFile(t, inc, "a.cfg", "[filter \"late\"]\n[include]\n\tpath = b.cfg\n")
	if !has("filter.late.clean") {
		t.Fatal("edit of an included file not seen")
	}
	writeFile(t, inc, "b.cfg", "[diff \"later\"]\n")
	if !has("diff.later.textconv") {
		t.Fatal("a newly created included file not seen")
	}
}
