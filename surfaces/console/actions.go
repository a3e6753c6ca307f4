package console

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
)

// The console's actions are people's calls (harness.AsPerson "console"):
// each is a POST behind the login and the session's CSRF token (authed),
// answered by a redirect whose ?done= the page turns into its flash, or
// by the error page with the stable code and message.

// actionResult is the outcome of one item of a bulk action.
type actionResult struct {
	ID      string
	Outcome string // approved, denied, or "" on error
	Error   *errs.Error
}

var (
	jobIDRE     = regexp.MustCompile(`^job_[0-9a-z]{1,60}$`)
	runIDRE     = regexp.MustCompile(`^run_[0-9A-Za-z_-]{1,80}$`)
	receiptIDRE = regexp.MustCompile(`^rcpt_[0-9a-z_]{1,80}$`)
)

// doneFlash says what an action did, from the redirect's ?done=verb:id;
// only a known verb and an id of the expected shape are echoed.
func doneFlash(r *http.Request) string {
	verb, id, _ := strings.Cut(r.URL.Query().Get("done"), ":")
	switch {
	case verb == "cancelled" && jobIDRE.MatchString(id):
		return id + " cancelled."
	case verb == "ended" && runIDRE.MatchString(id):
		return id + " ended."
	case verb == "reverted" && receiptIDRE.MatchString(id):
		return id + " reverted: its files are back as they were before it (the revert has its own receipt below)."
	}
	return ""
}

// maxBulk bounds the approvals one bulk decision takes.
const maxBulk = 100

// decideBulk approves or denies the selected approvals (ids) with one
// reason; the approvals page lists each one's outcome.
func (c *console) decideBulk(w http.ResponseWriter, r *http.Request, ss session) {
	ids := r.PostForm["ids"]
	decision := r.PostFormValue("decision")
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	var bad error
	switch {
	case decision != "approve" && decision != "deny":
		bad = errs.New(errs.InvalidArgument, "decision %q: choose Approve selected or Deny selected", decision).With("field", "decision")
	case len(ids) == 0:
		bad = errs.New(errs.InvalidArgument, "no approval selected: tick the pending approvals to decide, then choose Approve or Deny selected")
	case len(ids) > maxBulk:
		bad = errs.New(errs.InvalidArgument, "%d approvals selected; at most %d at once: decide them in parts", len(ids), maxBulk)
	case decision == "deny" && reason == "":
		bad = errs.New(errs.InvalidArgument, "a denial needs a reason: type one reason for all the selected approvals, then Deny selected").With("field", "reason")
	case len(reason) > 500:
		bad = errs.New(errs.InvalidArgument, "the reason is %d bytes; at most 500: shorten it", len(reason)).With("field", "reason")
	}
	if bad != nil {
		c.fail(w, r, ss, bad)
		return
	}
	results := make([]actionResult, 0, len(ids))
	for _, id := range ids {
		res := actionResult{ID: id}
		if !approvalIDRE.MatchString(id) {
			res.ID = "(not an approval id)"
			res.Error = errs.New(errs.InvalidArgument, "not an approval id (apr_...): reload the page and select again")
		} else if a, err := c.h.DecideApproval(r.Context(), id, decision == "approve", "console", reason); err != nil {
			res.Error = errs.From(err)
		} else {
			res.Outcome = a.Status
		}
		results = append(results, res)
	}
	// The page below shows the pending approvals that remain.
	r.URL.RawQuery = ""
	c.approvalsPage(w, r, ss, results)
}

// cancelJob cancels a job (job_cancel).
func (c *console) cancelJob(w http.ResponseWriter, r *http.Request, ss session) {
	id := r.PathValue("id")
	j, err := c.h.JobCancel(harness.AsPerson(r.Context(), "console"), harness.JobCancelArgs{JobID: id})
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	http.Redirect(w, r, "/ui/jobs/"+url.PathEscape(j.JobID)+"?done=cancelled:"+url.QueryEscape(j.JobID), http.StatusSeeOther)
}

// endRun ends a run (run_end) with the person's reason.
func (c *console) endRun(w http.ResponseWriter, r *http.Request, ss session) {
	id := r.PathValue("id")
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" {
		reason = "ended from the console"
	}
	st, err := c.h.RunEnd(harness.AsPerson(r.Context(), "console"), harness.RunEndArgs{RunID: id, Reason: reason})
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	http.Redirect(w, r, "/ui/runs/"+url.PathEscape(st.RunID)+"?done=ended:"+url.QueryEscape(st.RunID), http.StatusSeeOther)
}

// revertReceipt reverts one write (revert) of repo_id; back on the run's
// page when the form names the run, else the runs.
func (c *console) revertReceipt(w http.ResponseWriter, r *http.Request, ss session) {
	id := r.PathValue("id")
	runID := r.PostFormValue("run_id")
	_, err := c.h.Revert(harness.AsPerson(r.Context(), "console"), harness.RevertArgs{
		RepoID: r.PostFormValue("repo_id"), ReceiptID: id,
		// One request id per receipt: a second click replays the first
		// revert instead of undoing the undo.
		RequestID: "console-revert-" + id,
		Cascade:   r.PostFormValue("cascade") == "1",
	})
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	back := "/ui/runs"
	if runIDRE.MatchString(runID) {
		back += "/" + url.PathEscape(runID)
	}
	http.Redirect(w, r, back+"?done=reverted:"+url.QueryEscape(id), http.StatusSeeOther)
}
