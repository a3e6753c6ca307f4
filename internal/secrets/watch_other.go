//go:build !linux

package secrets

import "github.com/harnessd/harnessd/internal/pathsafe"

// dirWatch has no inotify here: every Get revalidates in full.
type dirWatch struct{}

func newDirWatch() *dirWatch { return nil }

func (w *dirWatch) ensure([]watchSpot, *pathsafe.Denylist) (added, ok bool) { return false, false }

func (w *dirWatch) poll(*pathsafe.Denylist) (quiet, fresh bool) { return false, false }

func (w *dirWatch) close() {}
