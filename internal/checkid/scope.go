package checkid

import (
	"sort"
	"strings"
)

// ScopeFacts are what decides whether a check's evidence may be shared
// by the other checkouts (worktrees) of a repository.
type ScopeFacts struct {
	// CommonDir is the repository's git common dir ("" = none known: no
	// other checkout can be found).
	CommonDir string
	// Clean: the asking checkout has no change beyond HEAD (Revision.Clean).
	Clean bool
	// Writes and Network are the check's declared effects
	// (workspace_write, network).
	Writes, Network bool
	// PrivateTmp: the check runs with a temp directory of its own (the
	// sandbox confines checks); false = it shares the host's with every
	// other process, so what another checkout's run left there may decide
	// its outcome.
	PrivateTmp bool
	// Env is the environment fingerprint: a toolchain whose probe failed
	// ("unavailable: ...") is not known to be the same in another checkout.
	Env Env
}

// Scope decides whether the evidence of a check is shared across the
// checkouts of its repository: only for a clean asking checkout, a check
// with bounded effects (no workspace writes, no network, a private temp
// directory) and a toolchain whose fingerprint succeeded. Otherwise it is
// checkout-scoped, and why says why (one reason per failed condition, in
// words for the agent).
func Scope(f ScopeFacts) (shared bool, why []string) {
	if f.CommonDir == "" {
		why = append(why, "the repository's git common dir is unknown")
	}
	if !f.Clean {
		why = append(why, "the checkout has changes beyond HEAD")
	}
	if f.Writes {
		why = append(why, "the check declares workspace_write")
	}
	if f.Network {
		why = append(why, "the check declares network")
	}
	if !f.PrivateTmp {
		why = append(why, "the check shares the host's temp directory (the sandbox does not confine checks here)")
	}
	if failed := failedProbes(f.Env); len(failed) > 0 {
		why = append(why, "the toolchain fingerprint failed: "+strings.Join(failed, "; "))
	}
	return len(why) == 0, why
}

// failedProbes returns the tools of e whose fingerprint failed, as
// "name: reason", sorted.
func failedProbes(e Env) []string {
	var out []string
	for name, v := range e.Tools {
		if reason, ok := strings.CutPrefix(v, Unavailable); ok {
			out = append(out, name+": "+reason)
		}
	}
	sort.Strings(out)
	return out
}
