package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
)

// TestDevServesUI signs in to the UI of heddle dev on the API's address and
// reads the workflows and cluster pages, with the API still answering
// beside it.
func TestDevServesUI(t *testing.T) {
	d, err := startDev(embedded.Config{Dir: t.TempDir()}, "127.0.0.1:0", &security{token: "tok"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.close(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := d.engine.Create(t.Context(), engine.CreateJob{WorkflowID: "order-17", Type: "Order", Queue: "orders"}); err != nil {
		t.Fatal(err)
	}
	base := "http://" + d.api.addr()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := browser.Get(base + path)
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

	// Not signed in: the sign-in page, with its form's CSRF token.
	code, body := get("/ui/")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if code != http.StatusOK || !strings.Contains(body, `id="token"`) || m == nil {
		t.Fatalf("GET /ui/ before sign-in: HTTP %d:\n%s", code, body)
	}
	resp, err := browser.PostForm(base+"/ui/signin", url.Values{"token": {"tok"}, "csrf": {m[1]}, "next": {"/ui/workflows"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // the page it leads to is read next
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/workflows" {
		t.Fatalf("sign-in: HTTP %d at %s", resp.StatusCode, resp.Request.URL)
	}
	code, body = get("/ui/workflows")
	for _, want := range []string{"order-17", "Queued", `id="role"`, ">admin</span>"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("the workflows page (HTTP %d) lacks %q", code, want)
		}
	}
	if code, body = get("/ui/cluster"); code != http.StatusOK || !strings.Contains(body, `id="alone"`) {
		t.Errorf("the cluster page of heddle dev: HTTP %d, without the note that it runs alone", code)
	}
	// The API is still the API beside the UI.
	if code, _ = get("/v1/jobs"); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/jobs without a token beside the UI: HTTP %d, want 401", code)
	}
}

func TestUIURL(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		overTLS bool
		want    string
	}{
		{"127.0.0.1:7280", false, "http://127.0.0.1:7280/ui/"},
		{"0.0.0.0:7280", false, "http://127.0.0.1:7280/ui/"},
		{"[::]:7280", false, "http://127.0.0.1:7280/ui/"},
		{":7280", false, "http://127.0.0.1:7280/ui/"},
		{"10.1.2.3:7280", true, "https://10.1.2.3:7280/ui/"},
		{"node1.internal:7280", true, "https://node1.internal:7280/ui/"},
		{"[::1]:7280", false, "http://[::1]:7280/ui/"},
	} {
		if got := uiURL(tc.addr, tc.overTLS); got != tc.want {
			t.Errorf("uiURL(%q, TLS %v) = %q, want %q", tc.addr, tc.overTLS, got, tc.want)
		}
	}
}

// A plain-HTTP server prints an http:// UI address, also once it serves:
// net/http's Serve gives a server without a TLS config one of its own (for
// HTTP/2), so the scheme is decided when the server is made, not read back
// from it (which raced with Serve and printed https://).
func TestDevUIURLWhileServing(t *testing.T) {
	d, err := startDev(embedded.Config{Dir: t.TempDir()}, "127.0.0.1:0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.close(); err != nil {
			t.Error(err)
		}
	}()
	// One answered request: Serve has set itself up by then.
	resp, err := http.Get("http://" + d.api.addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got, want := d.api.uiURL(), "http://"+d.api.addr()+"/ui/"; got != want {
		t.Fatalf("the UI of a plain-HTTP heddle dev is printed as %q, want %q", got, want)
	}
}
