package ui

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// t0 is the engine's clock when a test starts: the pages' times are fixed.
var t0 = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)

// env is an engine, its HTTP API and the UI on one loopback server, as a
// node serves them, and a browser-like client with a cookie jar.
type env struct {
	t      *testing.T
	e      *embedded.Engine
	clk    *clock.Manual
	srv    *httptest.Server
	client *http.Client
}

type envOptions struct {
	token  string
	tokens *httpapi.Tokens
	// wrapAPI, if set, is what the UI sees of the API instead of it.
	wrapAPI     func(http.Handler) http.Handler
	permissions func(ctx context.Context, token string) (Permissions, error)
	cluster     httpapi.Cluster
	// tls serves the env over HTTPS (with httptest's certificate, which
	// the env's client trusts).
	tls bool
	// configure, if set, changes the UI's Config before New.
	configure func(*Config)
	// onDisk keeps the engine's database in a directory, as a node does,
	// rather than in memory: large values are then read from the value
	// log in place instead of copied.
	onDisk bool
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	clk := clock.NewManual(t0)
	ecfg := embedded.Config{InMemory: true, Clock: clk, DisableScheduler: true}
	if o.onDisk {
		ecfg.InMemory, ecfg.Dir = false, t.TempDir()
	}
	e, err := embedded.Open(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	api, err := httpapi.NewServer(httpapi.ServerConfig{Service: e, AuthToken: o.token, Tokens: o.tokens, Cluster: o.cluster})
	if err != nil {
		t.Fatal(err)
	}
	var uiAPI http.Handler = api
	if o.wrapAPI != nil {
		uiAPI = o.wrapAPI(api)
	}
	cfg := Config{API: uiAPI, Permissions: o.permissions, Now: clk.Now}
	if o.configure != nil {
		o.configure(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(mount(h, api))
	if o.tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar, Transport: srv.Client().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &env{t: t, e: e, clk: clk, srv: srv, client: client}
}

// mount serves the UI under Path and the API elsewhere, as cmd/heddle does.
func mount(ui, api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path+"/", ui)
	mux.Handle(Path, ui)
	mux.Handle("/", api)
	return mux
}

// get fetches a path without following redirects: the status, the body
// and where a redirect goes.
func (v *env) get(path string) (int, string, string) {
	v.t.Helper()
	resp, err := v.client.Get(v.srv.URL + path)
	if err != nil {
		v.t.Fatal(err)
	}
	return v.read(resp)
}

func (v *env) post(path string, form url.Values) (int, string, string) {
	v.t.Helper()
	resp, err := v.client.PostForm(v.srv.URL+path, form)
	if err != nil {
		v.t.Fatal(err)
	}
	return v.read(resp)
}

func (v *env) read(resp *http.Response) (int, string, string) {
	v.t.Helper()
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		v.t.Fatal(err)
	}
	// The pages' text as a person reads it: html/template writes quotes
	// in payloads as &#34;.
	return resp.StatusCode, html.UnescapeString(string(b)), resp.Header.Get("Location")
}

// signIn signs the env's browser in with token and checks it was let in.
func (v *env) signIn(token string) {
	v.t.Helper()
	code, _, loc := v.post("/ui/signin", url.Values{"token": {token}, "next": {"/ui/workflows"}, csrfField: {v.csrf("/ui/signin")}})
	if code != http.StatusSeeOther || loc != "/ui/workflows" {
		v.t.Fatalf("sign-in with %q: HTTP %d to %q", token, code, loc)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]{32})"`)

// csrf returns the CSRF token of the page at path, as a form would carry it.
func (v *env) csrf(path string) string {
	v.t.Helper()
	_, body, _ := v.get(path)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		v.t.Fatalf("no CSRF token on %s:\n%s", path, body)
	}
	return m[1]
}

func (v *env) create(c engine.CreateJob) engine.JobID {
	v.t.Helper()
	res, err := v.e.Create(context.Background(), c)
	if err != nil {
		v.t.Fatal(err)
	}
	return res.Job
}

func (v *env) describe(id engine.JobID) *engine.Job {
	v.t.Helper()
	j, err := v.e.Describe(context.Background(), engine.Target{Job: id})
	if err != nil {
		v.t.Fatal(err)
	}
	return j
}

func (v *env) history(id engine.JobID) []engine.Event {
	v.t.Helper()
	p, err := v.e.History(context.Background(), id, 0, engine.MaxPage)
	if err != nil {
		v.t.Fatal(err)
	}
	return p.Events
}

func wantIn(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

func wantNotIn(t *testing.T, what, body string, nots ...string) {
	t.Helper()
	for _, w := range nots {
		if strings.Contains(body, w) {
			t.Errorf("%s has %q", what, w)
		}
	}
}
