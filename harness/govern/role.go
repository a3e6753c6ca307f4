package govern

import (
	"fmt"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/mediate"
)

// RuleRole names the role check in audit entries: the role the caller's
// session acts as may not call the operation (ROLE_DENIED).
const RuleRole = "role"

// RefuseRole audits a call refused for the role its caller acts as
// (ROLE_DENIED, decided before anything of the operation ran) as the gate
// audits its own blocks, and returns err. The entry's details carry the
// error's string details (the caller's role, the roles that may call).
func (g *Governor) RefuseRole(in Input, err error) error {
	e := errs.From(err)
	repoID := ""
	if in.Repo != nil {
		repoID = in.Repo.ID
	}
	entry := audit.Entry{Kind: audit.KindRejection, Operation: in.Tool, RepoID: repoID, Outcome: string(mediate.Block),
		Code: string(e.Code), Reason: e.Message, RuleID: RuleRole}
	for k, v := range e.Details {
		if entry.Details == nil {
			entry.Details = map[string]string{}
		}
		entry.Details[k] = fmt.Sprint(v)
	}
	Identify(&entry, in.Caller)
	g.AuditAppend(entry)
	return err
}
