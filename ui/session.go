package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// The cookies of the UI. Both are HttpOnly and SameSite=Strict, scoped to
// Path: the token never reaches a page script or another site's request.
const (
	tokenCookie = "heddle_token"
	csrfCookie  = "heddle_csrf"
	csrfField   = "csrf"
)

// readToken returns the token the browser signed in with, or "".
func readToken(r *http.Request) string {
	c, err := r.Cookie(tokenCookie)
	if err != nil {
		return ""
	}
	// The token is kept base64-encoded: a cookie value may not hold
	// every character a token may.
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return ""
	}
	return string(b)
}

func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: Path, MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// ensureCSRF returns the browser's CSRF token, making one (and its cookie)
// when it has none. Forms carry it back in a field; a POST whose field
// does not equal the cookie did not come from a page of ours.
func ensureCSRF(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 32 {
		return c.Value
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics instead)
	tok := hex.EncodeToString(b)
	setCookie(w, r, csrfCookie, tok, 0)
	return tok
}

// checkCSRF reports whether a POST carries the browser's CSRF token.
func checkCSRF(r *http.Request, want string) bool {
	got := r.PostFormValue(csrfField)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// signinData is the sign-in page's.
type signinData struct {
	Next    string
	Refused bool
}

func (h *Handler) signinPage(w http.ResponseWriter, r *http.Request) {
	rq := &request{w: w, r: r, token: readToken(r), csrf: ensureCSRF(w, r), can: AllowAll(), now: h.cfg.Now()}
	h.render(rq, &page{Template: "signin.html", Title: "Sign in", Nav: "signin",
		Data: signinData{Next: safeNext(r.URL.Query().Get("next")), Refused: r.URL.Query().Get("refused") != ""}})
}

// signin checks the token against the API before it keeps it.
func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	rq := &request{w: w, r: r, token: readToken(r), csrf: ensureCSRF(w, r), can: AllowAll(), now: h.cfg.Now()}
	next := safeNext(r.PostFormValue("next"))
	form := &page{Template: "signin.html", Title: "Sign in", Nav: "signin", Data: signinData{Next: next}}
	if !checkCSRF(r, rq.csrf) {
		form.Status, form.Error = http.StatusForbidden, "This form has expired. Try again."
		h.render(rq, form)
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	if token == "" {
		form.Status, form.Error = http.StatusBadRequest, "Enter the API's bearer token."
		h.render(rq, form)
		return
	}
	api, err := h.newBackend(r, token)
	if err == nil {
		_, err = api.List(r.Context(), engine.ListQuery{Limit: 1})
	}
	if err != nil {
		form.Status, form.Error = statusOf(err), "The server did not accept the token: "+err.Error()
		if errors.Is(err, httpapi.ErrUnauthorized) {
			form.Error = "The server refused this token."
		}
		h.render(rq, form)
		return
	}
	setCookie(w, r, tokenCookie, base64.RawURLEncoding.EncodeToString([]byte(token)), 0)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) signout(w http.ResponseWriter, r *http.Request) {
	if !checkCSRF(r, ensureCSRF(w, r)) {
		http.Error(w, "This form has expired. Reload the page and try again.", http.StatusForbidden)
		return
	}
	setCookie(w, r, tokenCookie, "", -1)
	http.Redirect(w, r, Path+"/signin", http.StatusSeeOther)
}

// safeNext returns next when it is a page of the UI, else the workflow
// list: a sign-in link must not send the browser to another site.
func safeNext(next string) string {
	if strings.HasPrefix(next, Path+"/") && !strings.HasPrefix(next, "//") && !strings.Contains(next, `\`) &&
		!strings.HasPrefix(next, Path+"/signin") {
		return next
	}
	return Path + "/workflows"
}
