package op

import (
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness/govern"
	"github.com/harnessd/harnessd/internal/route"
)

// GateArgs is the gate input of an operation the gate sees by its
// arguments only (no paths, argv or writes).
func GateArgs(args any) govern.Input { return govern.Input{Args: args} }

// RouteError turns a non-fast routing decision into its coded error, with
// the decision (and the suggested operation) as details.
func RouteError(d route.Decision) error {
	switch d.Mode {
	case route.Fast:
		return nil
	case route.Durable:
		msg := "this operation needs the Durable Path"
		if len(d.Reasons) > 0 {
			msg += ": " + d.Reasons[0]
		}
		return errs.New(errs.RouteDurableRequired, "%s", msg).With("decision", d).With("suggested_operation", d.SuggestedOperation)
	default:
		msg := "rejected"
		if len(d.Reasons) > 0 {
			msg += ": " + d.Reasons[0]
		}
		return errs.New(errs.RouteRejected, "%s", msg).With("decision", d)
	}
}
