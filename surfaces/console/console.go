package console

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// cookieName names the session cookie.
const cookieName = "harnessd_console"

// Options configures a console beyond Handler's defaults.
type Options struct {
	// Now is the clock of session expiry; nil = time.Now.
	Now func() time.Time
	// SessionTTL is how long a login lasts; 0 = SessionTTL.
	SessionTTL time.Duration
	// TokenPath is the human token file's path, which the login page
	// names; "" = "<data-dir>/token".
	TokenPath string
	// Poll is how often the live event stream looks for new approvals and
	// job changes; 0 = livePoll.
	Poll time.Duration
}

// Handler returns the console, to be mounted at /ui/. token is the human
// token: the only credential that logs in ("" = nobody can log in).
func Handler(h *harness.Harness, token string) http.Handler {
	return New(h, token, Options{})
}

// New returns the console with o.
func New(h *harness.Harness, token string, o Options) http.Handler {
	tokenPath := o.TokenPath
	if tokenPath == "" {
		tokenPath = "<data-dir>/token"
	}
	poll := o.Poll
	if poll <= 0 {
		poll = livePoll
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	c := &console{h: h, token: token, tokenPath: tokenPath, poll: poll, now: now, sess: newSessions(o.Now, o.SessionTTL), pages: parsePages(), lg: h.Logger().Named("console")}
	static, _ := fs.Sub(staticFS, "static")
	mux := http.NewServeMux()
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /ui/login", c.loginPage)
	mux.HandleFunc("POST /ui/login", c.login)
	mux.HandleFunc("POST /ui/logout", c.authed(c.logout))
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/approvals", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /ui/approvals", c.authed(c.approvals))
	mux.HandleFunc("POST /ui/approvals/bulk", c.authed(c.decideBulk))
	mux.HandleFunc("POST /ui/approvals/{id}/approve", c.authed(c.decide(true)))
	mux.HandleFunc("POST /ui/approvals/{id}/deny", c.authed(c.decide(false)))
	mux.HandleFunc("GET /ui/jobs", c.authed(c.jobs))
	mux.HandleFunc("GET /ui/jobs/{id}", c.authed(c.job))
	mux.HandleFunc("GET /ui/jobs/{id}/events", c.authed(c.jobEvents))
	mux.HandleFunc("POST /ui/jobs/{id}/cancel", c.authed(c.cancelJob))
	mux.HandleFunc("GET /ui/runs", c.authed(c.runs))
	mux.HandleFunc("GET /ui/runs/{id}", c.authed(c.run))
	mux.HandleFunc("GET /ui/runs/{id}/events", c.authed(c.runEvents))
	mux.HandleFunc("POST /ui/runs/{id}/end", c.authed(c.endRun))
	mux.HandleFunc("POST /ui/receipts/{id}/revert", c.authed(c.revertReceipt))
	mux.HandleFunc("GET /ui/clients", c.authed(c.clients))
	mux.HandleFunc("GET /ui/policy", c.authed(c.policy))
	mux.HandleFunc("GET /ui/events", c.authed(c.events))
	mux.HandleFunc("GET /ui/audit", c.authed(c.audit))
	mux.HandleFunc("POST /ui/audit/verify", c.authed(c.auditVerify))
	mux.HandleFunc("GET /ui/status", c.authed(c.status))
	return secureHeaders(mux)
}

type console struct {
	h         *harness.Harness
	token     string
	tokenPath string
	poll      time.Duration
	now       func() time.Time
	sess      *sessions
	pages     map[string]*template.Template
	lg        *zap.Logger
}

// pageNames are the templates/<name>.html files rendered inside layout.html.
var pageNames = []string{"login", "approvals", "jobs", "job", "runs", "run", "audit", "status", "error", "clients", "policy"}

func parsePages() map[string]*template.Template {
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		pages[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html", "templates/"+name+".html"))
	}
	return pages
}

// page is what every template gets.
type page struct {
	Title  string
	Nav    string // the active navigation entry
	CSRF   string // "" = not logged in
	Flash  string
	Error  *errs.Error
	Data   any
	Status int
	// Pending is the number of pending approvals (title and nav badge).
	Pending int
	// Repos are the registered roots by repository id (names for ids).
	Repos map[string]string
	// Filter is the list page's filter; Results the outcomes of a bulk action.
	Filter  filter
	Results []actionResult
	// TokenPath is the human token file (the login page names it).
	TokenPath string
	// Seen is the digest of the jobs or runs list the page shows, from
	// which the live stream reports changes.
	Seen string
}

// secureHeaders sets the headers every console response carries.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: with no-referrer browsers send "Origin:
		// null" on form posts, which the origin check refuses.
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether a request's Origin (when the browser sent
// one) names the host it was sent to.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser's cross-site request; CSRF tokens still apply
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// authed serves f to a logged-in session: a GET without one is sent to
// the login page, anything else is refused. A POST must carry the
// session's CSRF token in the form field csrf.
func (c *console) authed(f func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(cookieName)
		var ss session
		ok := false
		if err == nil {
			ss, ok = c.sess.get(ck.Value)
		}
		if !ok {
			if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/events") {
				http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "log in first: POST /ui/login with the human token", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			if !ss.validCSRF(r.PostFormValue("csrf")) {
				http.Error(w, "missing or wrong CSRF token: reload the page and submit its form again", http.StatusForbidden)
				return
			}
		}
		f(w, r, ss)
	}
}

func (c *console) render(w http.ResponseWriter, r *http.Request, name string, p page) {
	if p.CSRF != "" {
		// The title's count and the nav badge; the live stream keeps them
		// current. A failure leaves them out rather than failing the page.
		if l, err := c.h.Approvals(r.Context(), ""); err == nil {
			p.Pending = len(l.Approvals)
		}
		if p.Repos == nil {
			p.Repos = c.roots(r.Context())
		}
	}
	p.TokenPath = c.tokenPath
	var buf bytes.Buffer
	if err := c.pages[name].Execute(&buf, p); err != nil {
		c.lg.Error("render console page", zap.String("page", name), zap.Error(err))
		http.Error(w, "render page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if p.Status == 0 {
		p.Status = http.StatusOK
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders err as an error page.
func (c *console) fail(w http.ResponseWriter, r *http.Request, ss session, err error) {
	e := errs.From(err)
	c.render(w, r, "error", page{Title: "Error", CSRF: ss.csrf, Error: e, Status: statusOf(e.Code)})
}

func statusOf(code errs.Code) int {
	switch code {
	case errs.InvalidArgument:
		return http.StatusBadRequest
	case errs.NotFound:
		return http.StatusNotFound
	case errs.Unavailable:
		return http.StatusServiceUnavailable
	case errs.Unauthenticated:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

func (c *console) loginPage(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(cookieName); err == nil {
		if _, ok := c.sess.get(ck.Value); ok {
			http.Redirect(w, r, "/ui/approvals", http.StatusSeeOther)
			return
		}
	}
	c.render(w, r, "login", page{Title: "Log in"})
}

func (c *console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if !tokenOK(c.token, strings.TrimSpace(r.PostFormValue("token"))) {
		c.lg.Warn("console login refused", zap.String("remote", r.RemoteAddr))
		c.render(w, r, "login", page{Title: "Log in", Status: http.StatusUnauthorized,
			Flash: "Wrong token. Paste the contents of " + c.tokenPath + " (the human token)."})
		return
	}
	ss := c.sess.open()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: ss.id, Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, Expires: ss.expires, MaxAge: int(ss.expires.Sub(c.sess.now()).Seconds())})
	http.Redirect(w, r, "/ui/approvals", http.StatusSeeOther)
}

func (c *console) logout(w http.ResponseWriter, r *http.Request, ss session) {
	c.sess.close(ss.id)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// Route sends /ui and everything under it to ui and every other request
// to api. The daemon's loopback TCP listener guards its API with the
// bearer token (httpapi.RequireToken), which a browser cannot send; the
// console guards itself with its login, so the listener serves
// Route(ui, RequireToken(token, api)).
func Route(ui, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/") {
			ui.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
