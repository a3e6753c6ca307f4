package httpapi

import (
	"net/http"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
)

// storeRoutes serves the store dump for people debugging a data dir.
func storeRoutes(mux guardedMux, h *harness.Harness) {
	mux.HandleFunc("GET /v1/store/dump", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if _, err := h.DumpStore(r.Context(), r.URL.Query().Get("prefix"), w); err != nil {
			h.Logger().Warn("store dump stopped early")
		}
	})
	mux.HandleFunc("GET /v1/store/verify", func(w http.ResponseWriter, r *http.Request) {
		rep, err := h.VerifyStore(r.Context())
		if err != nil {
			e := errs.From(err).With("report", rep)
			writeError(w, e)
			return
		}
		writeJSON(w, http.StatusOK, rep)
	})
	mux.HandleFunc("GET /v1/store/backup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		if _, err := h.BackupStore(r.Context(), w); err != nil {
			h.Logger().Warn("store backup stopped early")
		}
	})
}
