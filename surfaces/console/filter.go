package console

import (
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// filter is what a list page shows: the query parameters repo, state,
// client, since and until, so a filtered view is a link.
type filter struct {
	Repo   string // a repository id, the base name of its root, or part of its root
	State  string // a job state, a run status or an approval status
	Client string // part of the client's name and version (case-insensitive)
	// Since (inclusive) and Until (exclusive) bound the time; zero = open.
	Since, Until time.Time
	// SinceText and UntilText are the values as the person typed them.
	SinceText, UntilText string
	// All keeps the approvals page's ?status=all in its filter form.
	All bool
}

// maxFilterText bounds each filter value.
const maxFilterText = 200

// parseFilter reads a list page's filter from its query. since and until
// take an RFC 3339 time, a date (2006-01-02, UTC) or a duration back
// from now ("90m", "24h", "7d").
func parseFilter(q url.Values, now time.Time) (filter, error) {
	f := filter{Repo: strings.TrimSpace(q.Get("repo")), State: strings.TrimSpace(q.Get("state")),
		Client: strings.TrimSpace(q.Get("client")), SinceText: strings.TrimSpace(q.Get("since")), UntilText: strings.TrimSpace(q.Get("until"))}
	for _, nv := range [][2]string{{"repo", f.Repo}, {"state", f.State}, {"client", f.Client}, {"since", f.SinceText}, {"until", f.UntilText}} {
		if name, v := nv[0], nv[1]; len(v) > maxFilterText {
			return filter{}, errs.New(errs.InvalidArgument, "%s is %d bytes; at most %d: shorten the filter", name, len(v), maxFilterText)
		}
	}
	var err error
	if f.Since, err = parseWhen("since", f.SinceText, now); err != nil {
		return filter{}, err
	}
	if f.Until, err = parseWhen("until", f.UntilText, now); err != nil {
		return filter{}, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return filter{}, errs.New(errs.InvalidArgument, "since (%s) is not before until (%s): swap them or widen the range", f.SinceText, f.UntilText)
	}
	return f, nil
}

var daysRE = regexp.MustCompile(`^([0-9]{1,4})d$`)

// parseWhen reads a time filter value ("" = no bound).
func parseWhen(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	if m := daysRE.FindStringSubmatch(v); m != nil {
		d, _ := time.ParseDuration(m[1] + "h")
		return now.Add(-24 * d), nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, errs.New(errs.InvalidArgument,
		"%s %q is not a time: give an RFC 3339 time (2006-01-02T15:04:05Z), a date (2006-01-02) or how long ago (90m, 24h, 7d)", name, v).With("field", name)
}

// Active reports whether the filter selects anything.
func (f filter) Active() bool {
	return f.Repo != "" || f.State != "" || f.Client != "" || f.SinceText != "" || f.UntilText != ""
}

// when reports whether t is within the filter's time range.
func (f filter) when(t time.Time) bool {
	return (f.Since.IsZero() || !t.Before(f.Since)) && (f.Until.IsZero() || t.Before(f.Until))
}

// state reports whether s is the filter's state ("" = any).
func (f filter) state(s string) bool { return f.State == "" || f.State == s }

// client reports whether c (a client's name and version) matches.
func (f filter) client(c string) bool {
	return f.Client == "" || strings.Contains(strings.ToLower(c), strings.ToLower(f.Client))
}

// repo reports whether the repository id matches, given the registered
// roots by id: the id itself, its root's base name (case-insensitive) or,
// when no registered root has that base name, a part of its root. So
// "api" names the repository called api, not every root under a
// directory whose name holds "api".
func (f filter) repo(id string, roots map[string]string) bool {
	if f.Repo == "" {
		return true
	}
	if id == f.Repo {
		return true
	}
	root := roots[id]
	if root == "" {
		return false
	}
	if strings.EqualFold(filepath.Base(root), f.Repo) {
		return true
	}
	for _, r := range roots {
		if strings.EqualFold(filepath.Base(r), f.Repo) {
			return false
		}
	}
	return strings.Contains(root, f.Repo)
}

// repoRef is a repository as a page names it: its root's base name, with
// the id and the root for a title attribute.
type repoRef struct {
	ID, Name, Root string
}

// repoOf names the repository id by its root (the id when unregistered).
func repoOf(roots map[string]string, id string) repoRef {
	if id == "" {
		return repoRef{}
	}
	root := roots[id]
	if root == "" {
		return repoRef{ID: id, Name: id}
	}
	return repoRef{ID: id, Name: filepath.Base(root), Root: root}
}
