package persistence

import (
	"errors"
	"fmt"
	"syscall"
)

// FullError reports a write refused because the store's file system has
// less free space than the reserve: Badger writes its memtable through a
// memory map, and a write there on a full disk is a SIGBUS that kills the
// process, so the store refuses the write first. Nothing was written;
// reads keep working; writes succeed again once space is freed. Its
// ErrorCode is STORAGE_FULL.
type FullError struct {
	Dir     string
	Free    uint64
	Reserve uint64
	cause   error
}

func (e *FullError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("no space left for the store on the file system of %s (%v): free space; writes resume by themselves", e.Dir, e.cause)
	}
	return fmt.Sprintf("no space left for the store on the file system of %s: %s free, %s kept in reserve so the store "+
		"never fails mid-write; free space: writes resume by themselves, reads keep working", e.Dir, bytesText(e.Free), bytesText(e.Reserve))
}

// ErrorCode is the stable code of contract/errs that this error maps to.
func (e *FullError) ErrorCode() string { return "STORAGE_FULL" }

func (e *FullError) Unwrap() error { return e.cause }

// UnavailableError reports a write the store's file system refused: it
// was remounted read-only (ext4 with errors=remount-ro after an I/O
// error), or the disk returned an I/O error. Nothing was written; reads
// keep working from what is in memory and in the files already read.
// After one such failure the Store refuses writes at once, without
// touching the disk, and lets one write through every few seconds to
// notice a disk that was repaired. Its ErrorCode is STORAGE_UNAVAILABLE.
type UnavailableError struct {
	Dir   string
	cause error
}

func (e *UnavailableError) Error() string {
	why := "it is mounted read-only"
	if e.cause != nil {
		why = e.cause.Error()
	}
	where := "the file system of the store"
	if e.Dir != "" {
		where += " (" + e.Dir + ")"
	}
	return fmt.Sprintf("%s refuses writes (%s): nothing was written and reads keep working; "+
		"make the data dir writable again (check the kernel log, remount it read-write) or restart harnessd on a healthy data dir; "+
		"writes are tried again by themselves", where, why)
}

// ErrorCode is the stable code of contract/errs that this error maps to.
func (e *UnavailableError) ErrorCode() string { return "STORAGE_UNAVAILABLE" }

func (e *UnavailableError) Unwrap() error { return e.cause }

func bytesText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// DefaultReserve is the free space kept on the store's file system for a
// file system of total bytes: a sixteenth of it, between 1 MiB and 64 MiB.
func DefaultReserve(total uint64) uint64 {
	return min(max(total/16, 1<<20), 64<<20)
}

// stRdonly is ST_RDONLY of statfs(2)'s f_flags: the file system is
// mounted read-only.
const stRdonly = 0x1

// guard is what a write checks first: the store directory is still the
// one opened (not removed or replaced: then the daemon must stop, its
// writes would vanish) and its file system has room.
type guard struct {
	dir     string
	dev     uint64
	ino     uint64
	reserve uint64 // 0 = DefaultReserve of the file system's size
	off     bool
	statfs  func(string, *syscall.Statfs_t) error // a seam for tests
}

func newGuard(dir string, reserve int64) (*guard, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return nil, fmt.Errorf("stat store directory: %w", err)
	}
	g := &guard{dir: dir, dev: uint64(st.Dev), ino: st.Ino, statfs: syscall.Statfs}
	switch {
	case reserve < 0:
		g.off = true
	case reserve > 0:
		g.reserve = uint64(reserve)
	}
	return g, nil
}

// check answers nil when a write may go ahead.
func (g *guard) check() error {
	if g == nil {
		return nil
	}
	if err := g.same(); err != nil {
		return err
	}
	if g.off {
		return nil
	}
	var fs syscall.Statfs_t
	if err := g.statfs(g.dir, &fs); err != nil {
		return fmt.Errorf("statfs %s: %w", g.dir, err)
	}
	if fs.Flags&stRdonly != 0 {
		return &UnavailableError{Dir: g.dir}
	}
	free := fs.Bavail * uint64(fs.Bsize)
	reserve := g.reserve
	if reserve == 0 {
		reserve = DefaultReserve(fs.Blocks * uint64(fs.Bsize))
	}
	if free < reserve {
		return &FullError{Dir: g.dir, Free: free, Reserve: reserve}
	}
	return nil
}

// same reports a DamageError when the store directory was removed or
// replaced since open.
func (g *guard) same() error {
	if g == nil {
		return nil
	}
	var st syscall.Stat_t
	err := syscall.Stat(g.dir, &st)
	switch {
	case errors.Is(err, syscall.ENOENT):
		return &DamageError{File: g.dir, Problem: "the store directory was removed while harnessd ran; nothing more is written (it would vanish)",
			Recovery: "stop this daemon; restore the data dir from a backup or start afresh (harness store reset --yes)"}
	case err != nil:
		return fmt.Errorf("stat store directory: %w", err)
	case uint64(st.Dev) != g.dev || st.Ino != g.ino:
		return &DamageError{File: g.dir, Problem: "the store directory was replaced while harnessd ran (another directory is at its path); nothing more is written",
			Recovery: "stop this daemon and start it again on the data dir you mean"}
	}
	return nil
}

// Check reports whether the store directory is still the one opened:
// nil or a *DamageError. The daemon polls it to notice a removed data dir.
func (s *Store) Check() error { return s.guard.same() }
