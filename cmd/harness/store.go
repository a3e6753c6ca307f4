package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/textsafe"
	"github.com/harnessd/harnessd/persistence"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

const storeUsage = `usage: harness store dump [PREFIX] | verify | backup FILE | restore FILE | reset --yes
  dump [PREFIX]   print the store readably (values redacted); prefixes: reg/ fence/ lease/ ledger/ job/ check/ approval/ audit/ receipt/ meta/
  verify          check every table's checksums and that the store holds every write it acknowledged (through the daemon, or offline when it is stopped)
  backup FILE     write a full backup (through the daemon, or offline when it is stopped)
  restore FILE    replace the store with a backup (daemon stopped; the store there is moved aside, never deleted)
  reset --yes     start an empty store (daemon stopped; the old one is moved aside; fencing tokens stay above every token it issued)`

var storeCommand = command{name: "store", usage: "store dump|verify|backup|restore|reset   inspect, check, back up or recover the store", help: strings.Replace(storeUsage, "usage: ", "Usage:\n  ", 1) + "\n",
	subHelp: map[string]string{
		"dump":    "Usage:\n  harness store dump [PREFIX]\n\nPrints the store readably, values redacted; prefixes: reg/ fence/ lease/ ledger/ job/ check/ approval/ audit/ receipt/ meta/\n",
		"verify":  "Usage:\n  harness store verify\n\nChecks every table's checksums and that the store holds every write it acknowledged (through the daemon, or offline when it is stopped).\n",
		"backup":  "Usage:\n  harness store backup FILE\n\nWrites a full backup to FILE (made absolute here; through the daemon, or offline when it is stopped).\n",
		"restore": "Usage:\n  harness store restore FILE\n\nReplaces the store with the backup FILE. Stop the daemon first (harnessd stop); the store there is moved aside, never deleted.\n",
		"reset":   "Usage:\n  harness store reset --yes\n\nStarts an empty store. Stop the daemon first (harnessd stop); the old store is moved aside, the ledger and receipts start empty, fencing tokens stay above every token it issued.\n",
	},
	run: func(ctx context.Context, c *cli, args []string) error {
		if len(args) == 0 {
			return usageErr{"store needs a subcommand: dump, verify, backup, restore, reset"}
		}
		switch args[0] {
		case "dump":
			if len(args) > 2 {
				return usageErr{"usage: harness store dump [PREFIX]"}
			}
			path := "/v1/store/dump"
			if len(args) == 2 {
				path += "?prefix=" + url.QueryEscape(args[1])
			}
			raw, err := c.c.GetRaw(ctx, path)
			if err != nil {
				return err
			}
			// "<key>\t<JSON>" lines: the JSON escapes of textsafe keep
			// each line's JSON valid and its meaning, and no bidi or
			// C1 control of a stored agent string reaches the terminal.
			_, err = c.stdout.Write([]byte(textsafe.JSON(string(raw))))
			return err
		case "verify":
			if len(args) != 1 {
				return usageErr{"usage: harness store verify"}
			}
			return c.storeVerify(ctx)
		case "backup":
			if len(args) != 2 {
				return usageErr{"usage: harness store backup FILE"}
			}
			file, err := absPath(args[1])
			if err != nil {
				return err
			}
			return c.storeBackup(ctx, file)
		case "restore":
			if len(args) != 2 {
				return usageErr{"usage: harness store restore FILE   (stop the daemon first)"}
			}
			file, err := absPath(args[1])
			if err != nil {
				return err
			}
			return c.storeRecover(func(o persistence.Options) (string, persistence.Marks, error) {
				f, err := os.Open(file)
				if err != nil {
					return "", persistence.Marks{}, errs.New(errs.NotFound, "backup %s: %v", file, err)
				}
				defer f.Close()
				return persistence.Restore(o, f)
			}, "restored from "+args[1])
		case "reset":
			if len(args) != 2 || args[1] != "--yes" {
				return usageErr{"usage: harness store reset --yes   (stop the daemon first; the old store is moved aside, the ledger and receipts start empty)"}
			}
			return c.storeRecover(persistence.Reset, "reset: the next start opens an empty store")
		}
		return usageErr{fmt.Sprintf("unknown store subcommand %q (want dump, verify, backup, restore or reset)", args[0])}
	}}

func (c *cli) storeOptions() persistence.Options {
	return persistence.Options{Dir: harness.StoreDir(c.dataDir), MarksPath: harness.MarksPath(c.dataDir)}
}

// offline reports whether err says no daemon answers on the data dir.
func offline(err error) bool { return errs.CodeOf(err) == errs.Unavailable }

func (c *cli) storeVerify(ctx context.Context) error {
	var rep persistence.Report
	raw, err := c.c.GetRaw(ctx, "/v1/store/verify")
	via := "the daemon"
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &rep); err != nil {
			return errs.Wrap(errs.Internal, err, "decode the report: %v", err)
		}
	case offline(err):
		via = "offline (the daemon is not running)"
		s, oerr := persistence.Open(c.storeOptions())
		if oerr != nil {
			return errs.Wrap(errs.Internal, oerr, "%v", oerr)
		}
		rep, err = s.Verify()
		if cerr := s.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return errs.Wrap(errs.Internal, err, "%v", err)
		}
	default:
		return err
	}
	if c.json {
		return json.NewEncoder(c.stdout).Encode(rep)
	}
	fmt.Fprintf(c.stdout, "store intact (checked %s): %s\n", via, rep.Dir)
	fmt.Fprintf(c.stdout, "  store id %s, %d keys, %d B in tables, %d B in the value log\n", rep.Identity.StoreID, rep.Keys, rep.LSMBytes, rep.VlogBytes)
	fmt.Fprintf(c.stdout, "  last synced commit version %d (the marks file recorded %d)\n", rep.Version, rep.Marks.Version)
	fmt.Fprintf(c.stdout, "  fencing tokens up to %d (floor %d)\n", max(rep.FenceHigh, rep.Marks.FenceHigh), rep.Marks.FenceFloor)
	return nil
}

func (c *cli) storeBackup(ctx context.Context, file string) error {
	tmp := file + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return errs.New(errs.InvalidArgument, "backup file %s: %v", file, err)
	}
	defer os.Remove(tmp)
	raw, err := c.c.GetRaw(ctx, "/v1/store/backup")
	via := "the daemon"
	switch {
	case err == nil:
		_, err = f.Write(raw)
	case offline(err):
		via = "offline"
		var s *persistence.Store
		if s, err = persistence.Open(c.storeOptions()); err == nil {
			_, err = s.Backup(f)
			err = errors.Join(err, s.Close())
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errs.Wrap(errs.Internal, err, "backup: %v", err)
	}
	if err := checkBackup(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, file); err != nil {
		return errs.Wrap(errs.Internal, err, "backup: %v", err)
	}
	st, _ := os.Stat(file)
	fmt.Fprintf(c.stdout, "backup written (%s): %s, %d bytes\n", via, file, st.Size())
	return nil
}

// checkBackup loads a backup into a throw-away store, so a stream cut
// short is never taken for a backup.
func checkBackup(path string) error {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".harness-backup-check-")
	if err != nil {
		dir, err = os.MkdirTemp("", "harness-backup-check-")
		if err != nil {
			return errs.Wrap(errs.Internal, err, "backup check: %v", err)
		}
	}
	defer os.RemoveAll(dir)
	f, err := os.Open(path)
	if err != nil {
		return errs.Wrap(errs.Internal, err, "backup check: %v", err)
	}
	defer f.Close()
	if _, _, err := persistence.Restore(persistence.Options{Dir: filepath.Join(dir, "store")}, f); err != nil {
		return errs.Wrap(errs.Internal, err, "the backup does not load (cut short?): %v", err)
	}
	return nil
}

// storeRecover runs a recovery with the data dir's lock held, so no
// daemon runs on the store while it is replaced.
func (c *cli) storeRecover(run func(persistence.Options) (string, persistence.Marks, error), done string) error {
	release, err := daemon.HoldDataDir(c.dataDir)
	if err != nil {
		if errors.Is(err, daemon.ErrAlreadyRunning) {
			return errs.New(errs.InvalidArgument, "%v: stop it first (kill -TERM <its pid>; it finishes what runs and exits)", err)
		}
		return errs.Wrap(errs.Internal, err, "%v", err)
	}
	defer release()
	moved, m, err := run(c.storeOptions())
	if err != nil {
		return errs.Wrap(errs.Internal, err, "%v", err)
	}
	if c.json {
		return json.NewEncoder(c.stdout).Encode(map[string]any{"moved_aside": moved, "marks": m})
	}
	fmt.Fprintf(c.stdout, "store %s\n", done)
	if moved != "" {
		fmt.Fprintf(c.stdout, "  the previous store is kept at %s (remove it yourself once you no longer need it)\n", moved)
	}
	fmt.Fprintf(c.stdout, "  new fencing tokens start above %d\n", m.FenceFloor)
	return nil
}
