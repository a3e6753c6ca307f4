package httpapi_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

// TestMetricsJobResources: once a job that spins for at least a second
// (srand counts whole seconds, so it waits for the second tick) and holds
// 16 MiB ended, /metrics counts its CPU time and reports its peak RSS.
func TestMetricsJobResources(t *testing.T) {
	f := setup(t)
	repo := f.register(t, map[string]string{
		"spin.sh": `awk 'BEGIN{s="x"; for(i=0;i<24;i++) s=s s; srand(); t0=srand(); while (srand()-t0 < 2) n++; print length(s)}'` + "\n",
	})
	ctx := context.Background()
	j, err := f.h.JobStart(ctx, harness.JobStartArgs{RepoID: repo, Argv: []string{"sh", "spin.sh"}, RequestID: "metrics-spin"})
	if err != nil {
		t.Fatalf("job_start: %v", err)
	}
	r, err := f.h.JobStatus(ctx, harness.JobStatusArgs{JobID: j.JobID, WaitS: 60})
	if err != nil || !r.Finished() || r.Resources == nil {
		t.Fatalf("job_status: %+v, %v; want an ended job with its resources", r, err)
	}

	rec := f.do(t, "GET", "/metrics", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d", rec.Code)
	}
	m := rec.Body.String()
	value := func(series string) float64 {
		t.Helper()
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
		got := re.FindStringSubmatch(m)
		if got == nil {
			t.Fatalf("/metrics lacks %s", series)
		}
		v, err := strconv.ParseFloat(got[1], 64)
		if err != nil {
			t.Fatalf("%s = %q: %v", series, got[1], err)
		}
		return v
	}
	if cpu := value("harnessd_job_cpu_seconds_total"); cpu < 0.2 || cpu != float64(r.Resources.CPUMs)/1000 {
		t.Errorf("harnessd_job_cpu_seconds_total = %v, want the job's %d ms (at least 0.2 s)", cpu, r.Resources.CPUMs)
	}
	if peak := value("harnessd_job_peak_rss_bytes"); peak < 16<<20 {
		t.Errorf("harnessd_job_peak_rss_bytes = %v, want at least 16 MiB", peak)
	}
	value(`harnessd_job_io_bytes_total{direction="read"}`)
	value(`harnessd_job_io_bytes_total{direction="write"}`)
}
