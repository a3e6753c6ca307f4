package sandbox

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/harnessd/harnessd/internal/pathsafe"
)

// Landlock access rights of a confined process.
const (
	accessRead  = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir)
	accessWrite = landlock.AccessFSSet(ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym |
		ll.AccessFSTruncate | ll.AccessFSRefer)
	// accessDevRW is what the few writable device files get.
	accessDevRW = landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev)
)

// landlockConfig is the ruleset configuration: the newest ABI go-landlock
// knows, downgraded to what the kernel has (best effort), with TCP bind
// and connect handled (denied unless a rule allows) and signals and
// abstract unix sockets scoped to the domain. A granted network leaves TCP
// open, unless it is narrowed to ports (netRules adds them).
func landlockConfig(network bool, ports []int) landlock.Config {
	c := landlock.V7.BestEffort()
	if network && len(ports) == 0 {
		// Handle the file system and the scopes only: TCP stays open.
		c = landlock.Config{HandledAccessFS: landlock.V7.HandledAccessFS, Scoped: landlock.V7.Scoped}.BestEffort()
	}
	return c
}

// netRules are the TCP connect rules of a network narrowed to ports.
func netRules(p Policy) []landlock.Rule {
	if !p.Network {
		return nil
	}
	var rs []landlock.Rule
	for _, port := range p.ConnectPorts {
		if port > 0 && port < 1<<16 {
			rs = append(rs, landlock.ConnectTCP(uint16(port)))
		}
	}
	return rs
}

// rules returns the Landlock rules of p: what the process may read and
// write, the secret paths carved out of the checkout.
func rules(p Policy, tmp string, env envInfo) []landlock.Rule {
	var rs []landlock.Rule
	ro := func(paths ...string) {
		for _, d := range paths {
			rs = append(rs, landlock.PathAccess(accessRead, d).IgnoreIfMissing())
		}
	}
	rw := func(paths ...string) {
		for _, d := range paths {
			rs = append(rs, landlock.PathAccess(accessRead|accessWrite, d).IgnoreIfMissing())
		}
	}
	// The system, with its own secrets carved out of /etc.
	for _, d := range systemReadDirs() {
		if d == "/etc" {
			rs = append(rs, carve("/etc", relTo("/etc", systemSecrets()), accessRead)...)
			continue
		}
		ro(d)
	}
	ro("/proc", "/sys")
	// /dev: listable, and only the harmless devices open (a daemon run as
	// root must not hand out its disks).
	rs = append(rs, landlock.PathAccess(landlock.AccessFSSet(ll.AccessFSReadDir), "/dev").IgnoreIfMissing(),
		landlock.PathAccess(landlock.AccessFSSet(ll.AccessFSReadFile), "/dev/random", "/dev/urandom").IgnoreIfMissing())
	for _, f := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"} {
		rs = append(rs, landlock.PathAccess(accessDevRW, f).IgnoreIfMissing())
	}
	// Tools and caches: readable, with the credential files in them (a
	// ~/.cargo on PATH holds credentials.toml) closed. Writable only in
	// namespaces, where each cache is a copy-on-write layer whose writes
	// are dropped with the command: never the user's own.
	for _, d := range env.tools {
		rs = append(rs, carve(d, relTo(d, env.creds), accessRead)...)
	}
	for _, d := range p.Caches {
		r := accessRead
		if env.ns && p.Profile != Read && p.Profile != Target {
			r |= accessWrite
		}
		rs = append(rs, carve(d, relTo(d, env.creds), r)...)
	}
	// The checkout: reads of everything but its secrets. When it is
	// writable, the write rights cover the whole tree: Landlock cannot grant
	// "create in this directory" without granting it below, and a carve
	// would keep new top-level files from being written. What keeps .git
	// read-only and the secrets closed to writes is then the mount layer
	// (Prepare refuses a writable checkout with a .git dir without it).
	if p.Root != "" {
		rs = append(rs, carve(p.Root, p.Secrets, accessRead)...)
		if p.writesRoot() {
			rs = append(rs, landlock.PathAccess(accessWrite, p.Root).IgnoreIfMissing())
		}
	}
	ro(p.GitDirs...)
	for _, f := range p.ReadOnly {
		if fi, err := os.Stat(f); err == nil {
			r := accessRead
			if !fi.IsDir() {
				r &= fileRights
			}
			rs = append(rs, landlock.PathAccess(r, f))
		}
	}
	for _, w := range p.Writable {
		if w != p.Root {
			rw(w)
		}
	}
	if tmp != "" {
		rw(tmp)
	}
	return rs
}

// carve returns rules granting rights on root and everything below it
// except the closed paths (relative, slash-separated), which get nothing:
// on the way to each, every sibling gets the rights. Every directory stays listable (names
// are not secrets). Symbolic links get no rule: Landlock checks the object
// they resolve to.
func carve(root string, closed []string, rights landlock.AccessFSSet) []landlock.Rule {
	if len(closed) == 0 {
		return []landlock.Rule{landlock.PathAccess(rights, root).IgnoreIfMissing()}
	}
	// A trie of the carved paths.
	type node struct {
		kids   map[string]*node
		secret bool
	}
	top := &node{kids: map[string]*node{}}
	mark := func(s string, f func(n *node)) {
		n := top
		for _, part := range strings.Split(strings.Trim(s, "/"), "/") {
			if part == "" || part == "." || part == ".." {
				continue
			}
			k, ok := n.kids[part]
			if !ok {
				k = &node{kids: map[string]*node{}}
				n.kids[part] = k
			}
			n = k
		}
		if n != top {
			f(n)
		}
	}
	for _, s := range closed {
		mark(s, func(n *node) { n.secret = true })
	}
	rs := []landlock.Rule{landlock.PathAccess(landlock.AccessFSSet(ll.AccessFSReadDir), root).IgnoreIfMissing()}
	var walk func(dir string, n *node)
	walk = func(dir string, n *node) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		names := make([]string, 0, len(ents))
		for _, e := range ents {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		for _, name := range names {
			p := filepath.Join(dir, name)
			k := n.kids[name]
			switch {
			case k != nil && k.secret:
				continue // closed
			case k != nil:
				if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
					rs = append(rs, landlock.PathAccess(landlock.AccessFSSet(ll.AccessFSReadDir), p))
					walk(p, k)
				}
			default:
				fi, err := os.Lstat(p)
				if err != nil || fi.Mode()&os.ModeSymlink != 0 {
					continue
				}
				if pathsafe.HardLinked(fi) && !inObjects(dir) {
					// A rule binds the inode, not the name: it would open
					// the file's other names too, outside the root.
					continue
				}
				r := rights
				if !fi.IsDir() {
					r &= fileRights
				}
				rs = append(rs, landlock.PathAccess(r, p))
			}
		}
	}
	walk(root, top)
	return rs
}

// inObjects reports whether dir is in a git object store, whose files are
// content-addressed and immutable (a local clone hard-links them): their
// other names hold the same objects.
func inObjects(dir string) bool {
	d := filepath.ToSlash(dir)
	return strings.HasSuffix(d, "/.git/objects") || strings.Contains(d, "/.git/objects/")
}

// fileRights are the rights that apply to a file (Landlock refuses a file
// rule with directory rights).
const fileRights = landlock.AccessFSSet(ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev)

// relTo returns the paths below dir, relative to it.
func relTo(dir string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if r, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(r, "..") {
			out = append(out, filepath.ToSlash(r))
		}
	}
	return out
}

// rulesetFD builds a Landlock ruleset for p and returns its fd and the
// restrict flags; fd -1 when the kernel has no Landlock.
func rulesetFD(p Policy, tmp string, env envInfo) (int, uint32, error) {
	return landlockConfig(p.Network, p.ConnectPorts).NewRulesetFD(append(rules(p, tmp, env), netRules(p)...)...)
}

// secondLayerFD is the per-command layer stacked on the cached first one:
// reads anywhere the first layer allows; writes in the command's own tmp,
// its writable dirs and, on the Fast Path, harnessd's build cache (layers
// intersect: both must allow an access, so the first layer's carve-outs
// hold).
func secondLayerFD(p Policy, tmp, cache string) (int, uint32, error) {
	rs := []landlock.Rule{
		landlock.PathAccess(accessRead, "/"),
		landlock.PathAccess(accessDevRW, "/dev/null", "/dev/zero", "/dev/full", "/dev/tty").IgnoreIfMissing(),
		landlock.PathAccess(accessRead|accessWrite, tmp),
	}
	for _, d := range p.Writable {
		rs = append(rs, landlock.PathAccess(accessRead|accessWrite, d).IgnoreIfMissing())
	}
	if (p.Profile == Read || p.Profile == Target) && cache != "" {
		// harnessd's own build cache (the Fast Path's GOCACHE).
		rs = append(rs, landlock.PathAccess(accessRead|accessWrite, cache).IgnoreIfMissing())
	}
	return landlockConfig(p.Network, p.ConnectPorts).NewRulesetFD(append(rs, netRules(p)...)...)
}
