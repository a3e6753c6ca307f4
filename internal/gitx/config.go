package gitx

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// Repository config scanning: programs named by a repository's own config
// (a clean filter runs on `git status`, a textconv on `git diff`, and so on)
// would run for anyone who runs git there. The scanner reads that config
// without running git, the way git reads it (see configparse.go), and
// collects the names it must neutralise: driverOverrides turns them into -c
// arguments for harnessd's own calls and ConfigEnv (configenv.go) into
// GIT_CONFIG_* variables for git run through a wrapper.
//
// What is read, per repository: the discovered git dir's common dir config,
// the git dir's config.worktree, every file they include (include.path and
// includeIf.<any condition>.path: a conditional include is scanned whatever
// its condition, since neutralising a driver that would not have been active
// is harmless), and then the same for every populated submodule named by a
// gitlink in the index (git status and diff run git inside them, and the
// overrides reach those children through the environment). Results are
// cached per repository and revalidated by a stamp (size, mtime, and on
// Linux inode and ctime) of every file read or looked for.
//
// The scan fails closed: a file it cannot read, or a limit below, makes it
// return an error instead of a partial answer.

const (
	maxIncludeDepth  = 10 // git dies past this depth, so nothing deeper applies
	maxConfigFiles   = 64 // distinct config files per repository
	maxConfigBytes   = 4 << 20
	maxDriverEntries = 256 // neutralised names (drivers, protocols, tools, ...)
	maxScanRepos     = 64  // the repository and its submodules
	maxScanBytes     = 64 << 20
	maxIndexBytes    = 128 << 20
	maxGitFileBytes  = 1 << 20

	readDeadline = 2 * time.Second // for a file that blocks on read
)

type fileStamp struct {
	path  string
	found bool
	size  int64
	mtime int64
	sys   sysStamp
}

func stampOf(path string, fi os.FileInfo) fileStamp {
	return fileStamp{path: path, found: true, size: fi.Size(), mtime: fi.ModTime().UnixNano(), sys: sysStampOf(fi)}
}

func stamp(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{path: path}
	}
	return stampOf(path, fi)
}

func stampsValid(stamps []fileStamp) bool {
	for _, s := range stamps {
		if stamp(s.path) != s {
			return false
		}
	}
	return true
}

// override is one config variable set to neutralise something.
type override struct{ key, value string }

type scanEntry struct {
	stamps  []fileStamp
	args    []string   // -c arguments for harnessd's own calls
	argsErr error      // a name that cannot be written as a -c key
	env     []override // for ConfigEnv
	err     error      // the scan itself failed
}

var scanCache sync.Map // discovery key -> *scanEntry

// driverOverrides returns the -c arguments neutralising the filter, diff and
// merge drivers (and protocol.<name>.allow settings) defined in the
// repository config of the repository that contains dir and of its populated
// submodules. It returns nil when dir is not inside a repository it can
// find, and an error (fail closed) when the scan fails or a name cannot be
// expressed as a -c key.
func driverOverrides(dir string) ([]string, error) {
	e := scanFor(dir)
	if e == nil {
		return nil, nil
	}
	if e.err != nil {
		return nil, e.err
	}
	return e.args, e.argsErr
}

// scanFor finds the repository containing dir and returns its (cached)
// scan, or nil when there is none.
func scanFor(dir string) *scanEntry {
	locs, err := discoverRepos(dir)
	if err != nil {
		return &scanEntry{err: err}
	}
	if len(locs) == 0 {
		return nil
	}
	var kb strings.Builder
	for _, l := range locs {
		kb.WriteString(l.gitDir)
		kb.WriteByte(0)
		kb.WriteString(l.commonDir)
		kb.WriteByte(0)
		kb.WriteString(l.root)
		kb.WriteByte(0)
	}
	key := kb.String()
	if v, ok := scanCache.Load(key); ok {
		e := v.(*scanEntry)
		if stampsValid(e.stamps) {
			return e
		}
	}
	e := scanRepos(locs)
	scanCache.Store(key, e)
	return e
}

// repoLoc is one repository as git would find it.
type repoLoc struct {
	gitDir    string // as git reaches it (not symlink-resolved)
	commonDir string
	root      string // the work tree: where the .git entry is; "" if bare
}

// discoverRepos mirrors git's discovery (setup_git_directory_gently_1) from
// dir upwards: at each level a ".git" file is followed (git uses it or dies),
// a ".git" directory is used if it is a valid git directory (else git keeps
// looking upwards, and so does this, keeping it as a candidate), and the
// directory itself is taken as a bare repository if it is one (git uses it,
// or refuses with safe.bareRepository=explicit). Every candidate is
// returned; the last is the one a valid discovery stops at. GIT_DIR and
// friends are never honoured: they are stripped from every environment.
func discoverRepos(dir string) ([]repoLoc, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil
	}
	// git walks up from getcwd(), which has no symlinks or "..".
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	var locs []repoLoc
	for {
		p := joinRaw(d, ".git")
		if fi, err := os.Stat(p); err == nil {
			switch {
			case fi.Mode().IsRegular():
				target, ok, err := readGitFile(p)
				if err != nil {
					return nil, err
				}
				if ok {
					l, _, err := makeLoc(target, d)
					if err != nil {
						return nil, err
					}
					locs = append(locs, l)
				}
				// git uses a valid gitfile or dies on an invalid one.
				return locs, nil
			case fi.IsDir():
				l, _, err := makeLoc(p, d)
				if err != nil {
					return nil, err
				}
				locs = append(locs, l)
				if isGitDirectoryAt(p, l.commonDir) {
					return locs, nil
				}
			}
		}
		if validHead(joinRaw(d, "HEAD")) {
			l, _, err := makeLoc(d, "")
			if err != nil {
				return nil, err
			}
			if isGitDirectoryAt(d, l.commonDir) {
				return append(locs, l), nil
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return locs, nil
		}
		d = parent
	}
}

// joinRaw joins without cleaning: "a/link/../b" must reach what the OS
// reaches through the symlink, as git's string concatenation does.
func joinRaw(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// dirOfRaw is path up to and including its last slash ("" if none).
func dirOfRaw(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i+1]
	}
	return ""
}

// readGitFile mirrors read_gitfile_gently: "gitdir: <path>" with trailing
// CR/LF removed, relative to the file's directory. ok is false for a file git
// rejects (it then dies).
func readGitFile(p string) (target string, ok bool, err error) {
	b, _, err := readStamped(p, maxGitFileBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		return "", false, err
	}
	s, found := strings.CutPrefix(string(b), "gitdir: ")
	if !found {
		return "", false, nil
	}
	s = strings.TrimRight(s, "\r\n")
	s = cString([]byte(s))
	if s == "" {
		return "", false, nil
	}
	if !strings.HasPrefix(s, "/") {
		s = dirOfRaw(p) + s
	}
	return s, true, nil
}

// makeLoc resolves the common dir of gitDir (get_common_dir_noenv: a
// "commondir" file, honoured in any git dir, relative to the git dir).
// The stamp is of the commondir file, taken before it was read.
func makeLoc(gitDir, root string) (repoLoc, fileStamp, error) {
	l := repoLoc{gitDir: gitDir, commonDir: gitDir, root: root}
	b, st, err := readStamped(joinRaw(gitDir, "commondir"), maxGitFileBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errIsDir) {
			return l, st, nil
		}
		return l, st, err
	}
	c := cString([]byte(strings.TrimRight(string(b), "\r\n")))
	if c == "" {
		return l, st, nil // git dies on an empty commondir
	}
	if !strings.HasPrefix(c, "/") {
		c = joinRaw(gitDir, c)
	}
	l.commonDir = c
	return l, st, nil
}

// isGitDirectoryAt mirrors is_git_directory for p with common dir common: a
// valid HEAD, and objects/ and refs/ searchable in the common dir.
func isGitDirectoryAt(p, common string) bool {
	return validHead(joinRaw(p, "HEAD")) && searchable(joinRaw(common, "objects")) && searchable(joinRaw(common, "refs"))
}

// validHead mirrors validate_headref.
func validHead(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := os.Readlink(path)
		return err == nil && strings.HasPrefix(t, "refs/")
	}
	f, err := openNoBlock(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	buf := make([]byte, 255)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false
	}
	s := cString(buf[:n])
	if rest, ok := strings.CutPrefix(s, "ref:"); ok {
		rest = strings.TrimLeft(rest, " \t\n\r")
		if strings.HasPrefix(rest, "refs/") {
			return true
		}
	}
	if len(s) < 40 {
		return false
	}
	_, err = hex.DecodeString(s[:40])
	return err == nil
}

var (
	errIsDir      = errors.New("gitx: is a directory")
	errNotRegular = errors.New("gitx: not a regular file")
	errTooLarge   = errors.New("gitx: file too large")
)

// openNoBlock opens path for reading without blocking on a FIFO (which a
// repository could put where a config file is expected).
func openNoBlock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// readStamped reads up to limit bytes of the regular file path and stamps
// the file it read (a missing file gets a "not found" stamp). A directory, a
// device or FIFO, or a file larger than limit is an error.
func readStamped(path string, limit int64) ([]byte, fileStamp, error) {
	f, err := openNoBlock(path)
	if err != nil {
		return nil, fileStamp{path: path}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileStamp{path: path}, err
	}
	st := stampOf(path, fi)
	if fi.IsDir() {
		return nil, st, errIsDir
	}
	if !fi.Mode().IsRegular() {
		return nil, st, errNotRegular
	}
	// A "regular" file that blocks on read (/proc/kmsg) is pollable; give
	// it a deadline. Ordinary files ignore this.
	_ = f.SetReadDeadline(time.Now().Add(readDeadline))
	if fi.Size() > limit {
		return nil, st, errTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, st, err
	}
	if int64(len(b)) > limit {
		return nil, st, errTooLarge
	}
	return b, st, nil
}

// subKey names a neutralised subsection, e.g. {"filter", "evil"}.
type subKey struct{ section, sub string }

type subInfo struct {
	keys      map[string]bool
	badUpdate bool // submodule.<name>.update is not a plain mode
}

// ruleSections are the sections whose subsections name something to
// neutralise whenever they appear.
var ruleSections = map[string]bool{
	"filter": true, "diff": true, "merge": true, "protocol": true,
	"man": true, "browser": true, "difftool": true, "mergetool": true,
	"tar": true,
}

type scanState struct {
	stamps  []fileStamp
	stamped map[string]bool
	bytes   int64
	repos   map[string]bool
	order   []subKey
	subs    map[subKey]*subInfo
	plain   []string // section-level keys to neutralise, in order
	plainOK map[string]bool
	err     error
}

// repoScan is the per-repository part of a scan.
type repoScan struct {
	files     map[string]int // config path -> smallest include depth scanned
	worktrees []string       // core.worktree values
	formats   []string       // extensions.objectFormat values
}

func (st *scanState) fail(err error) {
	if st.err == nil {
		st.err = err
	}
}

func (st *scanState) addStamp(s fileStamp) {
	if !st.stamped[s.path] {
		st.stamped[s.path] = true
		st.stamps = append(st.stamps, s)
	}
}

func scanRepos(locs []repoLoc) *scanEntry {
	st := &scanState{stamped: map[string]bool{}, repos: map[string]bool{}, subs: map[subKey]*subInfo{}, plainOK: map[string]bool{}}
	for _, l := range locs {
		st.repo(l)
	}
	e := &scanEntry{stamps: st.stamps}
	if st.err != nil {
		e.err = st.err
		return e
	}
	e.args, e.argsErr = st.args()
	e.env = st.overrides()
	return e
}

func (st *scanState) repo(l repoLoc) {
	if st.err != nil || st.repos[l.gitDir] {
		return
	}
	if len(st.repos) >= maxScanRepos {
		st.fail(errs.New(errs.PolicyDenied, "more than %d repositories (submodules) under %s; refusing to run git", maxScanRepos, l.gitDir))
		return
	}
	st.repos[l.gitDir] = true
	rs := &repoScan{files: map[string]int{}}
	st.file(rs, joinRaw(l.commonDir, "config"), 0)
	st.file(rs, joinRaw(l.gitDir, "config.worktree"), 0)
	if st.err != nil {
		return
	}
	st.checkWorktrees(l, rs)
	if st.err != nil {
		return
	}
	st.submodules(l, rs)
}

// checkWorktrees fails the scan when the repository config moves the work
// tree (core.worktree) anywhere but where git found it: harnessd's git
// would read and stage files outside the registered checkout. A
// submodule's config names its own work tree, which passes.
func (st *scanState) checkWorktrees(l repoLoc, rs *repoScan) {
	for _, w := range rs.worktrees {
		if !strings.HasPrefix(w, "/") {
			w = joinRaw(l.gitDir, w)
		}
		same := l.root != "" && samePath(w, l.root)
		if !same {
			st.fail(errs.New(errs.PolicyDenied, "the repository config of %s sets core.worktree to %s, another directory than the work tree %s: harnessd refuses to run git there (remove core.worktree)", l.gitDir, w, l.root))
			return
		}
	}
}

// samePath reports whether a and b name the same directory.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, ea := os.Stat(a)
	fb, eb := os.Stat(b)
	return ea == nil && eb == nil && os.SameFile(fa, fb)
}

// file scans one config file at include depth depth.
func (st *scanState) file(rs *repoScan, path string, depth int) {
	if st.err != nil || depth > maxIncludeDepth {
		return
	}
	// A file already scanned at this depth or shallower is skipped; one
	// reached again at a shallower depth is scanned again, since its own
	// includes may now be within git's depth limit.
	if d, ok := rs.files[path]; ok && d <= depth {
		return
	} else if !ok && len(rs.files) >= maxConfigFiles {
		st.fail(errs.New(errs.PolicyDenied, "repository config includes more than %d files; refusing to run git", maxConfigFiles))
		return
	}
	rs.files[path] = depth
	b, s, err := readStamped(path, maxConfigBytes)
	st.addStamp(s)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errIsDir), errors.Is(err, syscall.ENOTDIR):
		return // git reads nothing from these
	case errors.Is(err, errTooLarge):
		st.fail(errs.New(errs.PolicyDenied, "repository config file %s is larger than %d bytes; refusing to run git", path, maxConfigBytes))
		return
	default:
		st.fail(errs.Wrap(errs.PolicyDenied, err, "cannot read repository config file %s: %v; refusing to run git", path, err))
		return
	}
	st.bytes += int64(len(b))
	if st.bytes > maxScanBytes {
		st.fail(errs.New(errs.PolicyDenied, "repository config is larger than %d bytes in all; refusing to run git", maxScanBytes))
		return
	}
	header := func(name string) bool {
		if strings.IndexByte(name, 0) < 0 {
			if section, sub, hasSub, _, ok := splitConfigKey(name + ".k"); ok && hasSub {
				st.noteSub(section, sub)
			}
		}
		return st.err == nil
	}
	entry := func(e cfgEntry) bool {
		st.note(rs, e)
		if e.hasValue && isIncludeKey(e.name) {
			for _, p := range interpolatePath(e.value) {
				if !strings.HasPrefix(p, "/") {
					p = dirOfRaw(path) + p
				}
				st.file(rs, p, depth+1)
			}
		}
		return st.err == nil
	}
	_ = parseConfig(b, header, entry) // git stops (and dies) at a syntax error
}

// isIncludeKey reports include.path and includeIf.<cond>.path.
func isIncludeKey(name string) bool {
	if name == "include.path" {
		return true
	}
	section, _, hasSub, key, ok := splitConfigKey(name)
	return ok && hasSub && section == "includeif" && key == "path"
}

// interpolatePath mirrors interpolate_path for an include: "~/" and "~" are
// $HOME, "~user/" that user's home, "%(prefix)/" git's install prefix (every
// plausible one). It returns nothing where git fails (and so dies).
func interpolatePath(v string) []string {
	if rest, ok := strings.CutPrefix(v, "%(prefix)/"); ok {
		var out []string
		for _, p := range gitPrefixes() {
			out = append(out, joinRaw(p, rest))
		}
		return out
	}
	if strings.HasPrefix(v, "~") {
		slash := strings.IndexByte(v, '/')
		if slash < 0 {
			slash = len(v)
		}
		name := v[1:slash]
		var home string
		if name == "" {
			var ok bool
			if home, ok = os.LookupEnv("HOME"); !ok {
				return nil
			}
		} else {
			u, err := user.Lookup(name)
			if err != nil {
				return nil
			}
			home = u.HomeDir
		}
		return []string{home + v[slash:]}
	}
	return []string{v}
}

var gitPrefixes = sync.OnceValue(func() []string {
	out := []string{"/usr", "/usr/local"}
	if p, err := exec.LookPath("git"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if pre := filepath.Dir(filepath.Dir(p)); pre != "/usr" && pre != "/usr/local" {
			out = append(out, pre)
		}
	}
	return out
})

// note records one variable.
func (st *scanState) note(rs *repoScan, e cfgEntry) {
	section, sub, hasSub, key, ok := splitConfigKey(e.name)
	if !ok {
		return
	}
	if !hasSub {
		switch {
		case e.name == "core.worktree":
			if e.hasValue {
				rs.worktrees = append(rs.worktrees, e.value)
			}
		case e.name == "extensions.objectformat":
			if e.hasValue {
				rs.formats = append(rs.formats, e.value)
			}
		case e.name == "diff.external", e.name == "lfs.standalonetransferagent", section == "pager":
			st.notePlain(e.name)
		}
		return
	}
	info := st.noteSub(section, sub)
	if info != nil {
		info.keys[key] = true
		return
	}
	if section == "submodule" && key == "update" {
		switch {
		case e.hasValue && (e.value == "checkout" || e.value == "rebase" || e.value == "merge" || e.value == "none"):
		default:
			if info := st.addSub(subKey{section, sub}); info != nil {
				info.badUpdate = true
			}
		}
	}
}

// noteSub records a subsection of a rule section (and the lfs custom
// transfer agents and extensions), returning its info, or nil for other
// sections.
func (st *scanState) noteSub(section, sub string) *subInfo {
	if !ruleSections[section] &&
		!(section == "lfs" && (strings.HasPrefix(sub, "customtransfer.") || strings.HasPrefix(sub, "extension."))) {
		return nil
	}
	return st.addSub(subKey{section, sub})
}

func (st *scanState) addSub(k subKey) *subInfo {
	if info, ok := st.subs[k]; ok {
		return info
	}
	if len(st.order) >= maxDriverEntries {
		st.fail(errs.New(errs.PolicyDenied, "repository config defines more than %d drivers; refusing to run git", maxDriverEntries))
		return nil
	}
	info := &subInfo{keys: map[string]bool{}}
	st.subs[k] = info
	st.order = append(st.order, k)
	return info
}

func (st *scanState) notePlain(name string) {
	if !st.plainOK[name] {
		st.plainOK[name] = true
		st.plain = append(st.plain, name)
	}
}

// args returns the neutralising -c arguments in discovery order: the
// filter, diff and merge drivers and protocol policies.
func (st *scanState) args() ([]string, error) {
	var a []string
	for _, k := range st.order {
		p := k.section + "." + k.sub + "."
		var kv []string
		switch k.section {
		case "filter":
			kv = []string{p + "clean=", p + "smudge=", p + "process=", p + "required=false"}
		case "diff":
			kv = []string{p + "textconv=cat", p + "command="}
		case "merge":
			kv = []string{p + "driver=false"}
		case "protocol":
			kv = []string{p + "allow=never"}
		default:
			continue
		}
		if strings.ContainsAny(k.sub, "=\x00\n") {
			return nil, errs.New(errs.PolicyDenied,
				"repository config defines %s driver %q, which cannot be safely overridden; refusing to run git", k.section, k.sub)
		}
		for _, s := range kv {
			a = append(a, "-c", s)
		}
	}
	return a, nil
}

// overrides returns the key/value pairs ConfigEnv adds for what the scan
// found, in discovery order.
func (st *scanState) overrides() []override {
	var o []override
	add := func(k, v string) { o = append(o, override{k, v}) }
	for _, k := range st.order {
		info := st.subs[k]
		p := k.section + "." + k.sub + "."
		switch k.section {
		case "filter":
			add(p+"clean", "")
			add(p+"smudge", "")
			add(p+"process", "")
			add(p+"required", "false")
		case "diff":
			add(p+"textconv", "cat")
			// An empty command makes git diff fail ("external diff
			// died") for every path using the driver, so it is set only
			// where the repository sets one.
			if info.keys["command"] {
				add(p+"command", "")
			}
		case "merge":
			add(p+"driver", "false")
		case "protocol":
			add(p+"allow", "never")
		case "man", "browser", "difftool", "mergetool":
			add(p+"cmd", "false")
			add(p+"path", "false")
		case "tar":
			if k.sub == "tgz" || k.sub == "tar.gz" {
				add(p+"command", "gzip -cn") // git's built-in default
			} else {
				add(p+"command", "false")
			}
		case "submodule":
			if info.badUpdate {
				add(p+"update", "checkout")
			}
		case "lfs":
			if strings.HasPrefix(k.sub, "customtransfer.") {
				add(p+"path", "false")
			} else {
				add(p+"clean", "false")
				add(p+"smudge", "false")
			}
		}
	}
	for _, name := range st.plain {
		switch {
		case name == "diff.external", name == "lfs.standalonetransferagent":
			add(name, "")
		case strings.HasPrefix(name, "pager."):
			add(name, "cat")
		}
	}
	return o
}

// submodules scans every populated submodule of l: each gitlink in the
// index whose work tree directory has a .git entry, under the repository's
// work tree and under every core.worktree it names.
func (st *scanState) submodules(l repoLoc, rs *repoScan) {
	var roots []string
	if l.root != "" {
		roots = append(roots, l.root)
	}
	for _, w := range rs.worktrees {
		if !strings.HasPrefix(w, "/") {
			w = joinRaw(l.gitDir, w)
		}
		roots = append(roots, w)
	}
	if len(roots) == 0 {
		return
	}
	hashes := []int{20}
	for _, f := range rs.formats {
		if f != "sha1" {
			hashes = append(hashes, 32)
			break
		}
	}
	links := st.indexGitlinks(joinRaw(l.gitDir, "index"), l.gitDir, hashes)
	for _, root := range roots {
		for _, p := range links {
			if st.err != nil {
				return
			}
			wt := joinRaw(root, p)
			dotgit := joinRaw(wt, ".git")
			s := stamp(dotgit)
			st.addStamp(s)
			if !s.found {
				continue
			}
			fi, err := os.Stat(dotgit)
			if err != nil {
				continue
			}
			var sub repoLoc
			switch {
			case fi.Mode().IsRegular():
				target, ok, err := readGitFile(dotgit)
				if err != nil {
					st.fail(errs.Wrap(errs.PolicyDenied, err, "cannot read %s: %v; refusing to run git", dotgit, err))
					return
				}
				if !ok {
					continue
				}
				var cs fileStamp
				sub, cs, err = makeLoc(target, wt)
				st.addStamp(cs)
				if err != nil {
					st.fail(errs.Wrap(errs.PolicyDenied, err, "cannot read the commondir of %s: %v; refusing to run git", target, err))
					return
				}
			case fi.IsDir():
				var cs fileStamp
				sub, cs, err = makeLoc(dotgit, wt)
				st.addStamp(cs)
				if err != nil {
					st.fail(errs.Wrap(errs.PolicyDenied, err, "cannot read the commondir of %s: %v; refusing to run git", dotgit, err))
					return
				}
			default:
				continue
			}
			st.repo(sub)
		}
	}
}

// indexGitlinks returns the gitlink paths of the index at path (and of its
// shared index, for a split index), trying each hash size.
func (st *scanState) indexGitlinks(path, gitDir string, hashes []int) []string {
	b, s, err := readStamped(path, maxIndexBytes)
	st.addStamp(s)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, errIsDir):
		case errors.Is(err, errTooLarge):
			st.fail(errs.New(errs.PolicyDenied, "index %s is larger than %d bytes; refusing to run git", path, maxIndexBytes))
		default:
			st.fail(errs.Wrap(errs.PolicyDenied, err, "cannot read index %s: %v; refusing to run git", path, err))
		}
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, h := range hashes {
		links, shared := parseIndexGitlinks(b, h)
		if shared != "" {
			sb, ss, err := readStamped(joinRaw(gitDir, "sharedindex."+shared), maxIndexBytes)
			st.addStamp(ss)
			if err == nil {
				more, _ := parseIndexGitlinks(sb, h)
				links = append(links, more...)
			} else if errors.Is(err, errTooLarge) {
				st.fail(errs.New(errs.PolicyDenied, "shared index of %s is larger than %d bytes; refusing to run git", path, maxIndexBytes))
				return nil
			}
		}
		for _, l := range links {
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	return out
}

const (
	indexMaxBlocks   = 4096
	indexMaxGitlinks = 4096
)

// parseIndexGitlinks returns the paths of the gitlink entries (mode 160000)
// in index file b (versions 2 to 4) and the shared index named by a "link"
// extension. Entries are read sequentially, as git does, and also block by
// block as the IEOT extension lays them out, as git's threaded loader does
// (the two agree for an index git wrote; the union covers one that was
// crafted so they do not). It never fails: what cannot be parsed is skipped.
func parseIndexGitlinks(b []byte, hashSize int) (links []string, shared string) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, ""
	}
	ver := binary.BigEndian.Uint32(b[4:8])
	if ver < 2 || ver > 4 {
		return nil, ""
	}
	n := binary.BigEndian.Uint32(b[8:12])
	seen := map[string]bool{}
	add := func(p []byte) {
		if len(links) < indexMaxGitlinks && !seen[string(p)] {
			seen[string(p)] = true
			links = append(links, string(p))
		}
	}
	budget := len(b)
	end, ok := parseIndexBlock(b, 12, uint64(n), ver, hashSize, add, &budget)
	if !ok {
		return links, ""
	}
	// Extensions up to the trailing checksum.
	budget = 2*len(b) + 1<<20 // for the IEOT blocks, which may overlap
	var ieot []byte
	extStart := end
	for off := end; off+8 <= len(b)-hashSize; {
		sig := string(b[off : off+4])
		sz := int(binary.BigEndian.Uint32(b[off+4 : off+8]))
		if sz < 0 || off+8+sz > len(b)-hashSize {
			break
		}
		data := b[off+8 : off+8+sz]
		switch sig {
		case "link":
			if len(data) >= hashSize {
				shared = hex.EncodeToString(data[:hashSize])
			}
		case "IEOT":
			ieot = data
		}
		off += 8 + sz
	}
	// The threaded loader finds the extensions through EOIE (the last
	// extension: offset of the first extension and a hash).
	if eoie := len(b) - hashSize - (8 + 4 + hashSize); eoie >= 12 && string(b[eoie:eoie+4]) == "EOIE" {
		if off := int(binary.BigEndian.Uint32(b[eoie+8 : eoie+12])); off >= 12 && off != extStart {
			for o := off; o+8 <= len(b)-hashSize; {
				sz := int(binary.BigEndian.Uint32(b[o+4 : o+8]))
				if sz < 0 || o+8+sz > len(b)-hashSize {
					break
				}
				if string(b[o:o+4]) == "IEOT" {
					parseIEOT(b, b[o+8:o+8+sz], ver, hashSize, add, &budget)
				}
				o += 8 + sz
			}
		}
	}
	if ieot != nil {
		parseIEOT(b, ieot, ver, hashSize, add, &budget)
	}
	return links, shared
}

func parseIEOT(b, data []byte, ver uint32, hashSize int, add func([]byte), budget *int) {
	if len(data) < 4 || binary.BigEndian.Uint32(data[:4]) != 1 {
		return
	}
	data = data[4:]
	for i := 0; i+8 <= len(data) && i/8 < indexMaxBlocks; i += 8 {
		off := int(binary.BigEndian.Uint32(data[i : i+4]))
		nr := binary.BigEndian.Uint32(data[i+4 : i+8])
		parseIndexBlock(b, off, uint64(nr), ver, hashSize, add, budget)
	}
}

// parseIndexBlock reads nr entries from offset off (create_from_disk) and
// returns the offset after them. budget bounds the bytes read.
func parseIndexBlock(b []byte, off int, nr uint64, ver uint32, hashSize int, add func([]byte), budget *int) (int, bool) {
	if off < 12 || off > len(b) {
		return off, false
	}
	var prev []byte
	first := true
	fixed := 40 + hashSize + 2
	for i := uint64(0); i < nr; i++ {
		if off+fixed > len(b) || *budget <= 0 {
			return off, false
		}
		start := off
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		flags := binary.BigEndian.Uint16(b[off+40+hashSize : off+fixed])
		p := off + fixed
		if flags&0x4000 != 0 {
			if ver < 3 {
				return off, false
			}
			p += 2
		}
		if p > len(b) {
			return off, false
		}
		nameLen := int(flags & 0xfff)
		var name []byte
		if ver == 4 {
			strip, vn := decodeIndexVarint(b[p:])
			if vn == 0 {
				return off, false
			}
			p += vn
			copyLen := 0
			if !first {
				if uint64(len(prev)) < strip {
					return off, false
				}
				copyLen = len(prev) - int(strip)
			}
			z := bytes.IndexByte(b[p:], 0)
			if z < 0 {
				return off, false
			}
			suffix := z
			if nameLen != 0xfff {
				suffix = nameLen - copyLen
				if suffix < 0 || p+suffix >= len(b) {
					return off, false
				}
			}
			name = make([]byte, 0, copyLen+suffix)
			name = append(name, prev[:copyLen]...)
			name = append(name, b[p:p+suffix]...)
			off = p + suffix + 1
		} else {
			if nameLen == 0xfff {
				z := bytes.IndexByte(b[p:], 0)
				if z < 0 {
					return off, false
				}
				nameLen = z
			}
			if p+nameLen > len(b) {
				return off, false
			}
			name = b[p : p+nameLen]
			size := (p - off + nameLen + 8) &^ 7
			if off+size > len(b) {
				return off, false
			}
			off += size
		}
		*budget -= off - start
		if mode&0o170000 == 0o160000 {
			add(cBytes(name))
		}
		prev = name
		first = false
	}
	return off, true
}

// cBytes cuts b at its first NUL (git's names are C strings).
func cBytes(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// decodeIndexVarint mirrors decode_varint (the offset-encoded varint of
// index v4); n is 0 on overflow or truncation.
func decodeIndexVarint(b []byte) (val uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	n = 1
	val = uint64(c & 127)
	for c&128 != 0 {
		val++
		if val == 0 || val>>57 != 0 {
			return 0, 0
		}
		if n >= len(b) {
			return 0, 0
		}
		c = b[n]
		n++
		val = (val << 7) + uint64(c&127)
	}
	return val, n
}

// parseSectionHeader splits `section "sub"` or the legacy `section.sub`.
// Section names are case-insensitive (returned lower-cased); subsection
// names keep their case except in the legacy form, which git lower-cases.
func parseSectionHeader(h string) (name, sub string) {
	h = strings.TrimSpace(h)
	if i := strings.IndexAny(h, " \t"); i >= 0 {
		name = strings.ToLower(h[:i])
		rest := strings.TrimSpace(h[i:])
		if len(rest) >= 2 && rest[0] == '"' && rest[len(rest)-1] == '"' {
			rest = rest[1 : len(rest)-1]
		}
		var b strings.Builder
		for i := 0; i < len(rest); i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
			}
			b.WriteByte(rest[i])
		}
		return name, b.String()
	}
	if i := strings.IndexByte(h, '.'); i >= 0 {
		return strings.ToLower(h[:i]), strings.ToLower(h[i+1:])
	}
	return strings.ToLower(h), ""
}
