package ui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// Path is where the UI is served; New's handler answers the paths under it.
const Path = "/ui"

// Handler serves the UI. It is an http.Handler, safe for concurrent use;
// mount it at Path ("/ui/" and "/ui") beside the API on the same server.
type Handler struct {
	cfg   Config
	mux   *http.ServeMux
	pages map[string]*template.Template
}

// New returns the UI for cfg.
func New(cfg Config) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg.withDefaults(), mux: http.NewServeMux()}
	var err error
	if h.pages, err = parsePages(); err != nil {
		return nil, err
	}
	h.routes()
	return h, nil
}

func (h *Handler) routes() {
	home := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Path+"/workflows", http.StatusFound)
	}
	h.mux.HandleFunc("GET "+Path+"/{$}", home)
	h.mux.HandleFunc("GET "+Path, home)
	h.mux.Handle("GET "+Path+"/static/", staticHandler())
	h.mux.HandleFunc("GET "+Path+"/signin", h.signinPage)
	h.mux.HandleFunc("POST "+Path+"/signin", h.signin)
	h.mux.HandleFunc("POST "+Path+"/signout", h.signout)

	h.page("GET "+Path+"/workflows", h.workflows)
	h.page("GET "+Path+"/workflow", h.workflowByID)
	h.page("GET "+Path+"/runs/{job}", h.run)
	h.page("POST "+Path+"/runs/{job}/signal", h.signal)
	h.page("POST "+Path+"/runs/{job}/cancel", h.cancel)
	h.page("POST "+Path+"/runs/{job}/terminate", h.terminate)
	h.page("POST "+Path+"/runs/{job}/pause", h.pause)
	h.page("POST "+Path+"/runs/{job}/unpause", h.unpause)
	h.page("POST "+Path+"/runs/{job}/activity", h.activityAct)
	h.page("POST "+Path+"/runs/{job}/reset", h.reset)
	h.page("POST "+Path+"/runs/{job}/query", h.query)
	h.page("POST "+Path+"/runs/{job}/steps/{step}/answer", h.answer)
	h.page("GET "+Path+"/schedules/{id}", h.schedule)
	h.page("POST "+Path+"/schedules/{id}/{op}", h.scheduleAct)
	h.page("GET "+Path+"/cluster", h.cluster)
	h.page("POST "+Path+"/resources/drain", h.drainResource)
	h.page("POST "+Path+"/review/{task}/{op}", h.reviewAct)
	h.page("GET "+Path+"/task-queues/{queue}", h.taskQueue)
	h.page("GET "+Path+"/batch-confirm", h.confirmBatch)
	h.page("POST "+Path+"/batches", h.startBatch)
	h.page("GET "+Path+"/batches/{batch}", h.batch)
	h.page("POST "+Path+"/batches/{batch}/stop", h.stopBatch)
	for _, f := range features {
		h.page("GET "+Path+"/"+f.Path, h.feature(f))
	}
	h.payloadRoutes()
	h.page(Path+"/", func(*request) (*page, error) {
		return nil, &pageError{status: http.StatusNotFound, msg: "There is no such page."}
	})
}

// ServeHTTP serves one request of the UI.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The pages are the person's own view, never to be framed by another
	// site or sniffed as another type.
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
	w.Header().Set("Referrer-Policy", "same-origin")
	if err := crossOrigin.Check(r); err != nil {
		h.render(&request{w: w, r: r, now: h.cfg.Now()}, &page{Template: "error.html", Title: "Refused", Status: http.StatusForbidden,
			Error: "This form was sent from a page of another site, and is refused. Open the page here and try again."})
		return
	}
	h.mux.ServeHTTP(w, r)
}

// request is one page request: the browser's, the person's token and the
// API with it.
type request struct {
	w     http.ResponseWriter
	r     *http.Request
	ctx   context.Context
	api   *backend
	token string
	csrf  string
	can   Permissions
	now   time.Time
}

// page is what the layout renders: the frame of every page and the page's
// own data.
type page struct {
	// Template is the page's file under templates/.
	Template string
	Title    string
	// Nav is the navigation entry to mark as the current one.
	Nav string
	// Status is the HTTP status to answer with; 0 means 200.
	Status int
	Flash  string
	Error  string
	Data   any
	// NoRefresh: the page does not refresh itself (it shows the answer to
	// a form that a refresh would lose).
	NoRefresh bool
	// NoToken: the server took this page's requests without a token, and
	// no Config.Permissions tells tokens apart: the bar offers no sign-in.
	NoToken bool

	// Filled in by the handler for the layout.
	SignedIn  bool
	CSRF      string
	RefreshMS int64
	Can       Permissions
	Now       time.Time
	Features  []feature
	Static    string
}

// pageError is an error a page answers with, for the person to read.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

// redirect is a page function's answer that sends the browser elsewhere.
type redirect struct{ to string }

func (redirect) Error() string { return "redirect" }

// page registers a page function: it reads the cookies, makes the API for
// the token and renders the page, the sign-in page when the API refuses
// the token, or the error.
func (h *Handler) page(pattern string, fn func(*request) (*page, error)) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		rq := &request{w: w, r: r, ctx: r.Context(), now: h.cfg.Now()}
		rq.token = readToken(r)
		rq.csrf = h.ensureCSRF(w, r)
		if r.Method == http.MethodPost && !checkCSRF(r, rq.csrf) {
			h.render(rq, &page{Template: "error.html", Title: "Form expired", Status: http.StatusForbidden,
				Error: "This form has expired or did not come from this page. Reload the page and try again."})
			return
		}
		var err error
		if rq.api, err = h.newBackend(r, rq.token); err != nil {
			h.fail(rq, err)
			return
		}
		if rq.can, err = h.permissions(rq); err != nil {
			h.fail(rq, err)
			return
		}
		p, err := fn(rq)
		if err != nil {
			h.fail(rq, err)
			return
		}
		// The API answered this page without a token: it asks for none.
		p.NoToken = rq.token == "" && h.cfg.Permissions == nil
		h.render(rq, p)
	})
}

// fail answers a page function's error.
func (h *Handler) fail(rq *request, err error) {
	var rd redirect
	if errors.As(err, &rd) {
		http.Redirect(rq.w, rq.r, rd.to, http.StatusSeeOther)
		return
	}
	if errors.Is(err, httpapi.ErrUnauthorized) {
		to := Path + "/signin?next=" + url.QueryEscape(nextPath(rq.r))
		if rq.token != "" {
			to += "&refused=1"
		}
		http.Redirect(rq.w, rq.r, to, http.StatusSeeOther)
		return
	}
	p := &page{Template: "error.html", Title: "Error", Status: statusOf(err), Error: err.Error()}
	var pe *pageError
	if errors.As(err, &pe) {
		p.Error = pe.msg
	}
	if p.Status >= 500 {
		h.cfg.Logger.Warn("ui page failed", "path", rq.r.URL.Path, "error", err)
	}
	h.render(rq, p)
}

// statusOf is the HTTP status a page answers an error with.
func statusOf(err error) int {
	var pe *pageError
	var re *httpapi.RemoteError
	switch {
	case errors.As(err, &pe):
		return pe.status
	case errors.Is(err, engine.ErrUnknownJob):
		return http.StatusNotFound
	case errors.As(err, &re):
		return re.Status
	case errors.Is(err, engine.ErrInvalidCommand):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// nextPath is where the sign-in page sends the browser back to: the page
// asked for, or the list when that was a form.
func nextPath(r *http.Request) string {
	if r.Method != http.MethodGet {
		return Path + "/workflows"
	}
	return r.URL.RequestURI()
}

// render executes the page into a buffer, so that a template that fails
// answers a clean 500 rather than half a page.
func (h *Handler) render(rq *request, p *page) {
	p.SignedIn = rq.token != ""
	p.CSRF = rq.csrf
	p.Can = rq.can
	p.Now = rq.now
	p.Features = features
	p.Static = staticVersion
	if h.cfg.Refresh > 0 && !p.NoRefresh {
		p.RefreshMS = h.cfg.Refresh.Milliseconds()
	}
	t, ok := h.pages[p.Template]
	var buf bytes.Buffer
	err := fmt.Errorf("ui: no template %q", p.Template)
	if ok {
		err = t.ExecuteTemplate(&buf, "layout", p)
	}
	if err != nil {
		h.cfg.Logger.Error("ui template failed", "template", p.Template, "error", err)
		http.Error(rq.w, "the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rq.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	rq.w.Header().Set("Cache-Control", "no-store")
	if p.Status != 0 {
		rq.w.WriteHeader(p.Status)
	}
	_, _ = rq.w.Write(buf.Bytes()) // a browser that went away is no failure of ours
}

// formValue returns a form field, trimmed.
func formValue(r *http.Request, name string) string { return strings.TrimSpace(r.FormValue(name)) }

// permissions is what the person of rq may do: Config.Permissions' answer
// if it is set, else the buttons of the role the API says the token has
// (GET /v1/whoami). An API without that route gets every button, and
// refuses what the token may not do; a role this UI does not know gets
// none.
func (h *Handler) permissions(rq *request) (Permissions, error) {
	if h.cfg.Permissions != nil {
		return h.cfg.Permissions(rq.ctx, rq.token)
	}
	who, err := rq.api.WhoAmI(rq.ctx)
	if errors.Is(err, httpapi.ErrNoRoute) {
		return AllowAll(), nil
	}
	if err != nil {
		return Permissions{}, err
	}
	p, err := ForRole(who.Role)
	if errors.Is(err, ErrUnknownRole) {
		return Permissions{role: who.Role}, nil
	}
	return p, err
}
