package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
)

// People's endpoints: approvals, policy reload and the audit log. They are
// not operations, so no MCP tool reaches them, and Handler guards them with
// the human token; a decision records the credential that made it.
func humanRoutes(mux guardedMux, h *harness.Harness, token string) {
	mux.HandleFunc("GET /v1/approvals", func(w http.ResponseWriter, r *http.Request) {
		out, err := h.Approvals(r.Context(), r.URL.Query().Get("status"))
		respond(w, out, err)
	})
	decide := func(approve bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				By     string `json:"by"`
				Reason string `json:"reason"`
			}
			if b, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10)); len(b) > 0 {
				if err := json.Unmarshal(b, &body); err != nil {
					writeError(w, errs.New(errs.InvalidArgument, "body: %v", err))
					return
				}
			}
			by := strings.TrimSpace(body.By)
			if by == "" {
				by = "person"
			}
			by += " (token " + TokenFingerprint(token) + ")"
			out, err := h.DecideApproval(r.Context(), r.PathValue("id"), approve, by, body.Reason)
			respond(w, out, err)
		}
	}
	mux.HandleFunc("POST /v1/approvals/{id}/approve", decide(true))
	mux.HandleFunc("POST /v1/approvals/{id}/deny", decide(false))
	// Allowed areas: where agents may register roots without asking.
	mux.HandleFunc("GET /v1/roots", func(w http.ResponseWriter, r *http.Request) {
		out, err := h.AllowedAreas(r.Context())
		if err != nil {
			writeError(w, err)
			return
		}
		if out == nil {
			out = []harness.AllowedArea{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"areas": out, "suspended": h.Suspended(r.Context())})
	})
	mux.HandleFunc("POST /v1/roots", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Dir string `json:"dir"`
			By  string `json:"by"`
		}
		b, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		if err := json.Unmarshal(b, &body); err != nil || body.Dir == "" {
			writeError(w, errs.New(errs.InvalidArgument, "body: want {\"dir\": \"/absolute/dir\"}"))
			return
		}
		by := strings.TrimSpace(body.By)
		if by == "" {
			by = "person"
		}
		out, err := h.AllowArea(r.Context(), body.Dir, by+" (token "+TokenFingerprint(token)+")")
		respond(w, out, err)
	})
	mux.HandleFunc("DELETE /v1/roots", func(w http.ResponseWriter, r *http.Request) {
		dir := r.URL.Query().Get("dir")
		if dir == "" {
			writeError(w, errs.New(errs.InvalidArgument, "dir is required: DELETE /v1/roots?dir=/absolute/dir"))
			return
		}
		err := h.RemoveArea(r.Context(), dir)
		respond(w, map[string]any{"removed": dir}, err)
	})
	mux.HandleFunc("GET /v1/policy", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, h.Policy())
	})
	mux.HandleFunc("POST /v1/policy/reload", func(w http.ResponseWriter, r *http.Request) {
		out, err := h.ReloadPolicy(r.Context())
		respond(w, out, err)
	})
	mux.HandleFunc("GET /v1/audit", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a := harness.AuditArgs{Kind: q.Get("kind"), RepoID: q.Get("repo_id"), Operation: q.Get("operation"), RequestID: q.Get("request_id"), RunID: q.Get("run_id")}
		if v := q.Get("limit"); v != "" {
			a.Limit, _ = strconv.Atoi(v)
		}
		if v := q.Get("after_seq"); v != "" {
			a.AfterSeq, _ = strconv.ParseUint(v, 10, 64)
		}
		if v := q.Get("since"); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				writeError(w, errs.New(errs.InvalidArgument, "since: want RFC 3339 time: %v", err))
				return
			}
			a.Since = t
		}
		out, err := h.Audit(r.Context(), a)
		respond(w, out, err)
	})
	mux.HandleFunc("GET /v1/audit/verify", func(w http.ResponseWriter, r *http.Request) {
		var anchor *harness.AuditAnchor
		if v := r.URL.Query().Get("anchor"); v != "" {
			a, err := harness.ParseAuditAnchor(v)
			if err != nil {
				writeError(w, err)
				return
			}
			anchor = &a
		}
		out, err := h.AuditVerifyAnchored(r.Context(), anchor)
		respond(w, out, err)
	})
	mux.HandleFunc("POST /v1/audit/rotate-key", func(w http.ResponseWriter, r *http.Request) {
		out, err := h.AuditRotateKey(r.Context())
		respond(w, out, err)
	})
	mux.HandleFunc("POST /v1/audit/anchor", func(w http.ResponseWriter, r *http.Request) {
		var a harness.AuditAnchorArgs
		if b, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10)); len(b) > 0 {
			if err := json.Unmarshal(b, &a); err != nil {
				writeError(w, errs.New(errs.InvalidArgument, "body: %v", err))
				return
			}
		}
		out, err := h.AuditAnchorHead(r.Context(), a)
		respond(w, out, err)
	})
}

func respond(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
