package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

// TestJobPageShowsResources: the job page shows the figures of the job's
// process tree once it has them.
func TestJobPageShowsResources(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	j, err := f.h.JobStart(ctx, harness.JobStartArgs{RepoID: f.repoID, RequestID: "console-resources",
		Argv: []string{"awk", `BEGIN{s="x"; for(i=0;i<24;i++) s=s s; print length(s)}`}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.h.JobStatus(ctx, harness.JobStatusArgs{JobID: j.JobID, WaitS: 60})
	if err != nil || !r.Finished() || r.Resources == nil {
		t.Fatalf("job_status: %+v, %v; want an ended job with its resources", r, err)
	}
	b := f.browser(t)
	b.login(testToken)
	_, body := b.get("/ui/jobs/" + j.JobID)
	i := strings.Index(body, `id="job-resources"`)
	if i < 0 {
		t.Fatalf("the job page has no resources:\n%s", body)
	}
	line := body[i:]
	line = line[:strings.Index(line, "</dd>")]
	for _, want := range []string{" s CPU", "MiB resident", "written to storage", "processes at most"} {
		if !strings.Contains(line, want) {
			t.Errorf("resources %q: want %q", line, want)
		}
	}
	if strings.Contains(line, "so far") {
		t.Errorf("resources %q: an ended job's figures are not \"so far\"", line)
	}
}
