package ui

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heddlewf/heddle/engine/httpapi"
	lb "github.com/heddlewf/heddle/internal/loopback"
	"github.com/heddlewf/heddle/raftfsm"
)

// TestBrowserShardedCluster shows the cluster page of a sharded cluster of
// three nodes and four shards, each node serving its API (routed by shard)
// and the UI on loopback: beside the metadata group's members, a Shards
// table with each shard's leader, desired leader and replicas.
func TestBrowserShardedCluster(t *testing.T) {
	ctx := browser(t)
	const shards = 4
	root := t.TempDir()
	var peers []raftfsm.PlacementNode
	var lns []net.Listener
	for i := 1; i <= 3; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		raftAddr, err := lb.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, raftfsm.PlacementNode{ID: fmt.Sprintf("n%d", i), RaftAddr: raftAddr, HTTPAddr: ln.Addr().String()})
	}
	var hosts []*raftfsm.Host
	for i, p := range peers {
		h, err := raftfsm.OpenHost(raftfsm.HostConfig{Config: raftfsm.Config{ID: p.ID, Dir: filepath.Join(root, p.ID), RaftAddr: p.RaftAddr,
			HTTPAddr: p.HTTPAddr, FailoverGrace: time.Second}, Peers: peers, Shards: shards})
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
		api, err := httpapi.NewServer(httpapi.ServerConfig{Service: httpapi.NewShardRouter(h), Cluster: h})
		if err != nil {
			t.Fatal(err)
		}
		u, err := New(Config{API: api})
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: mount(u, api), ReadHeaderTimeout: 5 * time.Second}
		ln := lns[i]
		go func() { _ = srv.Serve(ln) }() // ends with Close below
		t.Cleanup(func() {
			api.Close()
			if err := srv.Close(); err != nil {
				t.Error(err)
			}
			if err := h.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	// The placement spreads the leaders: shard k's desired leader is
	// node k mod 3. Wait, on the hosts' events, until each leads its
	// shards and is ready.
	want := []string{"n1", "n2", "n3", "n1"}
	leaders := func() []string {
		out := make([]string, shards)
		for _, h := range hosts {
			for k := range shards {
				if h.LeadsShard(k) {
					out[k] = h.ID()
				}
			}
		}
		return out
	}
	deadline := time.After(60 * time.Second)
	for {
		ready := reflect.DeepEqual(leaders(), want)
		for _, h := range hosts {
			ready = ready && h.Ready(context.Background()) == nil
		}
		if ready {
			break
		}
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline)}}
		for _, h := range hosts {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(h.ShardsChanged())},
				reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(h.LeaderChanged())})
		}
		if i, _, _ := reflect.Select(cases); i == 0 {
			t.Fatalf("the shards' leaders are %v, want %v", leaders(), want)
		}
	}
	pl := hosts[0].Placement()
	run(t, ctx, "open the cluster page of n2", chromedp.Navigate("http://"+peers[1].HTTPAddr+"/ui/cluster"),
		chromedp.WaitVisible("#members", chromedp.ByQuery), chromedp.WaitVisible("#shards-table", chromedp.ByQuery))
	if s := text(t, ctx, "#shards-count"); s != "4 shards." {
		t.Errorf("the shards' count says %q", s)
	}
	for k := range shards {
		row := text(t, ctx, fmt.Sprintf(`#shards-table tr[data-shard="%d"]`, k))
		f := strings.Fields(row)
		if len(f) < 5 || f[0] != fmt.Sprint(k) || f[1] != want[k] || f[2] != pl.Groups[k].Leader {
			t.Errorf("shard %d's row is %q, want leader and desired leader %s", k, row, want[k])
		}
		for _, id := range pl.Groups[k].Replicas {
			if !strings.Contains(row, id+":") || strings.Contains(row, id+":?") {
				t.Errorf("shard %d's row %q does not show replica %s with its lag", k, row, id)
			}
		}
	}
	shoot(t, ctx, "ui-cluster-shards")
}
