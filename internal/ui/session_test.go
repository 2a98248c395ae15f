package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// postWith posts form to path with extra headers, from the env's browser.
func (v *env) postWith(path string, form url.Values, headers map[string]string) (int, string) {
	v.t.Helper()
	req, err := http.NewRequest(http.MethodPost, v.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		v.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, val := range headers {
		req.Header.Set(k, val)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	code, body, _ := v.read(resp)
	return code, body
}

// plant sets cookies in the env's browser, as another service on the same
// host name can (cookies do not keep to a port).
func (v *env) plant(cookies ...*http.Cookie) {
	v.t.Helper()
	u, err := url.Parse(v.srv.URL + Path + "/")
	if err != nil {
		v.t.Fatal(err)
	}
	v.client.Jar.SetCookies(u, cookies)
}

// A CSRF token planted in the browser is worth nothing: another service on
// the same host sets the session and CSRF cookies to values it chose, or
// to a pair it was given itself, and posts the form with them. Before, any
// 32-character heddle_csrf cookie was adopted as the token, and the form
// was accepted.
func TestPlantedCSRFTokenIsRefused(t *testing.T) {
	v := newEnv(t, envOptions{token: "victim-token"})
	parent, _ := seedRun(v)
	v.signIn("victim-token")

	// The attacker's own visit gives it a session and the form token
	// that goes with it.
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	attacker := &env{t: t, srv: v.srv, client: &http.Client{Jar: jar, Transport: v.client.Transport, CheckRedirect: v.client.CheckRedirect}}
	theirs := attacker.csrf("/ui/signin")
	u, _ := url.Parse(v.srv.URL + Path + "/")
	var theirSession string
	for _, c := range attacker.client.Jar.Cookies(u) {
		if c.Name == sessionCookie {
			theirSession = c.Value
		}
	}
	if theirSession == "" {
		t.Error("the attacker's visit made no session")
	}

	chosen := strings.Repeat("a", 32)
	path := fmt.Sprintf("/ui/runs/%d/terminate", parent)
	for _, tc := range []struct {
		name    string
		cookies []*http.Cookie
		field   string
	}{
		{"a chosen token", []*http.Cookie{{Name: "heddle_csrf", Value: chosen, Path: Path}, {Name: sessionCookie, Value: chosen, Path: Path}}, chosen},
		{"the attacker's own session and token", []*http.Cookie{{Name: sessionCookie, Value: theirSession, Path: Path}, {Name: "heddle_csrf", Value: theirs, Path: Path}}, theirs},
	} {
		v.plant(tc.cookies...)
		code, body := v.postWith(path, url.Values{csrfField: {tc.field}, "reason": {"planted"}}, nil)
		if code != http.StatusForbidden || !strings.Contains(body, "This form has expired") {
			t.Errorf("%s: HTTP %d", tc.name, code)
		}
		if j := v.describe(parent); j.Status == engine.StatusTerminated {
			t.Fatalf("%s terminated the run", tc.name)
		}
	}
}

// Behind the token, a form posted from a page of another origin (another
// site, or another port of this host) is refused, valid token or not; a
// page of the UI itself posts as before.
func TestFormsFromAnotherOriginAreRefused(t *testing.T) {
	v := newEnv(t, envOptions{token: "tok"})
	parent, _ := seedRun(v)
	v.signIn("tok")
	path := fmt.Sprintf("/ui/runs/%d", parent)
	csrf := v.csrf(path)
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"},
		{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"},
		{"Origin": "http://127.0.0.1:1"},
	} {
		code, body := v.postWith(path+"/terminate", url.Values{csrfField: {csrf}}, h)
		if code != http.StatusForbidden || !strings.Contains(body, "sent from a page of another site") {
			t.Errorf("a terminate with %v: HTTP %d", h, code)
		}
	}
	// A sign-in from another origin would sign the person in as someone
	// else (login CSRF), with a session and token the attacker got itself.
	code, _ := v.postWith("/ui/signin", url.Values{"token": {"tok"}, csrfField: {v.csrf("/ui/signin")}},
		map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"})
	if code != http.StatusForbidden {
		t.Errorf("a sign-in from another origin: HTTP %d", code)
	}
	if j := v.describe(parent); j.Status == engine.StatusTerminated {
		t.Fatal("a form from another origin terminated the run")
	}
	self := map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": v.srv.URL}
	if code, body := v.postWith(path+"/terminate", url.Values{csrfField: {csrf}}, self); code != http.StatusSeeOther {
		t.Fatalf("a terminate from the run's own page: HTTP %d\n%s", code, body)
	}
}

// Over TLS the cookies are Secure, for Path "/", and carry the __Host-
// prefix, so no sibling host and no plain-HTTP page can set them; cookies
// without the prefix are not read.
func TestCookiesOverTLS(t *testing.T) {
	v := newEnv(t, envOptions{token: "tok", tls: true})
	csrf := v.csrf("/ui/signin")
	resp, err := v.client.PostForm(v.srv.URL+"/ui/signin", url.Values{"token": {"tok"}, csrfField: {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in over TLS: HTTP %d", resp.StatusCode)
	}
	names := map[string]bool{}
	for _, c := range resp.Cookies() {
		names[c.Name] = true
		if !strings.HasPrefix(c.Name, "__Host-") || !c.Secure || c.Path != "/" || c.Domain != "" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
			t.Errorf("cookie %+v over TLS", c)
		}
	}
	if !names["__Host-"+tokenCookie] || !names["__Host-"+sessionCookie] {
		t.Fatalf("sign-in set %v", names)
	}
	if code, _, _ := v.get("/ui/workflows"); code != http.StatusOK {
		t.Fatalf("a page after sign-in over TLS: HTTP %d", code)
	}
	// A token cookie without the prefix, which a plain-HTTP page could
	// have set, signs no one in.
	other := newEnv(t, envOptions{token: "tok", tls: true})
	other.plant(&http.Cookie{Name: tokenCookie, Value: "dG9r", Path: Path})
	if code, _, loc := other.get("/ui/workflows"); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/signin") {
		t.Fatalf("a page with an unprefixed token cookie: HTTP %d to %q", code, loc)
	}
}

// TestSigninWithoutToken: on a server that asks for no token (heddle dev)
// the sign-in page asks for none and says why, and the bar offers no
// sign-in; a server with a token, or a UI whose Config.Permissions tells
// people apart by their token, still asks for one.
func TestSigninWithoutToken(t *testing.T) {
	open := newEnv(t, envOptions{})
	code, body, _ := open.get("/ui/signin?next=%2Fui%2Fschedules")
	if code != http.StatusOK {
		t.Fatalf("the sign-in page: HTTP %d", code)
	}
	wantIn(t, "a tokenless server's sign-in page", body, `id="no-token-needed"`, "This server asks for no token",
		`<a href="/ui/schedules" id="go-on">`)
	wantNotIn(t, "a tokenless server's sign-in page", body, `id="token"`, "asks for a bearer token")
	_, body, _ = open.get("/ui/workflows")
	wantIn(t, "a tokenless server's list", body, `id="no-token"`, "no sign-in needed")
	wantNotIn(t, "a tokenless server's list", body, `id="signin-link"`)

	for name, o := range map[string]envOptions{
		"a server with a token":        {token: "s3cret"},
		"a UI that tells tokens apart": {permissions: func(context.Context, string) (Permissions, error) { return ForRole("reader") }},
	} {
		v := newEnv(t, o)
		_, body, _ := v.get("/ui/signin")
		wantIn(t, name+"'s sign-in page", body, `id="token"`, "asks for a bearer token")
		wantNotIn(t, name+"'s sign-in page", body, `id="no-token-needed"`)
	}
}
