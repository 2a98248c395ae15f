package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// A browser's write from a page of another site is refused before it is
// read, on a server without tokens too; programs (which send neither
// Sec-Fetch-Site nor Origin), pages of the server's own origin, and reads
// get through. Before, a page on any site started workflows on heddle dev.
func TestCrossOriginWritesAreRefused(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	create := mustJSON(t, engine.CreateJob{Type: "T", Queue: "q"})
	self := "http://" + hostOf(hs.URL)
	for _, tc := range []struct {
		name    string
		method  string
		headers map[string]string
		want    int
	}{
		{"another site (Sec-Fetch-Site)", "POST", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, 403},
		{"another port of the same host", "POST", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"}, 403},
		{"another site (Origin only)", "POST", map[string]string{"Origin": "http://evil.example"}, 403},
		{"an opaque origin", "POST", map[string]string{"Origin": "null"}, 403},
		{"a delete from another site", "DELETE", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"a program", "POST", nil, 200},
		{"a page of the server itself", "POST", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": self}, 200},
		{"the server's own origin (Origin only)", "POST", map[string]string{"Origin": self}, 200},
		{"typed by the person", "POST", map[string]string{"Sec-Fetch-Site": "none"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{"Content-Type": contentJSON}
			for k, v := range tc.headers {
				h[k] = v
			}
			path := "/v1/jobs"
			if tc.method == "DELETE" {
				path = "/v1/cluster/members/n2"
			}
			before := keyspaceHash(t, e)
			r := doRaw(t, tc.method, hs.URL+path, create, h)
			if r.status != tc.want {
				t.Fatalf("HTTP %d, want %d: %s", r.status, tc.want, r.body)
			}
			if tc.want == http.StatusForbidden {
				if b := errorBodyOf(t, r); b.Name != "cross_origin" || !strings.Contains(b.Message, "came from a web page of another site") {
					t.Fatalf("error %+v", b)
				}
				if keyspaceHash(t, e) != before {
					t.Fatal("a refused write changed the store")
				}
			}
		})
	}
	// Reads change nothing; the browser keeps their answers from the other
	// site's page.
	r := doRaw(t, "GET", hs.URL+"/v1/jobs", nil, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"})
	if r.status != http.StatusOK {
		t.Fatalf("a cross-site read: HTTP %d %s", r.status, r.body)
	}
}

func TestHostGuardAllows(t *testing.T) {
	g := NewHostGuard("devbox.lan", "[::1]", "Heddle.Test.")
	for host, want := range map[string]bool{
		"localhost": true, "localhost:7280": true, "LOCALHOST:7280": true, "app.localhost:7280": true, "localhost.:7280": true,
		"127.0.0.1": true, "127.0.0.1:7280": true, "127.1.2.3:80": true, "[::1]:7280": true, "[::1]": true,
		"devbox.lan:7280": true, "heddle.test": true, "HEDDLE.TEST.:1": true,
		"": false, "evil.example": false, "evil.example:7280": false, "localhost.evil.example:7280": false,
		"127.0.0.1.nip.io:7280": false, "10.0.0.5:7280": false, "0.0.0.0:7280": false, "[::]:7280": false,
		"devbox.lan.evil.example": false, "evillocalhost:7280": false, "[::ffff:7f00:1]:1": true,
	} {
		if got := g.Allows(host); got != want {
			t.Errorf("Allows(%q) = %v, want %v", host, got, want)
		}
	}
	var zero HostGuard
	if !zero.Allows("localhost:1") || zero.Allows("devbox.lan") {
		t.Error("the zero HostGuard lets through other than the loopback names")
	}
}

// A guarded handler answers a foreign Host with the API's error body and
// never runs the handler.
func TestHostGuardRefuses(t *testing.T) {
	ran := false
	h := NewHostGuard().Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
	for _, accept := range []string{"", contentMsgpack} {
		req := httptest.NewRequestWithContext(context.Background(), "POST", "http://rebound.example:7280/v1/jobs", strings.NewReader("{}"))
		req.Header.Set("Accept", accept)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		r := rawResponse{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
		b := errorBodyOf(t, r)
		if ran || r.status != http.StatusForbidden || b.Name != "host_not_allowed" || !strings.Contains(b.Message, `not to Host "rebound.example:7280"`) {
			t.Fatalf("a foreign Host: ran %v, HTTP %d %+v", ran, r.status, b)
		}
	}
	req := httptest.NewRequestWithContext(context.Background(), "GET", "http://localhost:7280/healthz", nil)
	NewHostGuard().Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true })).ServeHTTP(httptest.NewRecorder(), req)
	if !ran {
		t.Fatal("localhost was refused")
	}
}

// Whatever the Host header, a guard allows only the loopback names and
// the names it was given.
func FuzzHostGuard(f *testing.F) {
	for _, h := range []string{"localhost:7280", "127.0.0.1", "[::1]:1", "evil.example", "a.localhost", "devbox.lan:1", "", ":", "[", "127.0.0.1.evil"} {
		f.Add(h)
	}
	g := NewHostGuard("devbox.lan")
	f.Fuzz(func(t *testing.T, host string) {
		if !g.Allows(host) {
			return
		}
		h := normalHost(hostOnly(host))
		ip := net.ParseIP(h)
		if h != "localhost" && !strings.HasSuffix(h, ".localhost") && h != "devbox.lan" && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("Allows(%q): %q is not a name of this machine", host, h)
		}
	})
}
