package op

import (
	"context"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/messages"
)

// Roles the gate enforces. A session acts as one role, named in its
// Caller by the person who started the client (harnessd mcp --role, the
// MCP URL's ?role=, the policy); a caller that names none acts as
// Operator, today's behaviour and the embedding API's. Each operation's
// descriptor says which roles may call it. The pipeline decides before
// anything of the call runs (before the repository is resolved, before
// Prepare), and a composite operation (batch, read_lanes) decides for each
// of its steps too, with the step's own roles. Nothing an agent sends
// changes its role: the toolsets an MCP session shows change what it sees,
// never what it may call.

// CallerRole returns the role c acts as: the one its Role names, Operator
// when it names none, or INVALID_ARGUMENT naming the roles there are.
func CallerRole(c messages.Caller) (Roles, error) {
	if c.Role == "" {
		return Operator, nil
	}
	return ParseRole(c.Role)
}

// RoleDecision decides whether a caller acting as role may call the
// operation name, which the roles may may call: nil, or ROLE_DENIED naming
// the roles it needs and how a person grants one. role is a single role;
// an empty one may call nothing.
func RoleDecision(name string, role, may Roles) error {
	if role != 0 && may.Has(role) {
		return nil
	}
	need := may.Names()
	hint := "operator"
	if len(need) > 0 {
		hint = need[0]
	}
	return errs.New(errs.RoleDenied, "%s needs the role %s; this session acts as %s. Use the tools of its role, or ask the person who starts the client to grant one "+
		"(harnessd mcp --role %s, HARNESSD_ROLE=%s, ?role=%s on the MCP URL): an agent cannot raise its own role",
		name, strings.Join(need, " or "), role, hint, hint, hint).
		With("role", role.String()).With("roles", may.String()).With("operation", name)
}

// checkRole refuses, and audits, a call of o by the caller ctx carries
// when its role may not call it; it gives c the caller's role (its steps
// and lanes check with it).
func (c *Call) checkRole(ctx context.Context, o *Op) error {
	who, ok := CallerFrom(ctx)
	if !ok || who.Role == "" { // Operator: may call every operation (Registry.Check)
		return nil
	}
	c.Caller.Role = who.Role
	return c.refuseRole(o, who)
}

// checkRoleOf refuses, and audits, o called by c.Caller (a step, with its
// parent's caller).
func (c *Call) checkRoleOf(o *Op) error {
	if c.Caller.Role == "" {
		return nil
	}
	return c.refuseRole(o, c.Caller)
}

// refuseRole decides o for who, and audits a refusal.
func (c *Call) refuseRole(o *Op, who messages.Caller) error {
	role, err := CallerRole(who)
	if err == nil {
		err = RoleDecision(o.Name, role, o.Roles)
	}
	if err == nil || c.Env.Gov == nil {
		return err
	}
	in := govern.Input{Tool: o.Name, Caller: who}
	if c.HasRepo() {
		repo := c.Repo.Repo
		in.Repo = &repo
	}
	return c.Env.Gov.RefuseRole(in, err)
}
