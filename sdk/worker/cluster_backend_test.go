package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/raftfsm"
)

// overCluster reports whether the suite runs against a three-node Raft
// cluster (HEDDLE_SDK_BACKEND=cluster): open(t) then starts one on loopback
// with real directories, returns its leader's engine for the tests' direct
// reads, and workers and clients reach it through httpapi.Client with all
// three nodes' addresses, as a remote worker process would.
func overCluster() bool { return os.Getenv(backendEnv) == "cluster" }

// openCluster starts the cluster and registers its client as e's remote.
func openCluster(t testing.TB) *embedded.Engine {
	t.Helper()
	root := t.TempDir()
	var nodes []*raftfsm.Node
	var servers []*httptest.Server
	var apis []*httpapi.Server
	var addrs []string
	t.Cleanup(func() {
		for _, s := range apis {
			s.Close()
		}
		for _, hs := range servers {
			hs.CloseClientConnections()
			hs.Close()
		}
		for _, n := range nodes {
			closeOK(t, n)
		}
	})
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("n%d", i)
		hs := httptest.NewUnstartedServer(nil) // its listener is on 127.0.0.1
		n, err := raftfsm.Open(raftfsm.Config{ID: id, Dir: filepath.Join(root, id), RaftAddr: "127.0.0.1:0",
			HTTPAddr: hs.Listener.Addr().String(), Bootstrap: i == 1,
			HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond,
			LeaderLeaseTimeout: 150 * time.Millisecond, FailoverGrace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		api, err := httpapi.NewServer(httpapi.ServerConfig{Service: n.Engine(), Cluster: n})
		if err != nil {
			t.Fatal(err)
		}
		apis = append(apis, api)
		hs.Config.Handler = api
		hs.Start()
		servers = append(servers, hs)
		addrs = append(addrs, hs.URL)
		if i == 1 {
			waitLeader(t, n)
			continue
		}
		joinCluster(t, nodes, id, n.RaftAddr(), hs.Listener.Addr().String())
	}
	c, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	e := nodes[0].Engine()
	remotes.Lock()
	remotes.m[e] = c
	remotes.Unlock()
	t.Cleanup(func() {
		remotes.Lock()
		delete(remotes.m, e)
		remotes.Unlock()
	})
	return e
}

// joinCluster adds a node through whichever of nodes leads. Join is
// idempotent, so it is retried while leadership moves: on a loaded machine
// the short election timeouts can depose the first leader between joins.
func joinCluster(t testing.TB, nodes []*raftfsm.Node, id, raftAddr, httpAddr string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, n := range nodes {
			if !n.IsLeader() {
				continue
			}
			if err = n.Join(context.Background(), id, raftAddr, httpAddr); err == nil {
				return
			}
			if !errors.Is(err, engine.ErrNotLeader) && !errors.Is(err, engine.ErrUnknownOutcome) {
				t.Fatalf("join %s: %v", id, err)
			}
		}
	}
	t.Fatalf("join %s: no leader took it within 30s (last error: %v)", id, err)
}

// waitLeader waits until n leads and serves linearizable reads.
func waitLeader(t testing.TB, n *raftfsm.Node) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := n.Engine().List(context.Background(), engine.ListQuery{Limit: 1}); err == nil {
			return
		}
	}
	t.Fatal("the bootstrap node never became a serving leader")
}
