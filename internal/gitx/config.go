package gitx

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/harness/errs"
)

// Repository config scanning: drivers named in .gitattributes but defined in
// the repository's own config run arbitrary commands (a clean filter runs on
// `git status`). driverOverrides finds them without running git and returns
// -c arguments that neutralise them. Results are cached per git directory and
// revalidated by the size and mtime of every config file read.

const (
	maxIncludeDepth  = 10
	maxConfigFiles   = 64
	maxConfigBytes   = 4 << 20
	maxDriverEntries = 256
)

type fileStamp struct {
	path  string
	size  int64
	mtime time.Time
	found bool
}

type scanEntry struct {
	stamps []fileStamp
	args   []string
	err    error
}

var scanCache sync.Map // git dir -> *scanEntry

// driverOverrides returns the -c arguments neutralising the filter, diff and
// merge drivers defined in the repository config of the repository that
// contains dir. It returns nil when dir is not inside a work tree it can find,
// and an error (fail closed) when a driver name cannot be expressed as a -c
// key.
func driverOverrides(dir string) ([]string, error) {
	gitDir, commonDir := findGitDir(dir)
	if gitDir == "" {
		return nil, nil
	}
	if v, ok := scanCache.Load(gitDir); ok {
		e := v.(*scanEntry)
		if stampsValid(e.stamps) {
			return e.args, e.err
		}
	}
	e := scanConfig(gitDir, commonDir)
	scanCache.Store(gitDir, e)
	return e.args, e.err
}

// findGitDir walks up from dir to the first ".git" entry, following a
// "gitdir:" file and a "commondir" file. It mirrors git's discovery closely
// enough to find the config git will read; GIT_DIR is never inherited.
func findGitDir(dir string) (gitDir, commonDir string) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", ""
	}
	linked := false
	for {
		p := filepath.Join(d, ".git")
		if fi, err := os.Stat(p); err == nil {
			if fi.IsDir() {
				gitDir = p
			} else if fi.Mode().IsRegular() && fi.Size() < 4096 {
				b, err := os.ReadFile(p)
				if err == nil {
					line := strings.TrimSpace(string(b))
					if rest, ok := strings.CutPrefix(line, "gitdir:"); ok {
						g := strings.TrimSpace(rest)
						if !filepath.IsAbs(g) {
							g = filepath.Join(d, g)
						}
						gitDir = filepath.Clean(g)
						linked = true
					}
				}
			}
			if gitDir != "" {
				break
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", ""
		}
		d = parent
	}
	commonDir = gitDir
	if linked {
		// Only a linked worktree's git dir has a commondir file.
		b, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
		if err != nil {
			return gitDir, commonDir
		}
		c := strings.TrimSpace(string(b))
		if c != "" {
			if !filepath.IsAbs(c) {
				c = filepath.Join(gitDir, c)
			}
			commonDir = filepath.Clean(c)
		}
	}
	return gitDir, commonDir
}

func stamp(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{path: path}
	}
	return fileStamp{path: path, size: fi.Size(), mtime: fi.ModTime(), found: true}
}

func stampsValid(stamps []fileStamp) bool {
	for _, s := range stamps {
		if stamp(s.path) != s {
			return false
		}
	}
	return true
}

// scanConfig reads commonDir/config, gitDir/config.worktree and their
// includes and builds the override arguments.
func scanConfig(gitDir, commonDir string) *scanEntry {
	sc := &configScanner{seen: map[string]bool{}, drivers: map[[2]string]bool{}}
	sc.file(filepath.Join(commonDir, "config"), 0)
	sc.file(filepath.Join(gitDir, "config.worktree"), 0)
	args, err := sc.args()
	return &scanEntry{stamps: sc.stamps, args: args, err: err}
}

type configScanner struct {
	stamps  []fileStamp
	seen    map[string]bool
	drivers map[[2]string]bool // {section, name}
	order   [][2]string
}

func (sc *configScanner) file(path string, depth int) {
	if depth > maxIncludeDepth || len(sc.seen) >= maxConfigFiles || sc.seen[path] {
		return
	}
	sc.seen[path] = true
	st := stamp(path)
	sc.stamps = append(sc.stamps, st)
	if !st.found || st.size > maxConfigBytes {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var includes []string
	section := ""
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 4096), maxConfigBytes)
	for s.Scan() {
		line := bytes.TrimSpace(s.Bytes())
		if len(line) == 0 || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := bytes.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			hdr := string(line[1:end])
			name, sub := parseSectionHeader(hdr)
			section = name
			switch name {
			case "filter", "diff", "merge":
				if sub != "" {
					sc.addDriver(name, sub)
				}
			}
			line = bytes.TrimSpace(line[end+1:])
			if len(line) == 0 {
				continue
			}
		}
		if section == "include" || strings.HasPrefix(section, "includeif") {
			k, v, ok := bytes.Cut(line, []byte("="))
			if ok && strings.EqualFold(string(bytes.TrimSpace(k)), "path") {
				includes = append(includes, unquote(string(bytes.TrimSpace(v))))
			}
		}
	}
	for _, inc := range includes {
		sc.file(includePath(path, inc), depth+1)
	}
}

func (sc *configScanner) addDriver(section, name string) {
	k := [2]string{section, name}
	if sc.drivers[k] || len(sc.order) >= maxDriverEntries {
		return
	}
	sc.drivers[k] = true
	sc.order = append(sc.order, k)
}

// args returns the neutralising -c arguments in discovery order.
func (sc *configScanner) args() ([]string, error) {
	if len(sc.order) == 0 {
		return nil, nil
	}
	var a []string
	for _, k := range sc.order {
		if strings.ContainsAny(k[1], "=\x00\n") {
			return nil, errs.New(errs.PolicyDenied,
				"repository config defines %s driver %q, which cannot be safely overridden; refusing to run git", k[0], k[1])
		}
		p := k[0] + "." + k[1] + "."
		switch k[0] {
		case "filter":
			a = append(a, "-c", p+"clean=", "-c", p+"smudge=", "-c", p+"process=", "-c", p+"required=false")
		case "diff":
			a = append(a, "-c", p+"textconv=cat", "-c", p+"command=")
		case "merge":
			a = append(a, "-c", p+"driver=false")
		}
	}
	return a, nil
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

func unquote(v string) string {
	if i := strings.IndexAny(v, "#;"); i >= 0 && !strings.HasPrefix(v, "\"") {
		v = strings.TrimSpace(v[:i])
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return v
}

// includePath resolves an include.path value the way git does: "~/" is the
// home directory, relative paths are relative to the including file.
func includePath(from, inc string) string {
	if rest, ok := strings.CutPrefix(inc, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if filepath.IsAbs(inc) {
		return filepath.Clean(inc)
	}
	return filepath.Join(filepath.Dir(from), inc)
}
