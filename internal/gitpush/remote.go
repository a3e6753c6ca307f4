package gitpush

import (
	"bytes"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
)

// ConfigEntry is one entry of `git config --null --list --show-scope`.
type ConfigEntry struct {
	Scope, Key, Value string
}

// ParseConfigList parses the output of `git config --null --list
// --show-scope`: scope NUL key [LF value] NUL, repeated. Section and
// variable names are lower case (git prints them so), subsections keep
// their case.
func ParseConfigList(b []byte) []ConfigEntry {
	var out []ConfigEntry
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			break
		}
		scope := string(b[:i])
		b = b[i+1:]
		j := bytes.IndexByte(b, 0)
		if j < 0 {
			j = len(b)
		}
		kv := string(b[:j])
		if j < len(b) {
			b = b[j+1:]
		} else {
			b = nil
		}
		k, v, _ := strings.Cut(kv, "\n")
		out = append(out, ConfigEntry{Scope: scope, Key: k, Value: v})
	}
	return out
}

// Remote is a remote as git_push pushes to it.
type Remote struct {
	// Name is the remote's name in the checkout's config.
	Name string
	// URL is what git is given and what people and records read (the
	// approval names it): the configured URL without its user
	// information (ssh keeps its user), a relative path made absolute
	// against the checkout. No password or token is ever in it.
	URL string
	// Scheme is the transport: https, http, ssh or file.
	Scheme string
	// Host and Path are the URL's host (with port) and path, for the
	// credential request; Username is its user, if any.
	Host, Path, Username string
	// password is a password written into the configured URL: the
	// credential then (never displayed).
	password string
}

// HasPassword reports whether the configured URL carried a password.
func (r Remote) HasPassword() bool { return r.password != "" }

// ResolveRemote returns the remote name of the checkout's own config
// entries (scope local or worktree; included files count as local), or a
// coded error:
//   - NOT_FOUND naming the configured remotes when there is none such;
//   - POLICY_DENIED naming the setting when the checkout's config would
//     make the push implicit or send it elsewhere than the URL a person
//     approves: remote.<name>.mirror, a remote.<name>.pushurl other than
//     its url, several urls (git pushes to each), a url.<base>.insteadOf
//     or pushInsteadOf that rewrites it;
//   - INVALID_ARGUMENT for a transport other than https, http, ssh and
//     file (ext::, fd:: and every <helper>:: form included).
func ResolveRemote(entries []ConfigEntry, name, root string) (Remote, error) {
	var urls, pushurls []string
	mirror := false
	known := map[string]bool{}
	type rewrite struct{ key, base, prefix string }
	var rewrites []rewrite
	for _, e := range entries {
		if e.Scope != "local" && e.Scope != "worktree" {
			continue
		}
		section, rest, ok := strings.Cut(e.Key, ".")
		if !ok {
			continue
		}
		dot := strings.LastIndexByte(rest, '.')
		if dot < 0 {
			continue
		}
		sub, variable := rest[:dot], rest[dot+1:]
		switch section {
		case "remote":
			known[sub] = true
			if sub != name {
				continue
			}
			switch variable {
			case "url":
				urls = append(urls, e.Value)
			case "pushurl":
				pushurls = append(pushurls, e.Value)
			case "mirror":
				mirror = isTrue(e.Value)
			}
		case "url":
			if variable == "insteadof" || variable == "pushinsteadof" {
				rewrites = append(rewrites, rewrite{key: e.Key, base: sub, prefix: e.Value})
			}
		}
	}
	if !known[name] || len(urls) == 0 {
		var names []string
		for n := range known {
			names = append(names, n)
		}
		sort.Strings(names)
		return Remote{}, errs.New(errs.NotFound, "unknown remote %q: the checkout's remotes are %v (git remote -v lists them; a person adds one with git remote add NAME URL)", name, names).
			With("remote", name).With("remotes", names)
	}
	deny := func(setting, why string) error {
		return errs.New(errs.PolicyDenied, "the checkout's %s %s: git_push refuses a push the operation does not name (remove the setting with git config --unset, or push elsewhere by hand)", setting, why).
			With("setting", setting).With("remote", name)
	}
	if mirror {
		return Remote{}, deny("remote."+name+".mirror", "makes every push mirror all refs")
	}
	if len(urls) > 1 {
		return Remote{}, deny("remote."+name+".url", "has several values and git pushes to each")
	}
	for _, p := range pushurls {
		if p != urls[0] {
			return Remote{}, deny("remote."+name+".pushurl", "sends pushes to "+RedactURLs(p)+", not to the remote's url "+RedactURLs(urls[0]))
		}
	}
	for _, rw := range rewrites {
		if rw.prefix != "" && strings.HasPrefix(urls[0], rw.prefix) {
			return Remote{}, deny(rw.key, "rewrites "+RedactURLs(urls[0])+" to "+RedactURLs(rw.base+strings.TrimPrefix(urls[0], rw.prefix)))
		}
	}
	r, err := ParseURL(urls[0], root)
	if err != nil {
		return Remote{}, err
	}
	r.Name = name
	return r, nil
}

func isTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "yes", "on", "1":
		return true
	}
	return false
}

// ParseURL parses a remote's URL the way git reads it: scheme://...
// (https, http, ssh, git+ssh, ssh+git, file), the scp-like
// [user@]host:path (ssh), or a local path (file; relative to root).
// Remote helper transports (<helper>::<address>: ext::, fd::, ...) and
// other schemes are INVALID_ARGUMENT.
func ParseURL(raw, root string) (Remote, error) {
	bad := func(why string) error {
		return errs.New(errs.InvalidArgument, "remote url %q: %s; git_push pushes over https, http, ssh or to a local path (file)", RedactURLs(raw), why).With("url", RedactURLs(raw))
	}
	switch {
	case raw == "":
		return Remote{}, bad("empty")
	case strings.ContainsAny(raw, "\x00\n\r"):
		return Remote{}, bad("contains a control character")
	case strings.HasPrefix(raw, "-"):
		return Remote{}, bad("starts with '-'")
	}
	if i := strings.Index(raw, "::"); i >= 0 && !strings.Contains(raw[:i], "/") {
		return Remote{}, bad("a remote helper transport (" + raw[:i] + "::) runs a program")
	}
	if scheme, _, ok := strings.Cut(raw, "://"); ok && !strings.ContainsAny(scheme, "/@:") {
		u, err := url.Parse(raw)
		if err != nil {
			return Remote{}, bad("does not parse")
		}
		s := strings.ToLower(u.Scheme)
		switch s {
		case "git+ssh", "ssh+git":
			s = "ssh"
		case "https", "http", "ssh", "file":
		default:
			return Remote{}, bad("the " + s + " transport is not allowed")
		}
		r := Remote{Scheme: s, Host: u.Host, Path: strings.TrimPrefix(u.Path, "/")}
		if u.User != nil {
			// Over http(s) a user name may be a token (https://TOKEN@host):
			// neither it nor a password goes into git's arguments, which
			// any process may read in /proc; both go to the credential.
			// ssh keeps its user (part of the address, never a secret).
			r.Username = u.User.Username()
			r.password, _ = u.User.Password()
			u.User = nil
			if s == "ssh" && r.Username != "" {
				u.User = url.User(r.Username)
			}
		}
		if s == "file" && u.Host != "" && u.Host != "localhost" {
			return Remote{}, bad("a file URL names no host")
		}
		r.URL = u.String()
		return r, nil
	}
	if i := strings.IndexByte(raw, ':'); i > 0 && !strings.Contains(raw[:i], "/") {
		host := raw[:i]
		r := Remote{Scheme: "ssh", URL: raw, Path: raw[i+1:]}
		if u, h, ok := strings.Cut(host, "@"); ok {
			r.Username, host = u, h
		}
		r.Host = host
		return r, nil
	}
	p := raw
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	return Remote{Scheme: "file", URL: p, Path: p}, nil
}

// userinfo matches the user information of a URL (scheme://user[:pass]@).
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@`)

// RedactURLs removes the user information (user and password) of every
// URL in s: what error messages, logs and records show.
func RedactURLs(s string) string {
	return userinfo.ReplaceAllString(s, "$1")
}
