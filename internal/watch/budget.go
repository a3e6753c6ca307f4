package watch

import (
	"errors"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Each watched checkout holds one inotify instance (its Pump), and the
// kernel gives a user max_user_instances of them (128 by default) for
// every program it runs: an editor, a build tool's file watcher. The live
// index takes a share of them at most and passivates its least recently
// used watchers to stay under it; a passivated checkout is answered by git
// and rg, as with the index off, until it is used again.

// MaxInstancesPath is where Linux says how many inotify instances a user
// may hold.
const MaxInstancesPath = "/proc/sys/fs/inotify/max_user_instances"

// DefaultShare is the share of max_user_instances the live index takes.
const DefaultShare = 0.25

// fallbackInstances is max_user_instances when the kernel does not say
// (its default).
const fallbackInstances = 128

// ReadMaxInstances returns the kernel's max_user_instances (path is
// MaxInstancesPath outside tests).
func ReadMaxInstances(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, errors.New("max_user_instances is not positive")
	}
	return n, nil
}

// InstanceCap returns how many watchers the live index may run: share of
// instances (fallbackInstances when unknown, 0; DefaultShare for a share
// outside (0, 1]), at least 1.
func InstanceCap(instances int, share float64) int {
	if instances <= 0 {
		instances = fallbackInstances
	}
	if share <= 0 || share > 1 {
		share = DefaultShare
	}
	return max(1, int(float64(instances)*share))
}

// Use is one running watcher and when it was last used.
type Use struct {
	Key  string
	Last time.Time
}

// Evict returns the watchers to passivate so that one more fits under
// cap: the least recently used first (ties by key, so the choice is
// stable), never the one named keep (the watcher being admitted). With
// room already, none.
func Evict(active []Use, cap int, keep string) []string {
	others := make([]Use, 0, len(active))
	for _, u := range active {
		if u.Key != keep {
			others = append(others, u)
		}
	}
	over := len(others) + 1 - max(cap, 1)
	if over <= 0 {
		return nil
	}
	sort.Slice(others, func(i, j int) bool {
		if !others[i].Last.Equal(others[j].Last) {
			return others[i].Last.Before(others[j].Last)
		}
		return others[i].Key < others[j].Key
	})
	out := make([]string, 0, over)
	for _, u := range others[:over] {
		out = append(out, u.Key)
	}
	return out
}
