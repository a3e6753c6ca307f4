package secrets

import (
	"path/filepath"
	"strings"
)

// A watch lets a Get skip the stamps (about ten lstats a call: the
// learned files, the index, HEAD, the branch ref, the config and the
// files that locate them) when nothing they cover changed since the last
// full revalidation. It watches, with inotify, every directory on the way
// from the checkout (or its git dir) to each of those files, for the next
// name on the way. The kernel queues an event in the same system call that
// changes the directory entry or the file (a write, a rename over it, a
// chmod), so a change whose call returned before a Get began is in the
// queue when that Get reads it without blocking: reading the queue (one
// read(2), EAGAIN when empty) decides as surely as the stamps, for every
// change an event reports. Writes through a shared mmap report none: a
// Set is served without its stamps for at most Config.Recheck, then
// revalidated in full anyway.
//
// A watch is trusted only after a full revalidation that began with every
// directory already watched: the events of a change during that
// revalidation are then in the queue. A new directory to watch (a secret
// file appeared, the branch changed) costs one more full revalidation.
// Where inotify is missing (another OS, no instance left), every Get
// revalidates in full, as before.

// watchSpot is one directory to watch and the names in it whose change
// matters.
type watchSpot struct {
	dir   string
	names []string
	// rel is dir relative to the checkout root ("" for the root, and for a
	// directory outside it): a new name there is matched against the
	// secret paths (rel + "/" + name).
	rel    string
	inRoot bool
}

// watchSpots returns, for each path, the directories from its base down
// to its parent with the next name on the way: the base is root for a
// path below root, else the first of bases that holds it, else the path's
// own directory. Spots of one directory are merged.
func watchSpots(root string, bases []string, paths []string) []watchSpot {
	idx := map[string]int{}
	var out []watchSpot
	add := func(dir, name string, inRoot bool, rel string) {
		i, ok := idx[dir]
		if !ok {
			i = len(out)
			idx[dir] = i
			out = append(out, watchSpot{dir: dir, inRoot: inRoot, rel: rel})
		}
		for _, n := range out[i].names {
			if n == name {
				return
			}
		}
		out[i].names = append(out[i].names, name)
	}
	for _, p := range paths {
		p = filepath.Clean(p)
		base, inRoot := "", false
		if under(p, root) {
			base, inRoot = root, true
		} else {
			for _, b := range bases {
				if b != "" && under(p, b) {
					base = b
					break
				}
			}
		}
		if base == "" {
			add(filepath.Dir(p), filepath.Base(p), false, "")
			continue
		}
		rest := strings.Split(filepath.ToSlash(p[len(base)+1:]), "/")
		dir, rel := base, ""
		for _, name := range rest {
			add(dir, name, inRoot, rel)
			dir = filepath.Join(dir, name)
			if inRoot {
				rel = pathJoin(rel, name)
			}
		}
	}
	return out
}

// under reports whether p is strictly below dir (both clean).
func under(p, dir string) bool {
	return len(p) > len(dir) && strings.HasPrefix(p, dir) && p[len(dir)] == filepath.Separator
}

func pathJoin(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}
