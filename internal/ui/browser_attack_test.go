package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// attackPage is a page of another site (another port of 127.0.0.1, which
// is another origin but the same site) that tries, from the browser of a
// developer running a server without tokens, what was seen to work: a
// start by fetch with a body of no type (which needs no CORS preflight),
// a terminate as text, and a terminate through the UI's own form after
// its server planted the CSRF cookies (cookies do not keep to a port, and
// a server's Set-Cookie replaces the UI's own). Its title says when the
// fetches have been sent.
const attackPage = `<!doctype html><title>waiting</title>
<form id="f" method="post" action="%[1]s/ui/runs/%[2]d/terminate">
<input name="csrf" value="aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"><input name="reason" value="from another site"></form>
<script>
(async () => {
  const body = '{"workflow_id":"evil-1","type":"Evil","queue":"q"}';
  await fetch('%[1]s/v1/jobs', {method: 'POST', mode: 'no-cors', body: new Blob([body])}).catch(() => {});
  await fetch('%[1]s/v1/jobs/terminate', {method: 'POST', mode: 'no-cors', body: '{"job_id":%[2]d}'}).catch(() => {});
  document.title = 'sent';
})();
</script>`

// TestBrowserOtherSitesCannotDriveIt runs in Chromium the attacks of
// another site's page on a server without tokens (heddle dev): the
// untyped fetch, the text fetch, the form with planted cookies, and DNS
// rebinding (a name of the attacker's that resolves to 127.0.0.1). None
// starts, terminates or reads anything. Before, the first started a
// workflow and the third terminated the run.
func TestBrowserOtherSitesCannotDriveIt(t *testing.T) {
	ctx := browser(t, "rebound.test")
	e, err := embedded.Open(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	res, err := e.Create(context.Background(), engine.CreateJob{WorkflowID: "victim", Type: "T", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.NewServer(httpapi.ServerConfig{Service: e})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{API: api, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	// As cmd/heddle serves a loopback address.
	srv := httptest.NewServer(httpapi.NewHostGuard().Handler(mount(h, api)))
	t.Cleanup(srv.Close)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for _, name := range []string{"heddle_csrf", "heddle_session"} {
			http.SetCookie(w, &http.Cookie{Name: name, Value: strings.Repeat("a", 32), Path: Path, HttpOnly: true})
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, attackPage, srv.URL, res.Job)
	}))
	t.Cleanup(evil.Close)

	// The developer has the UI open: the browser holds its session.
	run(t, ctx, "open the UI", chromedp.Navigate(srv.URL+"/ui/workflows"), chromedp.WaitVisible("#runs", chromedp.ByQuery))
	run(t, ctx, "visit the other site",
		chromedp.Navigate(evil.URL+"/"),
		chromedp.Poll(`document.title === 'sent'`, nil, chromedp.WithPollingTimeout(stepTimeout)))
	var page string
	run(t, ctx, "submit its form", chromedp.Evaluate(`document.getElementById('f').submit()`, nil),
		chromedp.WaitVisible("main", chromedp.ByQuery), chromedp.Text("main", &page, chromedp.ByQuery))
	if !strings.Contains(page, "sent from a page of another site") {
		t.Errorf("the form from another site was answered:\n%s", page)
	}

	// DNS rebinding: the attacker's own name now leads to this server, so
	// its page is of the server's origin; the server does not answer to
	// that name.
	rebound := strings.Replace(srv.URL, "127.0.0.1", "rebound.test", 1)
	var status float64
	run(t, ctx, "the rebound name", chromedp.Navigate(rebound+"/ui/workflows"),
		chromedp.WaitReady("body", chromedp.ByQuery), chromedp.Text("body", &page, chromedp.ByQuery),
		chromedp.Evaluate(`fetch('/v1/jobs', {method: 'POST', headers: {'Content-Type': 'application/json'},
			body: '{"workflow_id":"evil-2","type":"Evil","queue":"q"}'}).then(r => r.status)`, &status,
			func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if !strings.Contains(page, "host_not_allowed") || status != http.StatusForbidden {
		t.Errorf("under the rebound name: the page %q, a start HTTP %v", page, status)
	}

	if j, err := e.Describe(context.Background(), engine.Target{Job: res.Job}); err != nil || j.Status != engine.StatusQueued {
		t.Errorf("the run is %v (%v), want it Queued as it was", j.Status, err)
	}
	for _, id := range []string{"evil-1", "evil-2"} {
		if _, err := e.Describe(context.Background(), engine.Target{WorkflowID: id}); err == nil {
			t.Errorf("another site's page started %s", id)
		}
	}
}
