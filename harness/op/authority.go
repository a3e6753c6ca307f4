package op

import (
	"context"
	"sync"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/authority"
	"github.com/harnessd/harnessd/messages"
)

// Authority is who may grant agents which roots (DESIGN §13): the rules
// of internal/authority over this machine, and the allowed areas people
// configured. The zero value knows no machine and no areas: every root an
// agent registers then needs a person.
type Authority struct {
	// Env is the machine: the home, harnessd's own directories.
	Env authority.Env
	// Areas returns the allowed areas now (the configured ones, the
	// policy's roots and those people added; a reload changes them).
	// Nil = none.
	Areas func() authority.Areas

	// suspended holds the roots (repo or target id → why) whose grant the
	// rules no longer cover: their operations answer PATH_NOT_ALLOWED
	// until a person confirms them.
	suspended sync.Map
}

type personKey struct{}

// AsPerson returns ctx for calls a person makes: the CLI and the HTTP API
// with the human token, the console, the embedding program's own calls.
// A root such a call registers is granted by that person (who says how:
// "cli (token 1a2b…)", "embedding").
func AsPerson(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, personKey{}, who)
}

// PersonFrom returns who the person making the calls of ctx is.
func PersonFrom(ctx context.Context) (string, bool) {
	who, ok := ctx.Value(personKey{}).(string)
	return who, ok && who != ""
}

// Grant is how a root may be granted on one call: By (see
// messages.RootGrant), or Ask, the reason a person must approve it.
type Grant struct {
	By  string
	Ask string
}

// Record is the grant to record once the call runs: By, or the approval
// the gate accepted for an Ask.
func (g Grant) Record(approvalID string, now time.Time) messages.RootGrant {
	by := g.By
	if by == "" && approvalID != "" {
		by = "approval:" + approvalID
	}
	return messages.RootGrant{By: by, At: now.UTC()}
}

// GrantFor decides how root (canonical, absolute) may be granted on the
// call of ctx: never (PATH_NOT_ALLOWED naming the rule), inside an allowed
// area, by the person making the call, or only with a person's approval
// of exactly this input (Ask: the operation gives it to the gate, whose
// approval check lets the call run; the grant is then "approval:<id>").
func (e *Env) GrantFor(ctx context.Context, what, root string) (Grant, error) {
	a := e.Authority
	if a == nil {
		a = &Authority{}
	}
	if n, never := authority.NeverGrantable(root, a.Env); never {
		return Grant{}, errs.New(errs.PathNotAllowed, "%s", n.Reason).With("path", root).With("rule", n.Rule)
	}
	if a.Areas != nil {
		if area, ok := a.Areas().Contains(root); ok {
			return Grant{By: "area:" + area}, nil
		}
	}
	if who, ok := PersonFrom(ctx); ok {
		return Grant{By: "person:" + who}, nil
	}
	return Grant{Ask: "granting agents the " + what + " " + root + " needs a person: it is outside the allowed areas " +
		"(harnessd serve --allow-root DIR, the policy's roots, or harness roots allow DIR); a person can also approve exactly this request, " +
		"or register it themselves (harness repo add / harness target add)"}, nil
}

// Suspension returns why a registered root's grant is no longer covered
// by the rules ("" when it is): the root became never grantable, it was
// registered before grants were kept, or the area that granted it is no
// longer allowed. A person's or an approval's grant stands.
func (e *Env) Suspension(root string, g messages.RootGrant) string {
	a := e.Authority
	if a == nil {
		a = &Authority{}
	}
	if n, never := authority.NeverGrantable(root, a.Env); never {
		return n.Reason
	}
	switch messages.GrantRank(g) {
	case 2:
		return ""
	case 1:
		if a.Areas != nil {
			if _, ok := a.Areas().Contains(root); ok {
				return ""
			}
		}
		return "it was granted by the allowed area " + g.By[len("area:"):] + ", which no longer holds it"
	}
	if a.Areas != nil {
		if _, ok := a.Areas().Contains(root); ok {
			return ""
		}
	}
	return "it was registered before harnessd kept who granted roots, and no allowed area holds it"
}

// Suspend marks the root of id (a repo or target id) suspended for
// reason; "" lifts it.
func (e *Env) Suspend(id, reason string) {
	if e.Authority == nil {
		return
	}
	if reason == "" {
		e.Authority.suspended.Delete(id)
		return
	}
	e.Authority.suspended.Store(id, reason)
}

// Suspended returns why the root of id is suspended, if it is.
func (e *Env) Suspended(id string) (string, bool) {
	if e.Authority == nil {
		return "", false
	}
	v, ok := e.Authority.suspended.Load(id)
	if !ok {
		return "", false
	}
	return v.(string), true
}

// suspendedErr is the answer of an operation on a suspended root.
func suspendedErr(kind, id, root, reason, fix string) error {
	return errs.New(errs.PathNotAllowed, "%s %s (%s) is suspended: %s; a person confirms it with `%s`, or allows an area that holds it", kind, id, root, reason, fix).
		With("suspended", true).With("path", root)
}

// SuspendedRepo is the answer of an operation on a suspended repository.
func SuspendedRepo(id, root, reason string) error {
	return suspendedErr("repository", id, root, reason, "harness repo add "+root)
}

// SuspendedTarget is the answer of an operation on a suspended target.
func SuspendedTarget(id, root, reason string) error {
	return suspendedErr("target", id, root, reason, "harness target add "+root)
}
