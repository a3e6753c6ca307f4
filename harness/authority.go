package harness

import (
	"context"
	"errors"
	"os"
	"slices"
	"sort"
	"sync"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/authority"
	"github.com/harnessd/harnessd/internal/policy"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
)

// areasKey is where the allowed areas people added (harness roots allow)
// are kept.
func areasKey() []byte { return persistence.MetaKey("allowed-areas") }

// storedAreas are the allowed areas people added, as stored.
type storedAreas struct {
	Areas []AllowedArea `json:"areas"`
}

// AllowedArea is a directory inside which agents may register roots
// without asking, and where it comes from: "flag" (--allow-root or
// Config.AllowRoots), "policy" (its roots list) or "person" (added with
// harness roots allow; By says who).
type AllowedArea struct {
	Dir    string `json:"dir"`
	Source string `json:"source"`
	By     string `json:"by,omitempty"`
}

// areas keeps the allowed areas of a Harness: the configured ones (fixed
// at Open), the policy's (canonicalised once per policy digest) and those
// people added (in the store).
type areas struct {
	mu       sync.Mutex // protects the fields below
	flags    authority.Areas
	digest   string
	policy   authority.Areas
	people   []AllowedArea
	combined authority.Areas
}

// canonicalAreas canonicalises dirs, dropping the ones that are not
// directories (a policy may name an area that does not exist yet).
func canonicalAreas(dirs []string) authority.Areas {
	var out authority.Areas
	for _, d := range dirs {
		c := authority.Canonical(d)
		if c == "" {
			continue
		}
		if fi, err := os.Stat(c); err != nil || !fi.IsDir() {
			continue
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// current returns every allowed area for the policy p.
func (a *areas) current(p *policy.Policy) authority.Areas {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d := p.Digest(); d != a.digest || a.combined == nil {
		a.digest, a.policy = d, canonicalAreas(p.Roots())
		a.combine()
	}
	return a.combined
}

// combine recomputes the union; a.mu is held.
func (a *areas) combine() {
	out := authority.Areas{}
	for _, l := range []authority.Areas{a.flags, a.policy} {
		for _, d := range l {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	for _, p := range a.people {
		if !slices.Contains(out, p.Dir) {
			out = append(out, p.Dir)
		}
	}
	a.combined = out
}

// setupAuthority builds the Authority of the operations: the machine
// (home, harnessd's own directories) and the allowed areas.
func (h *Harness) setupAuthority(hidden []string) error {
	flags, err := authority.NewAreas(h.cfg.AllowRoots)
	if err != nil {
		return errs.New(errs.InvalidArgument, "allowed areas (--allow-root): %v", err)
	}
	var st storedAreas
	if err := h.store.Get(areasKey(), &st); err != nil && !errors.Is(err, persistence.ErrNotFound) {
		return errs.Wrap(errs.Internal, err, "read the allowed areas: %v", err)
	}
	h.areas = &areas{flags: flags, people: st.Areas}
	all := append(append([]string(nil), hidden...), h.sb.TmpRoot())
	env := authority.EnvFrom(os.Environ(), all)
	h.env.Authority = &op.Authority{Env: env, Areas: func() authority.Areas { return h.areas.current(h.gov.LoadedPolicy()) }}
	return nil
}

// checkGrants suspends every registered root the rules no longer cover
// (never grantable now, registered before grants were kept, or granted by
// an area no longer allowed) and lifts the suspension of the others. It
// runs at start-up and after the allowed areas change; each suspension is
// logged, so a person sees it.
func (h *Harness) checkGrants(ctx context.Context) {
	repos, err := h.rt.Registry.List(ctx)
	if err != nil {
		h.lg.Warn("authority: list repositories", zap.Error(err))
	}
	for _, r := range repos {
		h.checkGrant("repository", r.ID, r.Root, r.Grant, "harness repo add ROOT")
	}
	targets, err := h.rt.Targets.List(ctx)
	if err != nil {
		h.lg.Warn("authority: list targets", zap.Error(err))
	}
	for _, t := range targets {
		h.checkGrant("target", t.TargetID, t.Root, t.Grant, "harness target add ROOT")
	}
}

// checkGrant suspends (and logs, the first time) or lifts one root.
func (h *Harness) checkGrant(kind, id, root string, g messages.RootGrant, fix string) {
	why := h.env.Suspension(root, g)
	if _, was := h.env.Suspended(id); why != "" && !was {
		h.lg.Warn("authority: a "+kind+"'s grant is not covered by the rules: suspended until a person confirms it ("+fix+")",
			zap.String("id", id), zap.String("root", root), zap.String("why", why))
	}
	h.env.Suspend(id, why)
}

// Suspended lists the registered roots whose grant is suspended (id →
// why), for status.
func (h *Harness) Suspended(ctx context.Context) map[string]string {
	out := map[string]string{}
	repos, _ := h.rt.Registry.List(ctx)
	for _, r := range repos {
		if why, ok := h.env.Suspended(r.ID); ok {
			out[r.ID] = why
		}
	}
	targets, _ := h.rt.Targets.List(ctx)
	for _, t := range targets {
		if why, ok := h.env.Suspended(t.TargetID); ok {
			out[t.TargetID] = why
		}
	}
	return out
}

// AllowedAreas lists the allowed areas: the configured ones, the policy's
// and those people added, sorted by directory.
func (h *Harness) AllowedAreas(ctx context.Context) ([]AllowedArea, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	h.areas.current(h.gov.LoadedPolicy())
	h.areas.mu.Lock()
	var out []AllowedArea
	for _, d := range h.areas.flags {
		out = append(out, AllowedArea{Dir: d, Source: "flag"})
	}
	for _, d := range h.areas.policy {
		out = append(out, AllowedArea{Dir: d, Source: "policy"})
	}
	out = append(out, h.areas.people...)
	h.areas.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// AllowArea adds an allowed area for people (harness roots allow DIR): a
// directory inside which agents may register repositories and targets
// without asking. It is for people (CLI and HTTP API with the human
// token, the console), never an MCP tool. dir must be absolute and exist,
// and may not be a never-grantable path's ancestor in a way that would
// grant one (the rules still refuse every never-grantable root inside it).
func (h *Harness) AllowArea(ctx context.Context, dir, by string) (AllowedArea, error) {
	leave, err := h.enter()
	if err != nil {
		return AllowedArea{}, err
	}
	defer leave()
	a, err := authority.NewAreas([]string{dir})
	if err != nil {
		return AllowedArea{}, errs.New(errs.InvalidArgument, "%v", err).With("dir", dir)
	}
	if len(a) == 0 {
		return AllowedArea{}, errs.New(errs.InvalidArgument, "an allowed area is a directory: give its absolute path")
	}
	area := AllowedArea{Dir: a[0], Source: "person", By: by}
	if err := h.updatePeopleAreas(func(l []AllowedArea) []AllowedArea {
		for _, x := range l {
			if x.Dir == area.Dir {
				return l
			}
		}
		return append(l, area)
	}); err != nil {
		return AllowedArea{}, err
	}
	h.gov.AuditAppend(audit.Entry{Kind: audit.KindAuthority, Operation: "roots_allow", Outcome: "allowed", Reason: "allowed area " + area.Dir, Actor: "person"})
	h.checkGrants(ctx)
	return area, nil
}

// RemoveArea removes an allowed area people added. Roots granted by it are
// suspended until a person confirms them or another area holds them.
func (h *Harness) RemoveArea(ctx context.Context, dir string) error {
	leave, err := h.enter()
	if err != nil {
		return err
	}
	defer leave()
	c := authority.Canonical(dir)
	found := false
	if err := h.updatePeopleAreas(func(l []AllowedArea) []AllowedArea {
		out := l[:0:0]
		for _, x := range l {
			if x.Dir == c || x.Dir == dir {
				found = true
				continue
			}
			out = append(out, x)
		}
		return out
	}); err != nil {
		return err
	}
	if !found {
		return errs.New(errs.NotFound, "%s is not an allowed area people added (see harness roots; areas of --allow-root and the policy are changed there)", dir).With("dir", dir)
	}
	h.gov.AuditAppend(audit.Entry{Kind: audit.KindAuthority, Operation: "roots_remove", Outcome: "removed", Reason: "allowed area " + c, Actor: "person"})
	h.checkGrants(ctx)
	return nil
}

func (h *Harness) updatePeopleAreas(f func([]AllowedArea) []AllowedArea) error {
	h.areas.mu.Lock()
	defer h.areas.mu.Unlock()
	l := f(append([]AllowedArea(nil), h.areas.people...))
	if err := h.store.PutSync(areasKey(), storedAreas{Areas: l}); err != nil {
		return errs.Wrap(errs.Internal, err, "persist the allowed areas: %v", err)
	}
	h.areas.people = l
	h.areas.combine()
	return nil
}
