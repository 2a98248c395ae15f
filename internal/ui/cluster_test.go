package ui

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"html"
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
	wantNotIn(t, "the page of a cluster of one Raft group", body, `id="shards"`, "Shards</h2>")
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

// shardRow returns the row of shard k on a cluster page, or fails.
func shardRow(t *testing.T, body string, k int) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, fmt.Sprintf(`<tr data-shard="%d">`, k))
	if !ok {
		t.Fatalf("no row of shard %d", k)
	}
	row, _, _ := strings.Cut(rest, "</tr>")
	return row
}

// On a sharded cluster the page shows, beside the metadata group's
// members, one row per shard, gathered from the members' own answers (as
// "heddle cluster status" prints them): the leader, the desired leader
// (marked when they differ), the term, the leader's commit index and each
// replica's lag, "?" for a replica whose member did not answer. The
// members are still asked as this node, never with the person's token.
func TestClusterPageShards(t *testing.T) {
	fc := &fakeCluster{}
	v := newEnv(t, envOptions{cluster: fc, token: "tok"})
	replicas := []string{"n1", "n2", "n3"}
	var tokens sync.Map
	n2 := fakeMember(t, engine.ClusterStatus{ID: "n2", State: "Follower", Term: 2, LeaderID: "n1", ShardCount: 4, Shards: []engine.ShardStatus{
		{Shard: 0, State: "Follower", Term: 3, LeaderID: "n1", CommitIndex: 10, AppliedIndex: 8, Replicas: replicas, DesiredLeader: "n1"},
		{Shard: 1, State: "Follower", Term: 5, LeaderID: "n1", CommitIndex: 5, AppliedIndex: 5, Replicas: replicas, DesiredLeader: "n2"},
		{Shard: 2, State: "Follower", Term: 4, LeaderID: "n3", CommitIndex: 7, AppliedIndex: 6, Replicas: replicas, DesiredLeader: "n3",
			MoveFrom: "n2", MoveTo: "n4", MoveCancelling: true},
	}}, true, &tokens)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	self := strings.TrimPrefix(v.srv.URL, "http://")
	fc.status = engine.ClusterStatus{ID: "n1", State: "Leader", Term: 2, LeaderID: "n1", ShardCount: 4,
		Members: []engine.ClusterMember{
			{ID: "n1", HTTPAddr: self, Voter: true, Leader: true},
			{ID: "n2", HTTPAddr: n2, Voter: true},
			{ID: "n3", HTTPAddr: down, Voter: true},
		},
		Shards: []engine.ShardStatus{
			{Shard: 0, State: "Leader", Term: 3, LeaderID: "n1", CommitIndex: 10, AppliedIndex: 10, Replicas: replicas, DesiredLeader: "n1"},
			{Shard: 1, State: "Leader", Term: 5, LeaderID: "n1", CommitIndex: 6, AppliedIndex: 5, Replicas: replicas, DesiredLeader: "n2",
				MoveFrom: "n1", MoveTo: "n4"},
			{Shard: 2, State: "Follower", Term: 4, LeaderID: "n3", CommitIndex: 7, AppliedIndex: 7, Replicas: replicas, DesiredLeader: "n3",
				MoveFrom: "n2", MoveTo: "n4", MoveCancelling: true},
		}}
	v.signIn("tok")
	code, body, _ := v.get("/ui/cluster")
	if code != http.StatusOK {
		t.Fatalf("cluster page: HTTP %d\n%s", code, body)
	}
	wantIn(t, "the page of a sharded cluster", body, `<section class="panel" id="shards">`, `<p id="shards-count">4 shards.</p>`, `<tr data-member="n2">`)
	wantIn(t, "shard 0, led where the placement wants", shardRow(t, body, 0), `<td class="leader">n1</td>`, `<td class="desired">n1</td>`,
		`<td class="num">3</td><td class="num">10</td>`, `>n1:0</span> <span class="replica" data-replica="n2">n2:2</span> <span class="replica" data-replica="n3">n3:?</span>`)
	wantIn(t, "shard 1, led elsewhere than the placement wants", shardRow(t, body, 1), `<td class="leader">n1</td>`, `<td class="desired">n2 <span class="badge st-queued"`,
		"not the leader", `<td class="num">5</td><td class="num">6</td>`, ">n1:0<", ">n2:0<", ">n3:?<")
	wantIn(t, "shard 2, whose leader did not answer", shardRow(t, body, 2), `<td class="leader">n3</td>`, `<td class="desired">n3</td>`,
		`<td class="num">4</td><td class="num">7</td>`, ">n1:0<", ">n2:1<", ">n3:?<")
	wantNotIn(t, "shard 0's desired leader", shardRow(t, body, 0), "not the leader")
	wantIn(t, "shard 1, moving a replica", shardRow(t, body, 1), "moving n1 to n4</span>")
	wantIn(t, "shard 2, cancelling a move", shardRow(t, body, 2), "cancelling the move of n2 to n4</span>")
	wantNotIn(t, "shard 0, moving nothing", shardRow(t, body, 0), "moving", "cancelling")
	wantIn(t, "shard 3, whose replicas did not answer", shardRow(t, body, 3), "no replica answered")
	wantNotIn(t, "a page of four shards", body, `id="next-shards"`, `id="prev-shards"`)
	if tok, ok := tokens.Load("n2"); !ok || tok != "" {
		t.Errorf("n2 was asked with Authorization %q (asked: %v)", tok, ok)
	}
}

// A cluster of many shards shows them a page at a time: the page's rows
// are bounded whatever the shard count.
func TestClusterPageShardsPaged(t *testing.T) {
	const count = 600
	fc := &fakeCluster{}
	v := newEnv(t, envOptions{cluster: fc})
	st := engine.ClusterStatus{ID: "n1", State: "Leader", Term: 1, LeaderID: "n1", ShardCount: count,
		Members: []engine.ClusterMember{{ID: "n1", HTTPAddr: strings.TrimPrefix(v.srv.URL, "http://"), Voter: true, Leader: true}}}
	for k := range count {
		st.Shards = append(st.Shards, engine.ShardStatus{Shard: k, State: "Leader", Term: 1, LeaderID: "n1", CommitIndex: uint64(k), AppliedIndex: uint64(k),
			Replicas: []string{"n1"}, DesiredLeader: "n1"})
	}
	fc.status = st
	for _, c := range []struct {
		query       string
		first, last int
		prev, next  string
	}{
		{"", 0, 255, "", "/ui/cluster?shards=256#shards"},
		{"?shards=300", 256, 511, "/ui/cluster?shards=0#shards", "/ui/cluster?shards=512#shards"},
		{"?shards=512", 512, 599, "/ui/cluster?shards=256#shards", ""},
		{"?shards=9999", 0, 255, "", "/ui/cluster?shards=256#shards"},
		{"?shards=x", 0, 255, "", "/ui/cluster?shards=256#shards"},
	} {
		code, body, _ := v.get("/ui/cluster" + c.query)
		if code != http.StatusOK {
			t.Fatalf("%s: HTTP %d", c.query, code)
		}
		if rows := strings.Count(body, "<tr data-shard="); rows != c.last-c.first+1 {
			t.Errorf("%s: %d rows, want %d", c.query, rows, c.last-c.first+1)
		}
		wantIn(t, c.query, body, fmt.Sprintf("%d shards; shards %d–%d shown.", count, c.first, c.last), fmt.Sprintf(`<tr data-shard="%d">`, c.first),
			fmt.Sprintf(`<tr data-shard="%d">`, c.last))
		for id, link := range map[string]string{"prev-shards": c.prev, "next-shards": c.next} {
			if link == "" {
				wantNotIn(t, c.query, body, `id="`+id+`"`)
			} else {
				wantIn(t, c.query, body, `<a href="`+html.EscapeString(link)+`"`)
			}
		}
	}
}
