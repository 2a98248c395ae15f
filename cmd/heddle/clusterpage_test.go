package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/pki"
)

// On a cluster set up as docs/security.md says (TLS, node certificates,
// a token file), the Cluster page of one node shows every member ready,
// each with its own status, and no other member ever receives the token
// the person signed in with: the page asks them as the node, by its
// certificate, over TLS. Before, it asked over http:// with the person's
// token, which crossed the network in the clear, and the members, which
// speak TLS, answered 400: the page showed them not ready.
func TestClusterPageOverTLSKeepsThePersonsToken(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HEDDLE_TOKEN", "")
	t.Setenv("HEDDLE_TLS_CA", "")
	runOK(t, "cert", "ca", "--dir", dir)
	ids := []string{"n1", "n2", "n3"}
	for _, id := range ids {
		runOK(t, "cert", "node", id, "--dir", dir, "--hosts", "127.0.0.1")
	}
	tokens := filepath.Join(dir, "tokens")
	adminTok := strings.TrimSpace(runOK(t, "token", "--file", tokens, "--name", "ops", "--role", "admin"))

	// What each node receives in Authorization headers, by node.
	var mu sync.Mutex
	received := map[string][]string{}
	watch := func(id string) func(http.Handler) http.Handler {
		return func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if a := r.Header.Get("Authorization"); a != "" {
					mu.Lock()
					received[id] = append(received[id], a)
					mu.Unlock()
				}
				h.ServeHTTP(w, r)
			})
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var nodes []*clusterNode
	t.Cleanup(func() {
		for i := len(nodes) - 1; i >= 0; i-- {
			if err := nodes[i].close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	for i, id := range ids {
		sf := secFlags{tlsCert: filepath.Join(dir, id+".crt"), tlsKey: filepath.Join(dir, id+".key"),
			tlsCA: filepath.Join(dir, "ca.crt"), tokenFile: tokens}
		sec, err := sf.load(id)
		if err != nil {
			t.Fatal(err)
		}
		o := nodeOptions{id: id, dir: filepath.Join(dir, "data-"+id), httpAddr: "127.0.0.1:0", raftAddr: "127.0.0.1:0",
			grace: time.Second, bootstrap: i == 0, sec: sec, wrap: watch(id)}
		if i > 0 {
			o.join = []string{nodes[0].api.addr()}
		}
		n, err := startNode(ctx, o)
		if err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		nodes = append(nodes, n)
		if i == 0 {
			if _, err := n.node.WaitLeader(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Every member ready (a leader known, caught up) before the page is
	// read: it shows each one's own answer.
	for _, n := range nodes {
		for n.node.Ready(ctx) != nil {
			select {
			case <-ctx.Done():
				t.Fatalf("%s never became ready: %v", n.node.ID(), n.node.Ready(ctx))
			case <-n.node.Engine().Committed():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}

	// A person signs in to n1's UI with the admin token and opens the
	// Cluster page.
	roots, err := pki.LoadPool(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	browser := &http.Client{Jar: jar, Transport: tr}
	base := "https://" + nodes[0].api.addr()
	get := func(path string) string {
		t.Helper()
		resp, err := browser.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d %v", path, resp.StatusCode, err)
		}
		return string(b)
	}
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(get("/ui/signin"))
	if m == nil {
		t.Fatal("no CSRF token on the sign-in page")
	}
	resp, err := browser.PostForm(base+"/ui/signin", url.Values{"token": {adminTok}, "csrf": {m[1]}, "next": {"/ui/cluster"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // the page it leads to is read next
	page := get("/ui/cluster")
	for i, id := range ids {
		_, rest, ok := strings.Cut(page, `<tr data-member="`+id+`">`)
		row, _, _ := strings.Cut(rest, "</tr>")
		role := ">Follower<"
		if i == 0 {
			role = ">Leader<"
		}
		if !ok || !strings.Contains(row, role) || !strings.Contains(row, ">ready<") {
			t.Errorf("the cluster page's row of %s is not %s and ready:\n%s", id, role, row)
		}
	}

	mu.Lock()
	for _, id := range ids[1:] {
		for _, a := range received[id] {
			if strings.Contains(a, adminTok) {
				t.Errorf("%s received the person's token (%d requests with Authorization)", id, len(received[id]))
				break
			}
		}
	}
	mu.Unlock()

	// On the same cluster, through followers (which forward to the
	// leader): a body without a Content-Type is refused, and a review
	// task's creator is the token's name, not the body's by.
	post := func(node *clusterNode, path, ctype, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "https://"+node.api.addr()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+adminTok)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
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
	if code, body := post(nodes[1], "/v1/jobs", "", `{"type":"T","queue":"q"}`); code != http.StatusUnsupportedMediaType || !strings.Contains(body, "unsupported_media_type") {
		t.Errorf("an untyped body on a follower: HTTP %d %s", code, body)
	}
	code, body := post(nodes[2], "/v1/tasks", "application/json", `{"job_id":"j","phase":"p","queue":"q","type":"t","by":"mallory"}`)
	if code != http.StatusOK {
		t.Fatalf("a task created through a follower: HTTP %d %s", code, body)
	}
	review, err := nodes[0].node.Engine().DescribeReview(ctx, engine.ReviewTarget{Job: "j", Phase: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if hist, err := nodes[0].node.Engine().ReviewHistory(ctx, review.ID); err != nil || len(hist) != 1 || hist[0].By != "ops" {
		t.Errorf("the task's creation is recorded as %+v (%v), want by ops", hist, err)
	}
}
