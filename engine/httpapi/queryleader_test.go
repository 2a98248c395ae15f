package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/raftfsm"
)

// queryCluster is three raftfsm nodes, each serving the HTTP API, for the
// query broker's behaviour when the leadership moves. Every long poll may
// wait an hour: a poll that is not ended when the leadership moves outlives
// the test's own deadline.
type queryCluster struct {
	t      *testing.T
	ids    []string
	nodes  map[string]*raftfsm.Node
	url    map[string]string // id -> base URL
	parked map[string]chan parkEvent
}

// parkEvent is a query (poll false) or a worker's poll starting to wait
// in the broker of one node.
type parkEvent struct {
	queue string
	poll  bool
}

func newQueryCluster(t *testing.T) *queryCluster {
	c := &queryCluster{t: t, ids: []string{"n1", "n2", "n3"}, nodes: map[string]*raftfsm.Node{},
		url: map[string]string{}, parked: map[string]chan parkEvent{}}
	root := t.TempDir()
	for i, id := range c.ids {
		hs := httptest.NewUnstartedServer(nil)
		n, err := raftfsm.Open(raftfsm.Config{ID: id, Dir: filepath.Join(root, id), RaftAddr: "127.0.0.1:0",
			HTTPAddr: hs.Listener.Addr().String(), Bootstrap: i == 0, DisableScheduler: true,
			HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond, LeaderLeaseTimeout: 150 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewServer(ServerConfig{Service: n.Engine(), Cluster: n, MaxWait: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		events := make(chan parkEvent, 256)
		s.broker.parked = func(queue string, poll bool) {
			select {
			case events <- parkEvent{queue, poll}:
			default: // nobody looks at this node's events any more
			}
		}
		hs.Config.Handler = s
		hs.Start()
		t.Cleanup(func() {
			s.Close()
			hs.CloseClientConnections()
			hs.Close()
			if err := n.Close(); err != nil {
				t.Errorf("closing %s: %v", id, err)
			}
		})
		c.nodes[id], c.url[id], c.parked[id] = n, hs.URL, events
		if i == 0 {
			c.eventually("n1 leading", func() bool { return n.IsLeader() })
			continue
		}
		c.eventually("joining "+id, func() bool {
			l := c.leader()
			return l != nil && l.Join(context.Background(), id, n.RaftAddr(), hostOf(hs.URL)) == nil
		})
	}
	// Every node knows the leader and every member's HTTP address, so a
	// node that stops leading can name its successor's.
	c.eventually("every node knowing every member's address", func() bool {
		for _, n := range c.nodes {
			st, err := n.Status(context.Background())
			if err != nil || st.LeaderHTTP == "" || len(st.Members) != len(c.ids) {
				return false
			}
			for _, m := range st.Members {
				if m.HTTPAddr != hostOf(c.url[m.ID]) {
					return false
				}
			}
		}
		return true
	})
	return c
}

// eventually waits for cond, failing after a generous bound (a liveness
// bound for a cluster that does not form, not a speed assertion).
func (c *queryCluster) eventually(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leader returns the node that leads now, or nil.
func (c *queryCluster) leader() *raftfsm.Node {
	for _, id := range c.ids {
		if n := c.nodes[id]; n != nil && n.IsLeader() {
			return n
		}
	}
	return nil
}

// waitParked waits until a query (poll false) or a poll of queue starts
// to wait on node id.
func (c *queryCluster) waitParked(ctx context.Context, id, queue string, poll bool) {
	c.t.Helper()
	for {
		select {
		case e := <-c.parked[id]:
			if e.queue == queue && e.poll == poll {
				return
			}
		case <-ctx.Done():
			c.t.Fatalf("no %v of queue %q waited on %s", map[bool]string{true: "poll", false: "query"}[poll], queue, id)
		}
	}
}

// transfer moves the leadership away from the leader and returns the old
// leader's id and the new one's.
func (c *queryCluster) transfer(ctx context.Context) (from, to string) {
	c.t.Helper()
	l := c.leader()
	if l == nil {
		c.t.Fatal("no leader")
	}
	if err := l.TransferLeader(ctx); err != nil {
		c.t.Fatal(err)
	}
	c.eventually("another leader", func() bool {
		n := c.leader()
		if n != nil && n != l {
			to = n.ID()
		}
		return to != ""
	})
	return l.ID(), to
}

// rawAnswer is what one request sent by sendRaw got.
type rawAnswer struct {
	status int
	body   ErrorBody
	err    error
}

// sendRaw posts v as JSON to url in the background. It marks the request
// as forwarded already, so the node answers it itself (a not-leader error
// included) rather than forwarding it: the test sees what the node says.
func sendRaw(ctx context.Context, url string, v any) <-chan rawAnswer {
	out := make(chan rawAnswer, 1)
	go func() {
		var a rawAnswer
		defer func() { out <- a }()
		b, err := json.Marshal(v)
		if err != nil {
			a.err = err
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			a.err = err
			return
		}
		req.Header.Set("Content-Type", contentJSON)
		req.Header.Set(forwardedHeader, "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			a.err = err
			return
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		a.status, a.err = resp.StatusCode, err
		if err == nil && resp.StatusCode != http.StatusOK {
			a.err = json.Unmarshal(body, &a.body)
		}
	}()
	return out
}

// A query and a worker's poll parked on the leader end as soon as another
// node leads, with a not-leader answer naming it, instead of waiting out
// their hour on a node where nothing will meet them again (in a soak, the
// first query to each run after a leader change took 29.5 s).
func TestParkedQueriesAndPollsEndWhenLeadershipMoves(t *testing.T) {
	c := newQueryCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := c.leader()
	if _, err := l.Engine().Create(ctx, engine.CreateJob{WorkflowID: "qwf", Type: "T", Queue: "qq"}); err != nil {
		t.Fatal(err)
	}
	// No worker polls queue qq, and nobody asks anything of queue pq.
	query := sendRaw(ctx, c.url[l.ID()]+"/v1/query?wait=1h", QueryRequest{WorkflowID: "qwf", QueryType: "sum"})
	c.waitParked(ctx, l.ID(), "qq", false)
	poll := sendRaw(ctx, c.url[l.ID()]+"/v1/query/poll?wait=1h", QueryPoll{Queue: "pq"})
	c.waitParked(ctx, l.ID(), "pq", true)

	from, to := c.transfer(ctx)
	for what, ch := range map[string]<-chan rawAnswer{"query": query, "poll": poll} {
		a := <-ch
		if a.err != nil {
			t.Fatalf("the %s parked on %s did not end when %s became the leader: %v", what, from, to, a.err)
		}
		if a.status != http.StatusServiceUnavailable || a.body.Name != "not_leader" ||
			a.body.LeaderID != to || a.body.LeaderHTTP != hostOf(c.url[to]) {
			t.Fatalf("the %s parked on %s answered %d %+v, want 503 not_leader naming %s at %s",
				what, from, a.status, a.body, to, hostOf(c.url[to]))
		}
	}
}

// The soak's case from end to end: a worker serving queries through one
// node, a query before a leader transfer and one after it. The worker's
// poll parked on the old leader is sent on to the new one, where the
// second query waits, so that query is answered without waiting for the
// poll's hour.
func TestQueryAfterLeaderTransferIsAnswered(t *testing.T) {
	c := newQueryCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := c.leader()
	if _, err := l.Engine().Create(ctx, engine.CreateJob{WorkflowID: "qwf", Type: "T", Queue: "qq"}); err != nil {
		t.Fatal(err)
	}
	worker := newClient(t, ClientConfig{Addrs: []string{c.url[l.ID()]}, PollWait: time.Hour})
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- worker.ServeQueries(sctx, "qq", (&fakeQuerier{}).answer) }()
	defer func() {
		stop()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serving queries: %v", err)
		}
	}()
	c.waitParked(ctx, l.ID(), "qq", true)

	asker := newClient(t, ClientConfig{Addrs: []string{c.url[l.ID()]}, PollWait: time.Hour})
	sum := func(a, b int) {
		t.Helper()
		v, err := asker.Query(ctx, "qwf", "", "sum", []byte(fmt.Sprintf("[%d,%d]", a, b)))
		if err != nil {
			t.Fatalf("query %d+%d: %v", a, b, err)
		}
		if want := fmt.Sprintf("[%d]", a+b); string(v) != want {
			t.Fatalf("query %d+%d = %s, want %s", a, b, v, want)
		}
	}
	sum(1, 2)
	// The worker polls the leader again; then the leadership moves.
	c.waitParked(ctx, l.ID(), "qq", true)
	from, to := c.transfer(ctx)
	t.Logf("leadership moved from %s to %s", from, to)
	sum(20, 22)
}
