package gitpush

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

func TestParseRefspec(t *testing.T) {
	tests := []struct {
		in       string
		src, dst string
		bad      string // substring of the error; "" = valid
	}{
		{in: "main", src: "main"},
		{in: "main:release", src: "main", dst: "release"},
		{in: "refs/heads/a:refs/heads/b", src: "refs/heads/a", dst: "refs/heads/b"},
		{in: "HEAD:feature/x", src: "HEAD", dst: "feature/x"},
		{in: "", bad: "empty"},
		{in: "+main", bad: "force: true"},
		{in: ":main", bad: "deleting"},
		{in: "refs/heads/*:refs/heads/*", bad: "patterns"},
		{in: "a:b:c", bad: "more than one"},
		{in: "-main", bad: "'-'"},
		{in: "main:--exec=x", bad: "'-'"},
		{in: "ma..in", bad: ".."},
		{in: "main:rel ease", bad: "space"},
		{in: "main:x.lock", bad: ".lock"},
		{in: "main:a/.b", bad: "start with '.'"},
		{in: "main@{1}", bad: "@{"},
		{in: "main:a\x01", bad: "control"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRefspec(tt.in)
			if tt.bad != "" {
				if err == nil || errs.CodeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), tt.bad) {
					t.Fatalf("ParseRefspec(%q) = %+v, %v; want INVALID_ARGUMENT with %q", tt.in, got, err, tt.bad)
				}
				return
			}
			if err != nil || got.Src != tt.src || got.Dst != tt.dst {
				t.Fatalf("ParseRefspec(%q) = %+v, %v; want %s:%s", tt.in, got, err, tt.src, tt.dst)
			}
		})
	}
}

func TestRemoteRef(t *testing.T) {
	tests := []struct{ local, dst, want, bad string }{
		{"refs/heads/main", "", "refs/heads/main", ""},
		{"refs/heads/main", "release", "refs/heads/release", ""},
		{"refs/tags/v1", "", "refs/tags/v1", ""},
		{"refs/tags/v1", "v2", "refs/tags/v2", ""},
		{"refs/heads/main", "refs/tags/v1", "refs/tags/v1", ""},
		{"refs/heads/main", "refs/notes/x", "", "only refs/heads/ and refs/tags/"},
		{"refs/remotes/origin/main", "", "", "no branch or tag"},
	}
	for _, tt := range tests {
		got, err := RemoteRef(tt.local, tt.dst)
		if tt.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("RemoteRef(%q, %q) = %q, %v; want error %q", tt.local, tt.dst, got, err, tt.bad)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("RemoteRef(%q, %q) = %q, %v; want %q", tt.local, tt.dst, got, err, tt.want)
		}
	}
}

func TestParseConfigList(t *testing.T) {
	raw := "system\x00credential.helper\nstore\x00local\x00remote.Origin.url\nhttps://h/r.git\x00local\x00remote.origin.mirror\x00command\x00a.b\nc\x00"
	got := ParseConfigList([]byte(raw))
	want := []ConfigEntry{{"system", "credential.helper", "store"}, {"local", "remote.Origin.url", "https://h/r.git"},
		{"local", "remote.origin.mirror", ""}, {"command", "a.b", "c"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestResolveRemote(t *testing.T) {
	local := func(kv ...string) []ConfigEntry {
		var out []ConfigEntry
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, ConfigEntry{Scope: "local", Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	url := "https://git.example.com/team/app.git"
	tests := []struct {
		name    string
		entries []ConfigEntry
		remote  string
		want    string
		code    errs.Code
		setting string
	}{
		{name: "plain", entries: local("remote.origin.url", url), remote: "origin", want: url},
		{name: "same pushurl", entries: local("remote.origin.url", url, "remote.origin.pushurl", url), remote: "origin", want: url},
		{name: "unrelated insteadOf", entries: local("remote.origin.url", url, "url.https://other/.insteadof", "https://elsewhere/"), remote: "origin", want: url},
		{name: "token stripped", entries: local("remote.origin.url", "https://ghp_SECRETTOKEN123@git.example.com/team/app.git"), remote: "origin", want: url},
		{name: "unknown", entries: local("remote.origin.url", url), remote: "upstream", code: errs.NotFound},
		{name: "global only", entries: []ConfigEntry{{"global", "remote.origin.url", url}}, remote: "origin", code: errs.NotFound},
		{name: "mirror", entries: local("remote.origin.url", url, "remote.origin.mirror", "true"), remote: "origin", code: errs.PolicyDenied, setting: "remote.origin.mirror"},
		{name: "pushurl elsewhere", entries: local("remote.origin.url", url, "remote.origin.pushurl", "https://evil.example/x.git"), remote: "origin", code: errs.PolicyDenied, setting: "remote.origin.pushurl"},
		{name: "two urls", entries: local("remote.origin.url", url, "remote.origin.url", "https://evil.example/x.git"), remote: "origin", code: errs.PolicyDenied, setting: "remote.origin.url"},
		{name: "insteadOf", entries: local("remote.origin.url", url, "url.https://evil.example/.insteadof", "https://git.example.com/"), remote: "origin", code: errs.PolicyDenied, setting: "url.https://evil.example/.insteadof"},
		{name: "pushInsteadOf", entries: local("remote.origin.url", url, "url.https://evil.example/.pushinsteadof", "https://git."), remote: "origin", code: errs.PolicyDenied, setting: "url.https://evil.example/.pushinsteadof"},
		{name: "ext transport", entries: local("remote.origin.url", "ext::sh -c touch% /tmp/pwned"), remote: "origin", code: errs.InvalidArgument},
		{name: "fd transport", entries: local("remote.origin.url", "fd::3"), remote: "origin", code: errs.InvalidArgument},
		{name: "git protocol", entries: local("remote.origin.url", "git://h/r.git"), remote: "origin", code: errs.InvalidArgument},
		{name: "dash", entries: local("remote.origin.url", "--upload-pack=touch /tmp/x"), remote: "origin", code: errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ResolveRemote(tt.entries, tt.remote, "/work/app")
			if tt.code != "" {
				e := errs.From(err)
				if err == nil || e.Code != tt.code || (tt.setting != "" && e.Details["setting"] != tt.setting) {
					t.Fatalf("ResolveRemote = %+v, %v; want %s naming %q", r, err, tt.code, tt.setting)
				}
				if strings.Contains(e.Message, "SECRETTOKEN") {
					t.Fatalf("the message carries the token: %s", e.Message)
				}
				return
			}
			if err != nil || r.URL != tt.want {
				t.Fatalf("ResolveRemote = %+v, %v; want %s", r, err, tt.want)
			}
		})
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct{ raw, url, scheme, host, user string }{
		{"https://h.example/r.git", "https://h.example/r.git", "https", "h.example", ""},
		{"https://alice:pw@h.example:8443/r.git", "https://h.example:8443/r.git", "https", "h.example:8443", "alice"},
		{"http://127.0.0.1:9/r.git", "http://127.0.0.1:9/r.git", "http", "127.0.0.1:9", ""},
		{"ssh://git@h.example/r.git", "ssh://git@h.example/r.git", "ssh", "h.example", "git"},
		{"ssh://git:pw@h.example/r.git", "ssh://git@h.example/r.git", "ssh", "h.example", "git"},
		{"git@h.example:team/r.git", "git@h.example:team/r.git", "ssh", "h.example", "git"},
		{"/srv/git/r.git", "/srv/git/r.git", "file", "", ""},
		{"../r.git", "/work/r.git", "file", "", ""},
		{"file:///srv/r.git", "file:///srv/r.git", "file", "", ""},
	}
	for _, tt := range tests {
		r, err := ParseURL(tt.raw, "/work/app")
		if err != nil || r.URL != tt.url || r.Scheme != tt.scheme || r.Host != tt.host || r.Username != tt.user {
			t.Errorf("ParseURL(%q) = %+v, %v; want url %s scheme %s host %s user %s", tt.raw, r, err, tt.url, tt.scheme, tt.host, tt.user)
		}
	}
	if r, _ := ParseURL("https://u:p4ssw0rd@h/r", "/"); !r.HasPassword() || strings.Contains(r.URL, "p4ssw0rd") {
		t.Errorf("a URL's password: %+v", r)
	}
	for _, bad := range []string{"", "ext::sh", "foo::bar", "gopher://h/r", "file://evil.example/r", "-x", "a\nb"} {
		if _, err := ParseURL(bad, "/"); errs.CodeOf(err) != errs.InvalidArgument {
			t.Errorf("ParseURL(%q) = %v, want INVALID_ARGUMENT", bad, err)
		}
	}
}

func TestRedact(t *testing.T) {
	c := &Credential{Username: "alice", Password: "tok-0123456789"}
	in := "fatal: unable to access 'https://alice:tok-0123456789@h/r.git/': 401 for tok-0123456789 and ssh://bob:x@h/r"
	got := c.Redact(in)
	for _, leak := range []string{"tok-0123456789", "alice", "bob:x"} {
		if strings.Contains(got, leak) {
			t.Errorf("Redact left %q: %s", leak, got)
		}
	}
	if !strings.Contains(got, "https://h/r.git/") || !strings.Contains(got, "ssh://h/r") {
		t.Errorf("Redact lost the URLs: %s", got)
	}
	if (*Credential)(nil).Redact("https://a:b@h") != "https://h" {
		t.Errorf("a nil credential still strips user information")
	}
}

func TestParsePorcelain(t *testing.T) {
	old, nw := strings.Repeat("a", 40), strings.Repeat("b", 40)
	tests := []struct {
		name, out string
		found     bool
		want      Result
		reason    string
	}{
		{"fast-forward", "To /r\n \t" + nw + ":refs/heads/main\t" + old + ".." + nw + "\nDone\n", true, Result{Flag: " ", Old: old, New: nw, Summary: old + ".." + nw}, ""},
		{"forced", "To /r\n+\t" + nw + ":refs/heads/main\t" + old + "..." + nw + " (forced update)\nDone\n", true, Result{Flag: "+", Old: old, New: nw, Summary: old + "..." + nw + " (forced update)"}, ""},
		{"new", "To /r\n*\t" + nw + ":refs/heads/main\t[new branch]\nDone\n", true, Result{Flag: "*", New: nw, Summary: "[new branch]"}, ""},
		{"up to date", "To /r\n=\t" + nw + ":refs/heads/main\t[up to date]\nDone\n", true, Result{Flag: "=", Old: nw, New: nw, Summary: "[up to date]"}, ""},
		{"other ref", "To /r\n*\t" + nw + ":refs/heads/other\t[new branch]\nDone\n", false, Result{}, ""},
		{"non-ff", "To /r\n!\t" + nw + ":refs/heads/main\t[rejected] (non-fast-forward)\nDone\n", true, Result{}, "non-fast-forward"},
		{"hook", "To /r\n!\t" + nw + ":refs/heads/main\t[remote rejected] (pre-receive hook declined)\nDone\n", true, Result{}, "pre-receive hook declined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := ParsePorcelain(tt.out, "refs/heads/main")
			if tt.reason != "" {
				e := errs.From(err)
				if err == nil || e.Code != errs.PushRejected || e.Details["reason"] != tt.reason {
					t.Fatalf("ParsePorcelain = %+v, %v; want PUSH_REJECTED (%s)", got, err, tt.reason)
				}
				return
			}
			if err != nil || found != tt.found || got != tt.want {
				t.Fatalf("ParsePorcelain = %+v, %v, %v; want %+v, %v", got, found, err, tt.want, tt.found)
			}
		})
	}
}

// The pushing git's arguments and environment never carry the credential,
// run no hook, allow only the remote's transport and reset the helpers.
func TestRequestArgsAndEnv(t *testing.T) {
	q := Request{Scratch: "/s", Remote: Remote{Scheme: "https", URL: "https://h/r.git"}, Commit: "c0ffee", RemoteRef: "refs/heads/main",
		Cred: &Credential{Username: "alice", Password: "tok-SECRET"}}
	args := strings.Join(q.Args(), " ")
	for _, want := range []string{"core.hooksPath=/dev/null", "protocol.allow=never", "protocol.https.allow=always", "credential.helper= ", "http.followRedirects=false", "-- https://h/r.git c0ffee:refs/heads/main"} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %q: %s", want, args)
		}
	}
	env := strings.Join(q.Env([]string{"PATH=/bin", "GIT_ASKPASS=/evil", "GIT_TRACE=1", "GIT_CURL_VERBOSE=1", "HTTPS_PROXY=http://p:3128", "AWS_SECRET=x"}), "\n")
	for _, s := range []string{"tok-SECRET", "alice"} {
		if strings.Contains(args, s) || strings.Contains(env, s) {
			t.Errorf("the credential %q is in the arguments or the environment", s)
		}
	}
	for _, bad := range []string{"GIT_ASKPASS", "GIT_TRACE", "GIT_CURL_VERBOSE", "AWS_SECRET"} {
		if strings.Contains(env, bad+"=") {
			t.Errorf("env keeps %s: %s", bad, env)
		}
	}
	if !strings.Contains(env, "HTTPS_PROXY=http://p:3128") {
		t.Errorf("env drops the proxy: %s", env)
	}
	q.Force = true
	if a := q.Args(); a[len(a)-1] != "+c0ffee:refs/heads/main" {
		t.Errorf("a forced push's refspec: %q", a[len(a)-1])
	}
	q.Cred = nil
	if strings.Contains(strings.Join(q.Args(), " "), "cat <&3") {
		t.Errorf("a push without a credential names the pipe's helper")
	}
}

func TestCredentialEnv(t *testing.T) {
	env := strings.Join(credentialEnv([]string{"HOME=/h", "GIT_DIR=/checkout/.git", "GIT_CONFIG_GLOBAL=", "GIT_CONFIG_SYSTEM=/etc/gc", "GIT_ASKPASS=/x", "SSH_ASKPASS=/y", "DBUS_SESSION_BUS_ADDRESS=unix:z"}, "/scratch"), "\n")
	for _, want := range []string{"HOME=/h", "GIT_CONFIG_SYSTEM=/etc/gc", "DBUS_SESSION_BUS_ADDRESS=unix:z", "GIT_DIR=/scratch", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS="} {
		if !strings.Contains(env, want) {
			t.Errorf("credential env lacks %q:\n%s", want, env)
		}
	}
	for _, bad := range []string{"GIT_DIR=/checkout", "GIT_CONFIG_GLOBAL=\n", "SSH_ASKPASS", "GIT_ASKPASS=/x"} {
		if strings.Contains(env+"\n", bad) {
			t.Errorf("credential env keeps %q:\n%s", bad, env)
		}
	}
}
