package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// shardPageRow is one shard's row of the web console's cluster page.
type shardPageRow struct {
	leader, desired string
	moved           bool
	// replicas are the row's replicas, each "id:lag".
	replicas []string
}

var (
	shardRowRE     = regexp.MustCompile(`(?s)<tr data-shard="(\d+)">(.*?)</tr>`)
	shardLeaderRE  = regexp.MustCompile(`<td class="leader">([^<]*)</td>`)
	shardDesiredRE = regexp.MustCompile(`<td class="desired">([^< ]*)`)
	shardReplicaRE = regexp.MustCompile(`<span class="replica" data-replica="[^"]*">([^<]*)</span>`)
)

// clusterPage fetches the cluster page of the node at addr and returns its
// shards' rows, by shard, and the page.
func clusterPage(t *testing.T, addr string) (map[int]shardPageRow, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/ui/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("cluster page: HTTP %d, %v\n%s", resp.StatusCode, err, b)
	}
	body := string(b)
	rows := map[int]shardPageRow{}
	for _, m := range shardRowRE.FindAllStringSubmatch(body, -1) {
		var k int
		if _, err := fmt.Sscan(m[1], &k); err != nil {
			t.Fatal(err)
		}
		r := shardPageRow{moved: strings.Contains(m[2], "not the leader")}
		if l := shardLeaderRE.FindStringSubmatch(m[2]); l != nil {
			r.leader = l[1]
		}
		if d := shardDesiredRE.FindStringSubmatch(m[2]); d != nil {
			r.desired = d[1]
		}
		for _, rep := range shardReplicaRE.FindAllStringSubmatch(m[2], -1) {
			r.replicas = append(r.replicas, rep[1])
		}
		rows[k] = r
	}
	return rows, body
}

// The web console's cluster page of a node of a sharded cluster shows, as
// "heddle cluster status" does, one row per shard with its leader, the
// leader the placement wants, and its replicas with their lag; once a node
// is down, its replicas show "?" and the shards it was to lead show the
// node that leads them instead, marked.
func TestShardedClusterPage(t *testing.T) {
	const shards = 4
	c := newShardedTestCluster(t, shards)
	nodes := c.nodes
	want := []string{"n1", "n2", "n3", "n1"}
	awaitHosts(t, nodes, "the spread leaders", func() bool {
		if !reflect.DeepEqual(shardLeaders(nodes, shards), want) {
			return false
		}
		for _, n := range nodes {
			if n.host.Ready(context.Background()) != nil {
				return false
			}
		}
		return true
	})
	pl := nodes[0].host.Placement()
	rows, body := clusterPage(t, nodes[0].api.addr())
	if !strings.Contains(body, `<p id="shards-count">4 shards.</p>`) || len(rows) != shards {
		t.Fatalf("the page shows %d shards' rows, want %d:\n%s", len(rows), shards, body)
	}
	for k := range shards {
		r, g := rows[k], pl.Groups[k]
		if r.leader != want[k] || r.desired != g.Leader || r.moved || len(r.replicas) != len(g.Replicas) {
			t.Fatalf("shard %d: the page shows %+v; want leader %s, desired %s, replicas %v", k, r, want[k], g.Leader, g.Replicas)
		}
		for i, id := range g.Replicas {
			if !strings.HasPrefix(r.replicas[i], id+":") || strings.HasSuffix(r.replicas[i], ":?") {
				t.Fatalf("shard %d: replica %d shown as %q, want %s and its lag", k, i, r.replicas[i], id)
			}
		}
	}

	c.kill(2) // n3
	live := c.live()
	awaitHosts(t, live, "a new leader of shard 2", func() bool { return shardLeaders(live, shards)[2] != "" })
	leader2 := shardLeaders(live, shards)[2]
	rows, body = clusterPage(t, nodes[0].api.addr())
	if len(rows) != shards {
		t.Fatalf("with n3 down, the page shows %d shards' rows, want %d:\n%s", len(rows), shards, body)
	}
	for k := range shards {
		r := rows[k]
		if k == 2 && (r.leader != leader2 || r.desired != "n3" || !r.moved) {
			t.Fatalf("shard 2: the page shows %+v; want leader %s, desired n3, marked", r, leader2)
		}
		if !strings.Contains(strings.Join(r.replicas, " "), "n3:?") {
			t.Fatalf("shard %d: the page shows replicas %v, want n3:?", k, r.replicas)
		}
	}
}
