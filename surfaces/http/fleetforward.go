package httpapi

import (
	"io"
	"net/http"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/fleet"
)

// forwarded serves POST /v1/fleet/forward/{op}: an operation another node
// of the fleet forwards to this one, the home of the repository it names
// (docs/fleet.md). Its credential is the fleet secret as a bearer token
// (compared in constant time; 401 and nothing runs otherwise), never the
// human token: the call runs as an agent's (harness.CallForwarded).
func (a *api) forwarded(n *fleet.Node) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !n.Authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="harnessd-fleet"`)
			writeError(w, errs.New(errs.Unauthenticated, "a forwarded call needs the fleet secret as a bearer token (only nodes of the fleet forward)"))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			writeError(w, errs.New(errs.InvalidArgument, "request body: %v", err))
			return
		}
		start, name := time.Now(), r.PathValue("op")
		who := fleet.Forwarded{Client: r.Header.Get(fleet.HeaderClient), Session: r.Header.Get(fleet.HeaderSession), Role: r.Header.Get(fleet.HeaderRole)}
		out, err := a.h.CallForwarded(r.Context(), r.Header.Get(fleet.HeaderForwardedFrom), who, name, body)
		if _, known := a.h.Registry().Lookup(name); known {
			a.m.Observe("fleet", name, err, time.Since(start))
		}
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}
