package ui

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
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
	for _, id := range []string{"n2", "n3"} {
		if tok, _ := tokens.Load(id); tok != "Bearer tok" {
			t.Errorf("%s was asked with Authorization %q", id, tok)
		}
	}
}
