package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
)

// jobLogPoll is how often a followed log is polled for new output.
const jobLogPoll = 200 * time.Millisecond

// jobRoutes serves the log streaming of durable jobs.
func jobRoutes(mux *http.ServeMux, h *harness.Harness) {
	mux.HandleFunc("GET /v1/jobs/{id}/logs", func(w http.ResponseWriter, r *http.Request) { jobLogs(w, r, h) })
}

// jobLogs serves GET /v1/jobs/{id}/logs?stream=stdout|stderr&offset=N&follow=1
// as text/plain; with follow it streams (chunked) until the job ends or the
// client goes away. A client that reconnects adds the bytes it received to
// its offset (offsets count the redacted stream).
func jobLogs(w http.ResponseWriter, r *http.Request, h *harness.Harness) {
	q := r.URL.Query()
	args := harness.JobLogsArgs{JobID: r.PathValue("id"), Stream: q.Get("stream")}
	if s := q.Get("offset"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			WriteError(w, errs.New(errs.InvalidArgument, "offset %q is not a non-negative integer", s))
			return
		}
		args.Offset = n
	}
	follow := q.Get("follow") == "1" || q.Get("follow") == "true"
	ctx := r.Context()
	first, err := h.JobLogs(ctx, args)
	if err != nil {
		WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Job-State", first.State)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	res := first
	for {
		if res.Data != "" {
			if _, err := w.Write([]byte(res.Data)); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		args.Offset = res.NextOffset
		if res.EOF || (!follow && args.Offset >= res.Total) {
			return
		}
		if res.Data == "" {
			select {
			case <-ctx.Done():
				return
			case <-time.After(jobLogPoll):
			}
		}
		res, err = h.JobLogs(ctx, args)
		if err != nil {
			if ctx.Err() == nil && errs.CodeOf(err) != errs.Unavailable {
				_, _ = w.Write([]byte("\n[harnessd: " + err.Error() + "]\n"))
			}
			return
		}
	}
}
