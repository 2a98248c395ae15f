package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// The cookies of the UI. Both are HttpOnly and SameSite=Strict: the token
// never reaches a page script or another site's request. Over plain HTTP
// they are scoped to Path; over TLS they are Secure and carry the __Host-
// prefix, which the browser keeps only when set by this host over HTTPS,
// for Path "/", with no Domain: no other host (a sibling subdomain) and no
// plain-HTTP page can set one in its place.
const (
	// tokenCookie holds the bearer token the person signed in with.
	tokenCookie = "heddle_token"
	// sessionCookie holds the session's id: random, made by the server,
	// and made anew at every sign-in and sign-out.
	sessionCookie = "heddle_session"
	csrfField     = "csrf"
	// hostPrefix is the prefix of the cookies' names over TLS.
	hostPrefix = "__Host-"
)

// cookieName is the name, on r's connection, of the cookie named base.
func cookieName(r *http.Request, base string) string {
	if r.TLS != nil {
		return hostPrefix + base
	}
	return base
}

// readToken returns the token the browser signed in with, or "".
func readToken(r *http.Request) string {
	c, err := r.Cookie(cookieName(r, tokenCookie))
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
	c := &http.Cookie{Name: cookieName(r, name), Value: value, Path: Path, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode}
	if r.TLS != nil {
		c.Secure, c.Path = true, "/"
	}
	http.SetCookie(w, c)
}

// sessionIDLen is the length of a session id: 16 random bytes in hex.
const sessionIDLen = 32

// readSession returns the browser's session id, or "" when it has none
// (or one no server of ours could have made).
func readSession(r *http.Request) string {
	c, err := r.Cookie(cookieName(r, sessionCookie))
	if err != nil || len(c.Value) != sessionIDLen || strings.Trim(c.Value, "0123456789abcdef") != "" {
		return ""
	}
	return c.Value
}

// newSession makes a session id and sets its cookie.
func newSession(w http.ResponseWriter, r *http.Request) string {
	b := make([]byte, sessionIDLen/2)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics instead)
	sid := hex.EncodeToString(b)
	setCookie(w, r, sessionCookie, sid, 0)
	return sid
}

// ensureCSRF returns the CSRF token of the browser's session, making the
// session (and its cookie) when the browser has none. Forms carry the
// token back in a field; a POST whose field is not its session's did not
// come from a page of ours.
//
// The token is no cookie the browser could have been handed by someone
// else: it is an HMAC, under a key only this server holds
// (Config.SessionKey), of the session id and the token cookie. Another
// site that plants a session cookie of its choosing still cannot compute
// the field that goes with it, and a sign-in (which makes a new session
// and a new token cookie) changes it.
func (h *Handler) ensureCSRF(w http.ResponseWriter, r *http.Request) string {
	sid := readSession(r)
	if sid == "" {
		sid = newSession(w, r)
	}
	tok := ""
	if c, err := r.Cookie(cookieName(r, tokenCookie)); err == nil {
		tok = c.Value
	}
	return h.csrfToken(sid, tok)
}

// csrfToken is the CSRF token of session sid signed in with the token
// cookie value tok ("" before sign-in): 16 bytes of an HMAC-SHA256, hex.
func (h *Handler) csrfToken(sid, tok string) string {
	m := hmac.New(sha256.New, h.cfg.SessionKey)
	m.Write([]byte("heddle-ui-csrf/1\x00"))
	m.Write([]byte(sid))
	m.Write([]byte{0})
	m.Write([]byte(tok))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// checkCSRF reports whether a POST carries the CSRF token of its session.
func checkCSRF(r *http.Request, want string) bool {
	got := r.PostFormValue(csrfField)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// crossOrigin refuses a form a browser posts from a page of another
// origin (its Sec-Fetch-Site, or else its Origin, says so), before the
// CSRF token is looked at: a second wall, which holds even where a cookie
// could be planted, and against a page on another port of the same host
// (the same site, to the browser's SameSite rules).
var crossOrigin = http.NewCrossOriginProtection()

// signinData is the sign-in page's.
type signinData struct {
	Next    string
	Refused bool
	// NoToken: the server asks for no token (heddle dev), and the page
	// says so instead of asking for one.
	NoToken bool
}

func (h *Handler) signinPage(w http.ResponseWriter, r *http.Request) {
	rq := &request{w: w, r: r, token: readToken(r), csrf: h.ensureCSRF(w, r), can: AllowAll(), now: h.cfg.Now()}
	d := signinData{Next: safeNext(r.URL.Query().Get("next")), Refused: r.URL.Query().Get("refused") != ""}
	d.NoToken = rq.token == "" && h.needsNoToken(r)
	h.render(rq, &page{Template: "signin.html", Title: "Sign in", Nav: "signin", NoToken: d.NoToken, Data: d})
}

// needsNoToken reports whether the API takes requests without a token (a
// server with none, as heddle dev's), and no Config.Permissions tells
// people apart by the token they sign in with: a token then means
// nothing, and the pages ask for none.
func (h *Handler) needsNoToken(r *http.Request) bool {
	if h.cfg.Permissions != nil {
		return false
	}
	api, err := h.newBackend(r, "")
	if err == nil {
		_, err = api.List(r.Context(), engine.ListQuery{Limit: 1})
	}
	return err == nil
}

// signin checks the token against the API before it keeps it.
func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	rq := &request{w: w, r: r, token: readToken(r), csrf: h.ensureCSRF(w, r), can: AllowAll(), now: h.cfg.Now()}
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
	// A new session with the new token: the CSRF token of the pages
	// before the sign-in is void, whoever learnt it.
	newSession(w, r)
	setCookie(w, r, tokenCookie, base64.RawURLEncoding.EncodeToString([]byte(token)), 0)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) signout(w http.ResponseWriter, r *http.Request) {
	if !checkCSRF(r, h.ensureCSRF(w, r)) {
		http.Error(w, "This form has expired. Reload the page and try again.", http.StatusForbidden)
		return
	}
	newSession(w, r)
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
