package ui

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/pki"
)

func TestClusterPageAlone(t *testing.T) {
	v := newEnv(t, envOptions{})
	code, body, _ := v.get("/ui/cluster")
	if code != http.StatusOK {
		t.Fatalf("cluster page: HTTP %d", code)
	}
	wantIn(t, "the cluster page of a node alone", body, "This node runs alone", `<span class="badge st-completed" id="self-ready">ready</span>`)
}

// fakeCluster is this node's view of a cluster of four: itself, a
// follower that answers, one that is not ready, and one that is down.
type fakeCluster struct {
	status engine.ClusterStatus
}

func (f *fakeCluster) Status(context.Context) (httpapi.ClusterStatus, error) { return f.status, nil }
func (f *fakeCluster) Join(context.Context, string, string, string) error    { return nil }
func (f *fakeCluster) Remove(context.Context, string) error                  { return nil }
func (f *fakeCluster) TransferLeader(context.Context) error                  { return nil }

// fakeMember answers a member's /v1/cluster and /readyz, recording the
// tokens it was sent.
func fakeMember(t *testing.T, st engine.ClusterStatus, ready bool, tokens *sync.Map) string {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/cluster", func(w http.ResponseWriter, r *http.Request) {
		tokens.Store(st.ID, r.Header.Get("Authorization"))
		if r.URL.Query().Get("stale") != "1" {
			t.Errorf("the UI asked %s for a status through the leader", st.ID)
		}
		_ = json.NewEncoder(w).Encode(st)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(httpapi.ErrorBody{Name: "not_ready", Message: "httpapi: not ready: no leader known"})
			return
		}
		_, _ = w.Write([]byte(`{"status":"ready"}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestClusterPage(t *testing.T) {
	fc := &fakeCluster{}
	v := newEnv(t, envOptions{cluster: fc, token: "tok"})
	var tokens sync.Map
	n2 := fakeMember(t, engine.ClusterStatus{ID: "n2", State: "Follower", Term: 7, LeaderID: "n1", CommitIndex: 40, AppliedIndex: 39}, true, &tokens)
	n3 := fakeMember(t, engine.ClusterStatus{ID: "n3", State: "Candidate", Term: 8}, false, &tokens)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	self := strings.TrimPrefix(v.srv.URL, "http://")
	fc.status = engine.ClusterStatus{ID: "n1", State: "Leader", Term: 7, LeaderID: "n1", LeaderHTTP: self, CommitIndex: 42, AppliedIndex: 41, LastIndex: 42,
		Members: []engine.ClusterMember{
			{ID: "n1", RaftAddr: "127.0.0.1:9001", HTTPAddr: self, Voter: true, Leader: true},
			{ID: "n2", RaftAddr: "127.0.0.1:9002", HTTPAddr: n2, Voter: true},
			{ID: "n3", RaftAddr: "127.0.0.1:9003", HTTPAddr: n3, Voter: true},
			{ID: "n4", RaftAddr: "127.0.0.1:9004", HTTPAddr: down, Voter: false},
			{ID: "n5", RaftAddr: "127.0.0.1:9005"},
		}}
	csrf := v.csrf("/ui/signin")
	if code, _, _ := v.post("/ui/signin", map[string][]string{"token": {"tok"}, csrfField: {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("sign-in: HTTP %d", code)
	}
	code, body, _ := v.get("/ui/cluster")
	if code != http.StatusOK {
		t.Fatalf("cluster page: HTTP %d\n%s", code, body)
	}
	member := func(id string) string {
		_, rest, ok := strings.Cut(body, `<tr data-member="`+id+`">`)
		if !ok {
			t.Fatalf("no row of member %s", id)
		}
		row, _, _ := strings.Cut(rest, "</tr>")
		return row
	}
	wantIn(t, "the summary", body, `<dd id="node-id">n1 (Leader)</dd>`, `<dd id="leader">n1 at `+self+`</dd>`, `<dd id="term">7</dd>`, `<dd id="applied">41</dd>`)
	wantIn(t, "this node's row", member("n1"), "this node", ">Leader<", `<td class="num">7</td><td class="num">42</td><td class="num">41</td>`, ">ready<")
	wantIn(t, "a ready follower's row", member("n2"), ">Follower<", `<td class="num">7</td><td class="num">40</td><td class="num">39</td>`, ">ready<", n2)
	wantIn(t, "a member that is not ready", member("n3"), ">Candidate<", ">not ready<", "no leader known")
	wantIn(t, "a member that is down", member("n4"), "unreachable", ">not ready<", "<td>no</td>")
	wantIn(t, "a member with no HTTP address", member("n5"), "no HTTP address known")
	// The person's token stays on this node: the members are asked as
	// this node, which has no token of its own here.
	for _, id := range []string{"n2", "n3"} {
		if tok, ok := tokens.Load(id); !ok || tok != "" {
			t.Errorf("%s was asked with Authorization %q (asked: %v)", id, tok, ok)
		}
	}
}

// tlsMember answers a member's /v1/cluster over TLS to a node of the
// cluster only (its verified certificate names it), and its /readyz to
// anyone, recording the Authorization header and the node it was asked by.
func tlsMember(t *testing.T, st engine.ClusterStatus, cert tls.Certificate, roots *x509.CertPool, seen *sync.Map) string {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/cluster", func(w http.ResponseWriter, r *http.Request) {
		node, err := pki.VerifyNode(r.TLS.PeerCertificates, roots)
		seen.Store(st.ID, [2]string{r.Header.Get("Authorization"), node})
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(httpapi.ErrorBody{Name: "unauthorized", Message: "httpapi: unauthorized: no node certificate"})
			return
		}
		_ = json.NewEncoder(w).Encode(st)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"status":"ready"}`)) })
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = pki.ServerTLS(cert, roots)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "https://")
}

// issue makes the certificate of node id, for 127.0.0.1.
func issue(t *testing.T, ca *pki.CA, id string) tls.Certificate {
	t.Helper()
	is, err := ca.NodeCert(id, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(is.CertPEM, is.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// On a cluster whose nodes serve TLS, the page asks the other members over
// HTTPS, as this node (its certificate), and never with the person's
// token. Before, it asked over http:// with the person's token: the token
// crossed the network in the clear, and the members, which speak TLS,
// answered 400, so the page showed them not ready.
func TestClusterPageOverTLS(t *testing.T) {
	ca, err := pki.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	var seen sync.Map
	n2 := tlsMember(t, engine.ClusterStatus{ID: "n2", State: "Follower", Term: 3, LeaderID: "n1"}, issue(t, ca, "n2"), roots, &seen)
	n3 := tlsMember(t, engine.ClusterStatus{ID: "n3", State: "Follower", Term: 3, LeaderID: "n1"}, issue(t, ca, "n3"), roots, &seen)
	self := issue(t, ca, "n1")
	fc := &fakeCluster{}
	v := newEnv(t, envOptions{cluster: fc, token: "person-token", configure: func(c *Config) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = pki.ClientTLS(roots, &self)
		c.ProbeClient, c.ProbeScheme = &http.Client{Transport: tr}, "https"
	}})
	fc.status = engine.ClusterStatus{ID: "n1", State: "Leader", Term: 3, LeaderID: "n1", Members: []engine.ClusterMember{
		{ID: "n1", HTTPAddr: strings.TrimPrefix(v.srv.URL, "http://"), Voter: true, Leader: true},
		{ID: "n2", HTTPAddr: n2, Voter: true}, {ID: "n3", HTTPAddr: n3, Voter: true}}}
	v.signIn("person-token")
	code, body, _ := v.get("/ui/cluster")
	if code != http.StatusOK {
		t.Fatalf("cluster page: HTTP %d\n%s", code, body)
	}
	for _, id := range []string{"n2", "n3"} {
		_, rest, _ := strings.Cut(body, `<tr data-member="`+id+`">`)
		row, _, _ := strings.Cut(rest, "</tr>")
		wantIn(t, id+"'s row", row, ">Follower<", ">ready<")
		got, _ := seen.Load(id)
		if asked, _ := got.([2]string); asked[0] != "" || asked[1] != "n1" {
			t.Errorf("%s was asked with Authorization %q by node %q, want none, by n1", id, asked[0], asked[1])
		}
	}
}
