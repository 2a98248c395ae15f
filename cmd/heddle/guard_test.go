package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
)

// hostGet asks url with the Host header host and returns the status and
// the body.
func hostGet(t *testing.T, method, url, host, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// heddle dev on loopback answers to this machine's names only: a web page
// that makes its own name resolve to 127.0.0.1 (DNS rebinding) reaches
// neither the API, nor the UI, nor the metrics, nor pprof. Before, every
// Host was served, and a page started workflows under its own name.
func TestLoopbackServerAnswersItsOwnNamesOnly(t *testing.T) {
	d, err := startDev(embedded.Config{Dir: t.TempDir()}, "127.0.0.1:0", &security{allowHosts: []string{"devbox.test"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.close(); err != nil {
			t.Error(err)
		}
	}()
	_, port, err := net.SplitHostPort(d.api.addr())
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + d.api.addr()
	create := `{"type":"T","queue":"q"}`
	for _, host := range []string{"rebound.example:" + port, "rebound.example", "127.0.0.1.rebound.example:" + port, "10.0.0.5:" + port} {
		for _, rq := range [][3]string{{"POST", "/v1/jobs", create}, {"GET", "/v1/jobs", ""}, {"GET", "/ui/workflows", ""},
			{"GET", "/ui/signin", ""}, {"GET", "/metrics", ""}, {"GET", "/healthz", ""}} {
			code, body := hostGet(t, rq[0], base+rq[1], host, rq[2])
			if code != http.StatusForbidden || !strings.Contains(body, `"host_not_allowed"`) {
				t.Errorf("%s %s with Host %s: HTTP %d %.200s", rq[0], rq[1], host, code, body)
			}
		}
	}
	if n, err := d.engine.List(t.Context(), engine.ListQuery{Limit: 10}); err != nil || len(n.Jobs) != 0 {
		t.Fatalf("a refused start started %d runs (%v)", len(n.Jobs), err)
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "devbox.test:" + port, "LocalHost"} {
		if code, body := hostGet(t, "POST", base+"/v1/jobs", host, create); code != http.StatusOK {
			t.Errorf("a start with Host %s: HTTP %d %s", host, code, body)
		}
		if code, _ := hostGet(t, "GET", base+"/ui/signin", host, ""); code != http.StatusOK {
			t.Errorf("the sign-in page with Host %s: HTTP %d", host, code)
		}
	}

	p, err := startPprof("127.0.0.1:0", discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	if code, body := hostGet(t, "GET", "http://"+p.addr()+"/debug/pprof/cmdline", "rebound.example", ""); code != http.StatusForbidden {
		t.Errorf("pprof with a foreign Host: HTTP %d %.200s", code, body)
	}
	if code, _ := hostGet(t, "GET", "http://"+p.addr()+"/debug/pprof/cmdline", "localhost", ""); code != http.StatusOK {
		t.Errorf("pprof with Host localhost: HTTP %d", code)
	}
}
