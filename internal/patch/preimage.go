package patch

import (
	"os"

	"github.com/harnessd/harnessd/contract/errs"
)

// PreImage is the original state of a file a patch changes, handed to
// Options.PreImage before anything is written.
type PreImage struct {
	Rel     string
	Existed bool
	// Link is set when the file was a symbolic link; Data is its target.
	Link bool
	Data []byte
	Mode os.FileMode
	// Digest is the SHA-256 of Data ("" when the file did not exist).
	Digest string
	// Info is the lstat the plan read the file by (nil when it did not
	// exist): the hook can decide on it (pathsafe.Root.CheckLeaf).
	Info os.FileInfo
}

// before checks Options.Expect and hands the pre-images to
// Options.PreImage: the last steps of a plan before its commit.
func (p *plan) before(o Options) error {
	if o.Expect != nil {
		for _, f := range p.files {
			want, ok := o.Expect[f.rel]
			if !ok {
				continue
			}
			have := ""
			if f.existed {
				have = f.origDigest
			}
			if have != want {
				return errs.New(errs.PatchConflict, "%q changed since it was recorded: its sha256 is %s, expected %s", f.rel, orAbsent(have), orAbsent(want)).
					With("path", f.rel).With("sha256", orAbsent(have)).With("expected_sha256", orAbsent(want))
			}
		}
	}
	if o.PreImage == nil {
		return nil
	}
	for _, f := range p.files {
		if f.unchanged() {
			continue
		}
		pi := PreImage{Rel: f.rel, Existed: f.existed, Link: f.isLink, Mode: f.origMode, Info: f.info}
		if f.existed {
			pi.Digest = f.origDigest
			pi.Data = f.origData
			if f.isLink {
				pi.Data = []byte(f.linkTarget)
			}
		}
		if err := o.PreImage(pi); err != nil {
			return err
		}
	}
	return nil
}

func orAbsent(d string) string {
	if d == "" {
		return "absent"
	}
	return d
}
