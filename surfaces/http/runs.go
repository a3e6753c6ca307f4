package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/jsonx"
	"github.com/harnessd/harnessd/messages"
)

// sseKeepAlive is how often an idle event stream sends a comment line, so
// proxies and clients see the connection alive.
const sseKeepAlive = 15 * time.Second

// runRoutes serves the runs to people: the list, one run with its spans,
// and its events as a Server-Sent Events stream.
func runRoutes(mux *http.ServeMux, h *harness.Harness) {
	mux.HandleFunc("GET /v1/runs", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		args := harness.RunListArgs{Status: q.Get("status")}
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				writeError(w, errs.New(errs.InvalidArgument, "limit %q is not a number", s))
				return
			}
			args.Limit = n
		}
		out, err := h.RunList(r.Context(), args)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"runs": out.Runs})
	})
	mux.HandleFunc("GET /v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		st, err := h.RunStatus(r.Context(), harness.RunStatusArgs{RunID: r.PathValue("id"), IncludeSpans: true})
		if err != nil {
			writeError(w, err)
			return
		}
		spans := st.Spans
		if spans == nil {
			spans = []messages.RunSpan{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"state": st.RunState, "spans": spans, "dropped_spans": st.DroppedSpans})
	})
	mux.HandleFunc("GET /v1/runs/{id}/events", func(w http.ResponseWriter, r *http.Request) { runEvents(w, r, h) })
}

// runEvents streams a run: first its spans so far (as span events) and
// its state, then every event as it happens, until the run ends or the
// client goes away. A client too slow to keep up is told and cut off
// (reconnecting replays the spans).
func runEvents(w http.ResponseWriter, r *http.Request, h *harness.Harness) {
	id := r.PathValue("id")
	ctx := r.Context()
	evs := make(chan messages.RunEvent, 1024)
	lagged := make(chan struct{}, 1)
	cancel := h.SubscribeRuns(func(ev messages.RunEvent) {
		if ev.RunID != id {
			return
		}
		select {
		case evs <- ev:
		default:
			select {
			case lagged <- struct{}{}:
			default:
			}
		}
	})
	defer cancel()
	st, err := h.RunStatus(ctx, harness.RunStatusArgs{RunID: id, IncludeSpans: true})
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(ev messages.RunEvent) bool {
		b, err := jsonx.Marshal(ev)
		if err != nil {
			return false
		}
		if _, err := w.Write([]byte("event: " + ev.Type + "\ndata: " + string(b) + "\n\n")); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	seen := make(map[string]bool, len(st.Spans))
	for i := range st.Spans {
		seen[st.Spans[i].SpanID] = true
		if !send(messages.RunEvent{RunID: id, Type: "span", Span: &st.Spans[i]}) {
			return
		}
	}
	state := st.RunState
	if !send(messages.RunEvent{RunID: id, Type: "state", State: &state}) || state.Status != messages.RunActive {
		return
	}
	tick := time.NewTicker(sseKeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lagged:
			_, _ = w.Write([]byte(": harnessd: the client fell behind; reconnect to replay the run\n\n"))
			return
		case <-tick.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		case ev := <-evs:
			if (ev.Span != nil && seen[ev.Span.SpanID]) || ev.Type == "end" {
				continue // the state event before it said the run ended
			}
			if !send(ev) {
				return
			}
			if ev.State != nil && ev.State.Status != messages.RunActive {
				return
			}
		}
	}
}
